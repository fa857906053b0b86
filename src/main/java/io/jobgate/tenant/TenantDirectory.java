package io.jobgate.tenant;

import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import io.jobgate.common.StartRefused;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The tenants from the tenants files, mirrored into the database at start (limits, hashed keys,
 * credit grants once per reference), the bearer-key check of the HTTP door, and the broker users
 * of the JMS door ({@code jms_producers}), each submitting for exactly one tenant.
 */
public final class TenantDirectory {

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    /**
     * A broker user that submits to {@code jobs.intake} for one tenant. The password digest is
     * what the embedded broker checks; a standalone broker checks its own user store (it may be
     * null then).
     */
    public record BrokerProducer(String user, String passwordSha256, String tenantId) {
    }

    private final Map<String, Tenant> byKeyDigest;
    private final Map<String, Tenant> byId;
    private final Map<String, BrokerProducer> producersByUser;

    public TenantDirectory(List<Tenant> tenants, List<BrokerProducer> producers) {
        Map<String, Tenant> keys = new LinkedHashMap<>();
        Map<String, Tenant> ids = new LinkedHashMap<>();
        for (Tenant tenant : tenants) {
            if (ids.put(tenant.id(), tenant) != null) {
                throw new IllegalStateException("tenant " + tenant.id() + " is configured twice");
            }
            if (keys.put(tenant.apiKeySha256(), tenant) != null) {
                throw new IllegalStateException("tenant " + tenant.id() + " shares its API key with another tenant");
            }
        }
        this.byKeyDigest = Map.copyOf(keys);
        this.byId = Map.copyOf(ids);
        Map<String, BrokerProducer> users = new LinkedHashMap<>();
        for (BrokerProducer producer : producers) {
            BrokerProducer other = users.put(producer.user(), producer);
            if (other != null) {
                // One broker user, one tenant: the tenant of a message is its sender's.
                throw new IllegalStateException("JMS producer user '" + producer.user() + "' is configured for tenants "
                        + other.tenantId() + " and " + producer.tenantId() + "; a user submits for one tenant only");
            }
        }
        this.producersByUser = Map.copyOf(users);
    }

    public static TenantDirectory load(List<Path> files) throws IOException {
        List<Tenant> tenants = new java.util.ArrayList<>();
        List<BrokerProducer> producers = new java.util.ArrayList<>();
        for (Path file : files) {
            JsonNode root = YAML.readTree(file.toFile());
            for (JsonNode node : root.path("tenants")) {
                Tenant tenant = parse(node, file);
                tenants.add(tenant);
                for (JsonNode producer : node.path("jms_producers")) {
                    producers.add(parseProducer(producer, tenant.id(), file));
                }
            }
        }
        if (tenants.isEmpty()) {
            throw new IllegalStateException("no tenants configured in " + files);
        }
        return new TenantDirectory(tenants, producers);
    }

    private static BrokerProducer parseProducer(JsonNode node, String tenantId, Path file) {
        String user = node.path("user").asText("");
        if (!user.matches("[A-Za-z0-9][A-Za-z0-9._-]{0,99}")) {
            throw new IllegalStateException("tenant " + tenantId + " in " + file
                    + ": a jms_producers entry needs a user of letters, digits, dots, dashes and underscores");
        }
        String digest = node.path("password_sha256").asText("").toLowerCase();
        if (!digest.isEmpty() && !digest.matches("[0-9a-f]{64}")) {
            throw new IllegalStateException("tenant " + tenantId + " in " + file + ": password_sha256 of JMS producer "
                    + user + " must be 64 hex digits");
        }
        return new BrokerProducer(user, digest.isEmpty() ? null : digest, tenantId);
    }

    private static Tenant parse(JsonNode node, Path file) {
        String id = text(node, "id", file);
        if (!id.matches("[a-z0-9][a-z0-9-]{0,62}")) {
            throw new IllegalStateException("tenant id '" + id + "' in " + file + " must be lower-case letters, digits and dashes");
        }
        String digest = text(node, "api_key_sha256", file).toLowerCase();
        if (!digest.matches("[0-9a-f]{64}")) {
            throw new IllegalStateException("tenant " + id + " in " + file + ": api_key_sha256 must be 64 hex digits");
        }
        Map<String, Long> grants = new LinkedHashMap<>();
        node.path("credit_grants").fields().forEachRemaining(e -> grants.put(e.getKey(), e.getValue().asLong()));
        return new Tenant(id, node.path("display_name").asText(id), digest,
                positive(node, "max_open_jobs", 100, file), positive(node, "max_running_jobs", 4, file),
                node.path("max_queued_bytes").asLong(256L * 1024 * 1024), Map.copyOf(grants), rules(node, id, file));
    }

