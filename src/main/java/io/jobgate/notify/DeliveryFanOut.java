package io.jobgate.notify;

import io.jobgate.common.Json;
import io.jobgate.job.Job;
import io.jobgate.job.JobStore;
import io.jobgate.job.JobView;
import io.jobgate.job.StatusEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Clock;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A job's status change becomes one delivery per endpoint of its tenant that asked for it: the endpoint
 * the job named (its {@code webhook_url}), or else each enabled endpoint whose event types include it.
 * Written by the relay's status round that took the event, in its transaction (OutboxRelay.statusRound),
 * once per (endpoint, status event): an event taken again after a failed round adds nothing. Its body is
 * the Standard Webhooks payload {@code {type, timestamp, data}} with the job as {@code GET /v1/jobs/{id}}
 * shows it then, written here once so that every retry sends the same bytes.
 */
public final class DeliveryFanOut implements StatusEvent.RoundWrites {

    /** Which event types each of the round's tenants wants: most tenants have no endpoint, and cost this one look. */
    private static final String WANTED = """
            SELECT DISTINCT e.tenant_id, t.type
              FROM webhook_endpoints e CROSS JOIN LATERAL unnest(e.event_types) t(type)
             WHERE e.tenant_id = ANY (?) AND e.enabled AND e.deleted_at IS NULL""";

    private static final String INSERT = """
            INSERT INTO webhook_deliveries (delivery_id, endpoint_id, tenant_id, job_id, seq, event_type, occurred_at, state, body,
                                            next_attempt_at, created_at)
            SELECT 'msg_' || md5(e.endpoint_id::text || ':' || CAST(? AS text)), e.endpoint_id, e.tenant_id, ?, ?, ?, ?, 'pending', ?, ?, ?
              FROM webhook_endpoints e
             WHERE e.tenant_id = ? AND e.enabled AND e.deleted_at IS NULL AND ? = ANY (e.event_types)
               AND (CAST(? AS uuid) IS NULL OR e.endpoint_id = ?)
            ON CONFLICT (endpoint_id, seq) DO NOTHING""";

    private final JobStore jobs;
    private final Clock clock;

    public DeliveryFanOut(JobStore jobs, Clock clock) {
        this.jobs = jobs;
        this.clock = clock;
    }

    @Override
    public void write(Connection round, List<StatusEvent> taken) throws SQLException {
        Set<String> wanted = wanted(round, taken);
        if (wanted.isEmpty()) {
            return;
        }
        List<StatusEvent> toDeliver = taken.stream().filter(e -> wanted.contains(e.tenantId() + '\n' + e.webhookType())).toList();
        if (toDeliver.isEmpty()) {
            return;
        }
        // The round's jobs in one read, not one per event: a round takes up to jobgate.relay.status-batch events.
        Map<java.util.UUID, Job> byId = jobs.findAllAny(toDeliver.stream().map(StatusEvent::jobId).distinct().toList());
        Timestamp now = Timestamp.from(clock.instant());
        try (PreparedStatement insert = round.prepareStatement(INSERT)) {
            int added = 0;
            for (StatusEvent event : toDeliver) {
                Job job = byId.get(event.jobId());
                if (job == null) {
                    continue; // gone by retention: nothing left to tell
                }
                Map<String, Object> payload = new LinkedHashMap<>();
                payload.put("type", event.webhookType());
                payload.put("timestamp", event.at().toString());
                payload.put("data", JobView.of(job));
                insert.setLong(1, event.eventId());
                insert.setObject(2, event.jobId());
                insert.setLong(3, event.eventId());
                insert.setString(4, event.webhookType());
                insert.setTimestamp(5, Timestamp.from(event.at()));
                insert.setString(6, Json.write(payload));
                insert.setTimestamp(7, now);
                insert.setTimestamp(8, now);
                insert.setString(9, event.tenantId());
                insert.setString(10, event.webhookType());
                insert.setObject(11, job.webhookEndpointId(), Types.OTHER);
                insert.setObject(12, job.webhookEndpointId(), Types.OTHER);
                insert.addBatch();
                added++;
            }
            if (added > 0) {
                insert.executeBatch();
            }
        }
    }

    /** {@code tenant + '\n' + event type} for each type an enabled endpoint of the round's tenants wants. */
    private static Set<String> wanted(Connection round, List<StatusEvent> taken) throws SQLException {
        Object[] tenants = taken.stream().map(StatusEvent::tenantId).distinct().toArray();
        Set<String> wanted = new HashSet<>();
        try (PreparedStatement ps = round.prepareStatement(WANTED)) {
            ps.setArray(1, round.createArrayOf("text", tenants));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    wanted.add(rs.getString(1) + '\n' + rs.getString(2));
                }
            }
        }
        return wanted;
    }
}
