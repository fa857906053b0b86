package io.jobgate.notify;

import io.jobgate.common.ApiProblem;
import java.security.SecureRandom;
import java.sql.Array;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;

/**
 * A tenant's webhook endpoints: saved with a URL {@link EndpointUrls} accepts and the event types it
 * wants, each with its own signing secret (shown once, when made or rotated), enabled or disabled (by
 * its tenant, or by a receiver's {@code 410 Gone}). Deleting one keeps its row for its deliveries'
 * record; its pending deliveries are dropped.
 */
public final class WebhookEndpoints {

    /** The event types an endpoint may ask for: one per job status. */
    public static final Set<String> EVENT_TYPES = Set.of("job.queued", "job.running", "job.submitting", "job.provider_pending",
            "job.submission_unknown", "job.retry_wait", "job.succeeded", "job.failed", "job.cancelled");
    /** What an endpoint gets when it names none: the job's end. */
    public static final List<String> DEFAULT_EVENT_TYPES = List.of("job.cancelled", "job.failed", "job.succeeded");

    /** An endpoint as its tenant sees it (never its secrets). */
    public record Endpoint(UUID id, String tenantId, String url, List<String> eventTypes, boolean enabled, String disabledReason,
                           Instant createdAt, Instant updatedAt, Instant previousSecretUntil) {
        public Map<String, Object> view() {
            Map<String, Object> view = new LinkedHashMap<>();
            view.put("id", id.toString());
            view.put("url", url);
            view.put("event_types", eventTypes);
            view.put("enabled", enabled);
            view.put("disabled_reason", disabledReason);
            view.put("created_at", createdAt.toString());
            view.put("updated_at", updatedAt.toString());
            view.put("previous_secret_expires_at", previousSecretUntil == null ? null : previousSecretUntil.toString());
            return view;
        }
    }

    /** What a sender needs: where, and the secrets that sign (the current one first). */
    public record Target(UUID id, String tenantId, String url, boolean enabled, List<String> secrets) {
    }

    private static final String COLUMNS = "endpoint_id, tenant_id, url, event_types, enabled, disabled_reason, created_at, updated_at,"
            + " previous_secret_until";
    private static final RowMapper<Endpoint> ENDPOINT = (rs, n) -> new Endpoint(rs.getObject("endpoint_id", UUID.class),
            rs.getString("tenant_id"), rs.getString("url"), strings(rs.getArray("event_types")), rs.getBoolean("enabled"),
            rs.getString("disabled_reason"), rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("updated_at").toInstant(),
            instant(rs, "previous_secret_until"));

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final EndpointUrls urls;
    private final SecureRandom random = new SecureRandom();

    public WebhookEndpoints(JdbcTemplate jdbc, Clock clock, EndpointUrls urls) {
        this.jdbc = jdbc;
        this.clock = clock;
        this.urls = urls;
    }

    /** A new endpoint, and its secret (the only time it is shown). */
    public record Created(Endpoint endpoint, String secret) {
    }

    public Created create(String tenantId, String url, List<String> eventTypes, boolean enabled) {
        String checked = urls.check(url).toString();
        List<String> types = eventTypes(eventTypes);
        String secret = newSecret();
        Timestamp now = Timestamp.from(clock.instant());
        UUID id = UUID.randomUUID();
        try {
            jdbc.update("INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, event_types, enabled, secret, created_at, updated_at)"
                    + " VALUES (?, ?, ?, string_to_array(?, ','), ?, ?, ?, ?)", id, tenantId, checked, String.join(",", types), enabled,
                    secret, now, now);
        } catch (DuplicateKeyException e) {
            throw duplicate(checked);
        }
        return new Created(find(tenantId, id).orElseThrow(), secret);
    }

    public List<Endpoint> list(String tenantId) {
        return jdbc.query("SELECT " + COLUMNS + " FROM webhook_endpoints WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY created_at",
                ENDPOINT, tenantId);
    }

    public Optional<Endpoint> find(String tenantId, UUID id) {
        return jdbc.query("SELECT " + COLUMNS + " FROM webhook_endpoints WHERE tenant_id = ? AND endpoint_id = ? AND deleted_at IS NULL",
                ENDPOINT, tenantId, id).stream().findFirst();
    }

    /** The tenant's endpoint, or 404. */
    public Endpoint get(String tenantId, UUID id) {
        return find(tenantId, id).orElseThrow(() -> ApiProblem.of(404, "endpoint_not_found", "No webhook endpoint " + id + "."));
    }

    /** The tenant's enabled endpoint at exactly this URL (a job's {@code webhook_url}). */
    public Optional<Endpoint> findByUrl(String tenantId, String url) {
        return jdbc.query("SELECT " + COLUMNS + " FROM webhook_endpoints WHERE tenant_id = ? AND url = ? AND deleted_at IS NULL",
                ENDPOINT, tenantId, url.trim()).stream().findFirst();
    }

