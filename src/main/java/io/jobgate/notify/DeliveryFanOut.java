package io.jobgate.notify;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.job.Job;
import io.jobgate.job.JobStore;
import io.jobgate.job.JobView;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.camel.Body;
import org.apache.camel.Header;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A job's status change, read from the topic {@code jobs.events} (routes/tenant-webhooks.camel.yaml),
 * becomes one delivery per endpoint of its tenant that asked for it: the endpoint the job named (its
 * {@code webhook_url}), or else each enabled endpoint whose event types include it. Written once per
 * (endpoint, status event): a message the broker redelivers adds nothing. Its body is the Standard
 * Webhooks payload {@code {type, timestamp, data}} with the job as {@code GET /v1/jobs/{id}} shows it
 * now, written here once so that every retry sends the same bytes.
 */
public final class DeliveryFanOut {

    private final JdbcTemplate jdbc;
    private final JobStore jobs;
    private final Clock clock;

    public DeliveryFanOut(JdbcTemplate jdbc, JobStore jobs, Clock clock) {
        this.jdbc = jdbc;
        this.jobs = jobs;
        this.clock = clock;
    }

    /**
     * @param event the status event as the relay published it (job_id, tenant_id, status, at, event_id), with the tenant and status the relay also set as the message's properties
     * ({@code JobgateTenant}, {@code JobgateStatus}; null: read from the body). Two events per job (queued,
     * then final) and most tenants have no endpoint: the body is parsed only for an event an endpoint wants.
     */
    public int fanOut(@Body String event, @Header("JobgateTenant") String tenantProperty,
                      @Header("JobgateStatus") String statusProperty) {
        JsonNode e = null;
        if (tenantProperty == null || statusProperty == null) {
            e = Json.parseObject(event.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        String tenant = e == null ? tenantProperty : e.path("tenant_id").asText();
        String type = "job." + (e == null ? statusProperty : e.path("status").asText());
        // Most tenants have no endpoint: one look at a small table, and nothing more for them.
        Boolean wanted = jdbc.queryForObject("SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE tenant_id = ? AND enabled"
                + " AND deleted_at IS NULL AND ? = ANY (event_types))", Boolean.class, tenant, type);
        if (!Boolean.TRUE.equals(wanted)) {
            return 0;
        }
        if (e == null) {
            e = Json.parseObject(event.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        long seq = e.path("event_id").asLong();
        UUID jobId = UUID.fromString(e.path("job_id").asText());
        Job job = jobs.findAny(jobId).orElse(null);
        if (job == null) {
            return 0; // gone by retention: nothing left to tell
        }
        Instant occurred = Instant.parse(e.path("at").asText());
        Map<String, Object> payload = new LinkedHashMap<>();
        payload.put("type", type);
        payload.put("timestamp", occurred.toString());
        payload.put("data", JobView.of(job));
        Instant now = clock.instant();
        int added = jdbc.update("""
                INSERT INTO webhook_deliveries (delivery_id, endpoint_id, tenant_id, job_id, seq, event_type, occurred_at, state, body,
                                                next_attempt_at, created_at)
                SELECT 'msg_' || md5(e.endpoint_id::text || ':' || CAST(? AS text)), e.endpoint_id, e.tenant_id, ?, ?, ?, ?, 'pending', ?, ?, ?
                  FROM webhook_endpoints e
                 WHERE e.tenant_id = ? AND e.enabled AND e.deleted_at IS NULL AND ? = ANY (e.event_types)
                   AND (CAST(? AS uuid) IS NULL OR e.endpoint_id = ?)
                ON CONFLICT (endpoint_id, seq) DO NOTHING""",
                seq, jobId, seq, type, Timestamp.from(occurred), Json.write(payload), Timestamp.from(now), Timestamp.from(now),
                tenant, type, job.webhookEndpointId(), job.webhookEndpointId());
        return added;
    }
}