    /**
     * The tenant's {@code providers: {allow: [..], deny: [..]}} and {@code failover: true|false} (default true). The
     * names are checked against the providers and pools at start, where those are known (pool/TenantPoolRules).
     */
    private static ProviderRules rules(JsonNode node, String id, Path file) {
        JsonNode providers = node.path("providers");
        java.util.Iterator<String> keys = providers.fieldNames();
        while (keys.hasNext()) {
            String key = keys.next();
            if (!key.equals("allow") && !key.equals("deny")) {
                throw new StartRefused("tenant " + id + " in " + file + ": providers has allow and deny, not '" + key + "'");
            }
        }
        JsonNode failover = node.path("failover");
        if (!failover.isMissingNode() && !failover.isBoolean()) {
            throw new StartRefused("tenant " + id + " in " + file + ": failover must be true or false, was '" + failover.asText() + "'");
        }
        return new ProviderRules(names(providers.path("allow"), id, "allow", file), names(providers.path("deny"), id, "deny", file),
                failover.asBoolean(true));
    }

    private static java.util.Set<String> names(JsonNode list, String id, String which, Path file) {
        if (list.isMissingNode() || list.isNull()) {
            return java.util.Set.of();
        }
        if (!list.isArray()) {
            throw new StartRefused("tenant " + id + " in " + file + ": providers." + which + " must be a list of provider names");
        }
        java.util.Set<String> names = new java.util.TreeSet<>();
        list.forEach(n -> names.add(n.asText().trim()));
        return names;
    }

    private static String text(JsonNode node, String field, Path file) {
        String value = node.path(field).asText("");
        if (value.isBlank()) {
            throw new IllegalStateException("a tenant in " + file + " lacks '" + field + "'");
        }
        return value;
    }

    private static int positive(JsonNode node, String field, int defaultValue, Path file) {
        int value = node.path(field).asInt(defaultValue);
        if (value <= 0) {
            throw new IllegalStateException("tenant setting " + field + " in " + file + " must be positive");
        }
        return value;
    }

    /** Writes tenants, accounts and grants; safe to run from every instance at every start. */
    public void syncTo(JdbcTemplate jdbc) {
        for (Tenant t : byId.values()) {
            jdbc.update("""
                    INSERT INTO tenants (tenant_id, display_name, api_key_sha256, max_open_jobs, max_running_jobs, max_queued_bytes)
                    VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (tenant_id) DO UPDATE SET display_name = EXCLUDED.display_name,
                        api_key_sha256 = EXCLUDED.api_key_sha256, max_open_jobs = EXCLUDED.max_open_jobs,
                        max_running_jobs = EXCLUDED.max_running_jobs, max_queued_bytes = EXCLUDED.max_queued_bytes,
                        updated_at = now()""",
                    t.id(), t.displayName(), t.apiKeySha256(), t.maxOpenJobs(), t.maxRunningJobs(), t.maxQueuedBytes());
            jdbc.update("INSERT INTO tenant_accounts (tenant_id) VALUES (?) ON CONFLICT DO NOTHING", t.id());
            t.creditGrants().forEach((reference, micros) -> jdbc.update("""
                    INSERT INTO ledger (tenant_id, entry_type, amount_micros, reference) VALUES (?, 'grant', ?, ?)
                    ON CONFLICT (tenant_id, reference) WHERE entry_type = 'grant' DO NOTHING""",
                    t.id(), micros, reference));
        }
    }

    /** The tenant whose key is in {@code Authorization: Bearer <key>}, or 401. */
    public Tenant authenticate(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            throw ApiProblem.unauthorized("Send the tenant API key as 'Authorization: Bearer <key>'.");
        }
        String key = authorization.substring(7).trim();
        return Optional.ofNullable(byKeyDigest.get(Digests.sha256Hex(key)))
                .orElseThrow(() -> ApiProblem.unauthorized("The API key is not valid."));
    }

    public Optional<Tenant> byId(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    /** The tenant a broker user submits for, if it is a configured JMS producer. */
    public Optional<Tenant> byBrokerUser(String user) {
        return Optional.ofNullable(user == null ? null : producersByUser.get(user)).map(p -> byId.get(p.tenantId()));
    }

    /** Every tenant, in no particular order. */
    public java.util.Collection<Tenant> all() {
        return byId.values();
    }

    public List<BrokerProducer> brokerProducers() {
        return List.copyOf(producersByUser.values());
    }
}