    /** Changes what is given (null: unchanged). Enabling again clears the reason it was disabled for. */
    public Endpoint update(String tenantId, UUID id, String url, List<String> eventTypes, Boolean enabled) {
        Endpoint current = get(tenantId, id);
        String newUrl = url == null ? current.url() : urls.check(url).toString();
        List<String> types = eventTypes == null ? current.eventTypes() : eventTypes(eventTypes);
        boolean on = enabled == null ? current.enabled() : enabled;
        try {
            jdbc.update("UPDATE webhook_endpoints SET url = ?, event_types = string_to_array(?, ','), enabled = ?,"
                    + " disabled_reason = CASE WHEN ? THEN NULL ELSE disabled_reason END, updated_at = ?"
                    + " WHERE tenant_id = ? AND endpoint_id = ? AND deleted_at IS NULL",
                    newUrl, String.join(",", types), on, on, Timestamp.from(clock.instant()), tenantId, id);
        } catch (DuplicateKeyException e) {
            throw duplicate(newUrl);
        }
        return get(tenantId, id);
    }

    /** Deleted: no longer listed or sent to; its pending deliveries are dropped. */
    public void delete(String tenantId, UUID id) {
        Timestamp now = Timestamp.from(clock.instant());
        int deleted = jdbc.update("UPDATE webhook_endpoints SET deleted_at = ?, enabled = false, updated_at = ?"
                + " WHERE tenant_id = ? AND endpoint_id = ? AND deleted_at IS NULL", now, now, tenantId, id);
        if (deleted == 0) {
            throw ApiProblem.of(404, "endpoint_not_found", "No webhook endpoint " + id + ".");
        }
        jdbc.update("UPDATE webhook_deliveries SET state = 'dropped', ended_at = ?, last_error = 'endpoint deleted'"
                + " WHERE endpoint_id = ? AND state = 'pending'", now, id);
    }

    /**
     * A new secret; the one it replaces still signs (beside it) for {@code overlap}, so a receiver
     * switches without a delivery it cannot verify. @return the new secret (shown this once)
     */
    public String rotate(String tenantId, UUID id, Duration overlap) {
        String secret = newSecret();
        Instant now = clock.instant();
        int rotated = jdbc.update("UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ?,"
                + " updated_at = ? WHERE tenant_id = ? AND endpoint_id = ? AND deleted_at IS NULL",
                Timestamp.from(now.plus(overlap)), secret, Timestamp.from(now), tenantId, id);
        if (rotated == 0) {
            throw ApiProblem.of(404, "endpoint_not_found", "No webhook endpoint " + id + ".");
        }
        return secret;
    }

    /** A receiver answered 410 Gone: the endpoint is disabled until its tenant enables it again. */
    public void disable(UUID id, String reason) {
        jdbc.update("UPDATE webhook_endpoints SET enabled = false, disabled_reason = ?, updated_at = ? WHERE endpoint_id = ?",
                reason, Timestamp.from(clock.instant()), id);
    }

    /** Where to send, and the secrets that sign now (the previous one while its overlap lasts). */
    public Optional<Target> target(UUID id) {
        Timestamp now = Timestamp.from(clock.instant());
        return jdbc.query("SELECT endpoint_id, tenant_id, url, enabled AND deleted_at IS NULL AS enabled, secret,"
                + " CASE WHEN previous_secret_until > ? THEN previous_secret END AS previous FROM webhook_endpoints WHERE endpoint_id = ?",
                (rs, n) -> {
                    List<String> secrets = new ArrayList<>(2);
                    secrets.add(rs.getString("secret"));
                    if (rs.getString("previous") != null) {
                        secrets.add(rs.getString("previous"));
                    }
                    return new Target(rs.getObject("endpoint_id", UUID.class), rs.getString("tenant_id"), rs.getString("url"),
                            rs.getBoolean("enabled"), List.copyOf(secrets));
                }, now, id).stream().findFirst();
    }

    /** The URL rules, for a send (checked again: a name may resolve elsewhere by now). */
    public EndpointUrls urls() {
        return urls;
    }

    private static List<String> eventTypes(List<String> given) {
        if (given == null || given.isEmpty()) {
            return DEFAULT_EVENT_TYPES;
        }
        Set<String> types = new TreeSet<>();
        for (String type : given) {
            if (type == null || !EVENT_TYPES.contains(type)) {
                throw ApiProblem.invalidInput("event_types", "Unknown event type '" + type + "'; the types are "
                        + new TreeSet<>(EVENT_TYPES) + ".");
            }
            types.add(type);
        }
        return List.copyOf(types);
    }

    private static ApiProblem duplicate(String url) {
        return ApiProblem.of(409, "endpoint_exists", "This tenant already has an endpoint at " + url + ".").with("field", "url");
    }

    private String newSecret() {
        byte[] key = new byte[32];
        random.nextBytes(key);
        return "whsec_" + Base64.getEncoder().encodeToString(key);
    }

    private static List<String> strings(Array array) throws SQLException {
        return array == null ? List.of() : Arrays.asList((String[]) array.getArray());
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
