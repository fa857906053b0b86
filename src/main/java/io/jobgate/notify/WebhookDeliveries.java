package io.jobgate.notify;

import io.jobgate.common.ApiProblem;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The deliveries table: the sender's claims (fair between tenants, at most a few in flight per
 * tenant, a job's deliveries to one endpoint in order), what each attempt came to, and what tenants
 * and operators see and do (a job's deliveries, replay, the dead ones and their redrive). A claim
 * lasts the send's deadline and a margin: a sender that dies mid-send leaves its claim to run out,
 * and the delivery is sent again (at least once; its {@code webhook-id} tells the receiver).
 */
public final class WebhookDeliveries {

    /** A claimed delivery, ready to send. */
    public record Claimed(String deliveryId, UUID endpointId, String tenantId, UUID jobId, String eventType, String body,
                          int attempt, int retryBase, Instant claimedAt) {
    }

    /** What one attempt came to. */
    public record Result(int httpStatus, String error, long durationMs, Duration retryAfter) {
        public boolean delivered() {
            return httpStatus >= 200 && httpStatus < 300;
        }

        /** The receiver says the endpoint is gone for good. */
        public boolean gone() {
            return httpStatus == 410;
        }
    }

    private static final String CLAIM = """
            WITH due_tenants AS (
                SELECT DISTINCT tenant_id FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?),
            picked AS (
                SELECT d.delivery_id FROM due_tenants t
                 CROSS JOIN LATERAL (SELECT count(*) AS n FROM webhook_deliveries b
                                      WHERE b.tenant_id = t.tenant_id AND b.state = 'pending' AND b.claimed_until >= ?) busy
                 CROSS JOIN LATERAL (
                    SELECT d.delivery_id FROM webhook_deliveries d
                     WHERE d.tenant_id = t.tenant_id AND d.state = 'pending' AND d.next_attempt_at <= ?
                       AND (d.claimed_until IS NULL OR d.claimed_until < ?)
                       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.job_id = d.job_id AND e.endpoint_id = d.endpoint_id
                                          AND e.seq < d.seq AND e.state = 'pending')
                     ORDER BY d.next_attempt_at LIMIT greatest(0, ? - busy.n)) d
                 LIMIT ?)
            UPDATE webhook_deliveries w SET claimed_until = ?, attempts = w.attempts + 1
              FROM picked
             WHERE w.delivery_id = picked.delivery_id AND w.state = 'pending' AND (w.claimed_until IS NULL OR w.claimed_until < ?)
            RETURNING w.delivery_id, w.endpoint_id, w.tenant_id, w.job_id, w.event_type, w.body, w.attempts, w.retry_base""";

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final DeliverySchedule schedule;

    public WebhookDeliveries(JdbcTemplate jdbc, Clock clock, DeliverySchedule schedule) {
        this.jdbc = jdbc;
        this.clock = clock;
        this.schedule = schedule;
    }

    /**
     * Claims due deliveries: from each tenant with due ones, up to {@code perTenant} less those of
     * its being sent now; {@code max} in all. A job's delivery waits while an earlier one of the same
     * job to the same endpoint is not done.
     */
    public List<Claimed> claim(int perTenant, int max, Duration hold) {
        if (max <= 0) {
            return List.of();
        }
        Instant now = clock.instant();
        Timestamp t = Timestamp.from(now);
        return jdbc.query(CLAIM, (rs, n) -> new Claimed(rs.getString("delivery_id"), rs.getObject("endpoint_id", UUID.class),
                rs.getString("tenant_id"), rs.getObject("job_id", UUID.class), rs.getString("event_type"), rs.getString("body"),
                rs.getInt("attempts"), rs.getInt("retry_base"), now), t, t, t, t, perTenant, max, Timestamp.from(now.plus(hold)), t);
    }

    /** How an attempt ended: delivered, retried by the schedule, or dead past it. @return the delivery's state now */
    public String record(Claimed claimed, Result result) {
        Instant now = clock.instant();
        jdbc.update("INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status, error)"
                + " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", claimed.deliveryId(), claimed.attempt(),
                Timestamp.from(claimed.claimedAt()), result.durationMs(), result.httpStatus() == 0 ? null : result.httpStatus(),
                result.error());
        String state;
        Instant next = null;
        if (result.delivered()) {
            state = "delivered";
        } else if (result.gone()) {
            state = "dropped";
        } else {
            next = schedule.next(claimed.attempt() - claimed.retryBase(), now, result.retryAfter()).orElse(null);
            state = next == null ? "dead" : "pending";
        }
        jdbc.update("UPDATE webhook_deliveries SET state = ?, claimed_until = NULL, last_status = CAST(? AS int), last_error = ?,"
                + " next_attempt_at = coalesce(CAST(? AS timestamptz), next_attempt_at), ended_at = CAST(? AS timestamptz)"
                + " WHERE delivery_id = ? AND attempts = ? AND state = 'pending'",
                state, result.httpStatus() == 0 ? null : result.httpStatus(), result.error(), next == null ? null : Timestamp.from(next),
                state.equals("pending") ? null : Timestamp.from(now), claimed.deliveryId(), claimed.attempt());
        return state;
    }

    /** An endpoint gone (410) or disabled: its pending deliveries end as dropped (a replay sends them again). */
    public int cancelPending(UUID endpointId, String why) {
        return jdbc.update("UPDATE webhook_deliveries SET state = 'dropped', claimed_until = NULL, last_error = ?, ended_at = ?"
                + " WHERE endpoint_id = ? AND state = 'pending'", why, Timestamp.from(clock.instant()), endpointId);
    }

    /** A claimed delivery that will not be sent now (its endpoint disabled meanwhile): left as it was. */
    public void release(Claimed claimed) {
        jdbc.update("UPDATE webhook_deliveries SET claimed_until = NULL, attempts = attempts - 1 WHERE delivery_id = ? AND attempts = ?",
                claimed.deliveryId(), claimed.attempt());
    }

    /**
     * Sends an endpoint's deliveries made since {@code since} again, whatever they came to, with the same
     * {@code webhook-id} and body, their retry schedule from its start. @return how many
     */
    public int replay(String tenantId, UUID endpointId, Instant since) {
        return jdbc.update("UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, retry_base = attempts, ended_at = NULL,"
                + " claimed_until = NULL WHERE tenant_id = ? AND endpoint_id = ? AND created_at >= ? AND state <> 'pending'",
                Timestamp.from(clock.instant()), tenantId, endpointId, Timestamp.from(since));
    }

    /** The dead deliveries (past their schedule), oldest first: the tenant's, or every tenant's (null). */
    public List<Map<String, Object>> dead(String tenantId, int limit) {
        return jdbc.query("SELECT delivery_id, endpoint_id, tenant_id, job_id, event_type, attempts, last_status, last_error, created_at,"
                + " ended_at FROM webhook_deliveries WHERE state = 'dead' AND (CAST(? AS text) IS NULL OR tenant_id = ?)"
                + " ORDER BY ended_at LIMIT ?", (rs, n) -> {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("id", rs.getString("delivery_id"));
                    row.put("endpoint_id", rs.getString("endpoint_id"));
                    row.put("tenant_id", rs.getString("tenant_id"));
                    row.put("job_id", rs.getString("job_id"));
                    row.put("event_type", rs.getString("event_type"));
                    row.put("attempts", rs.getInt("attempts"));
                    row.put("last_status", rs.getObject("last_status"));
                    row.put("last_error", rs.getString("last_error"));
                    row.put("created_at", rs.getTimestamp("created_at").toInstant().toString());
                    row.put("ended_at", rs.getTimestamp("ended_at").toInstant().toString());
                    return row;
                }, tenantId, tenantId, limit);
    }

    /** The dead deliveries sent again (the tenant's, or every tenant's when null), their schedule from its start. */
    public int redriveDead(String tenantId) {
        return jdbc.update("UPDATE webhook_deliveries d SET state = 'pending', next_attempt_at = ?, retry_base = attempts, ended_at = NULL"
                + " WHERE state = 'dead' AND (CAST(? AS text) IS NULL OR tenant_id = ?)"
                + " AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.endpoint_id = d.endpoint_id AND e.enabled AND e.deleted_at IS NULL)",
                Timestamp.from(clock.instant()), tenantId, tenantId);
    }

    /** A job's deliveries, each with its attempts: what {@code GET /v1/jobs/{id}/deliveries} shows. */
    public List<Map<String, Object>> ofJob(UUID jobId) {
        Map<String, Map<String, Object>> byId = new LinkedHashMap<>();
        jdbc.query("SELECT d.delivery_id, d.endpoint_id, e.url, d.event_type, d.state, d.attempts, d.next_attempt_at, d.last_status,"
                + " d.last_error, d.created_at, d.ended_at FROM webhook_deliveries d JOIN webhook_endpoints e ON e.endpoint_id = d.endpoint_id"
                + " WHERE d.job_id = ? ORDER BY d.seq, d.endpoint_id", rs -> {
                    Map<String, Object> row = new LinkedHashMap<>();
                    row.put("id", rs.getString("delivery_id"));
                    row.put("endpoint_id", rs.getString("endpoint_id"));
                    row.put("url", rs.getString("url"));
                    row.put("event_type", rs.getString("event_type"));
                    row.put("state", rs.getString("state"));
                    row.put("attempt_count", rs.getInt("attempts"));
                    row.put("next_attempt_at", "pending".equals(rs.getString("state"))
                            ? rs.getTimestamp("next_attempt_at").toInstant().toString() : null);
                    row.put("last_status", rs.getObject("last_status"));
                    row.put("last_error", rs.getString("last_error"));
                    row.put("created_at", rs.getTimestamp("created_at").toInstant().toString());
                    Timestamp ended = rs.getTimestamp("ended_at");
                    row.put("ended_at", ended == null ? null : ended.toInstant().toString());
                    row.put("attempts", new ArrayList<Map<String, Object>>());
                    byId.put(rs.getString("delivery_id"), row);
                }, jobId);
        if (!byId.isEmpty()) {
            jdbc.query("SELECT delivery_id, attempt, started_at, duration_ms, http_status, error FROM webhook_delivery_attempts"
                    + " WHERE delivery_id = ANY (string_to_array(?, ',')) ORDER BY delivery_id, attempt", rs -> {
                        Map<String, Object> attempt = new LinkedHashMap<>();
                        attempt.put("attempt", rs.getInt("attempt"));
                        attempt.put("started_at", rs.getTimestamp("started_at").toInstant().toString());
                        attempt.put("duration_ms", rs.getLong("duration_ms"));
                        attempt.put("http_status", rs.getObject("http_status"));
                        attempt.put("error", rs.getString("error"));
                        @SuppressWarnings("unchecked")
                        List<Map<String, Object>> attempts = (List<Map<String, Object>>) byId.get(rs.getString("delivery_id")).get("attempts");
                        attempts.add(attempt);
                    }, String.join(",", byId.keySet()));
        }
        return List.copyOf(byId.values());
    }

    /** A query parameter as an instant: an RFC 3339 instant or a date (its start, UTC). */
    public static Instant since(String text) {
        if (text == null || text.isBlank()) {
            throw ApiProblem.invalidInput("since", "Say from when: ?since=<RFC 3339 instant or date>.");
        }
        try {
            return text.length() == 10 ? java.time.LocalDate.parse(text).atStartOfDay(java.time.ZoneOffset.UTC).toInstant()
                    : java.time.OffsetDateTime.parse(text).toInstant();
        } catch (java.time.format.DateTimeParseException e) {
            throw ApiProblem.invalidInput("since", "'" + text + "' is not an RFC 3339 instant or a date.");
        }
    }
}
