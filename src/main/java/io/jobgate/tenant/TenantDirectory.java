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
import io.jobgate.api.ApiProblem;
import io.jobgate.infra.Digests;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The tenants from the tenants files, mirrored into the database at start (limits, hashed keys,
 * credit grants once per reference), and the bearer-key check of both doors.
 */
public final class TenantDirectory {

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());

    private final Map<String, Tenant> byKeyDigest;
    private final Map<String, Tenant> byId;

    public TenantDirectory(List<Tenant> tenants) {
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
    }

    public static TenantDirectory load(List<Path> files) throws IOException {
        List<Tenant> tenants = new java.util.ArrayList<>();
        for (Path file : files) {
            JsonNode root = YAML.readTree(file.toFile());
            for (JsonNode node : root.path("tenants")) {
                tenants.add(parse(node, file));
            }
        }
        if (tenants.isEmpty()) {
            throw new IllegalStateException("no tenants configured in " + files);
        }
        return new TenantDirectory(tenants);
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
                node.path("max_queued_bytes").asLong(256L * 1024 * 1024), Map.copyOf(grants));
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
}
