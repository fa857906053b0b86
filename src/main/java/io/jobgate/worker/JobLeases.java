package io.jobgate.worker;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The worker's state writes. Lock order, shared with the relay and the finalizer: outbox rows,
 * then the job row, then the provider gate, then tenant and window counters. Every write after the
 * lease is conditional on the lease token, so a worker whose lease the sweeper ended changes nothing.
 */
public final class JobLeases {

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final JobFinalizer finalizer;
    private final Clock clock;

    public JobLeases(JdbcTemplate jdbc, TransactionTemplate transactions, JobFinalizer finalizer, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.finalizer = finalizer;
        this.clock = clock;
    }

    /**
     * Takes the lease for the dispatch event {@code eventId}: only a dispatched, unleased, waiting job,
     * and only for its newest dispatch event (an older, duplicated message must not start an attempt
     * before its time).
     */
    public Optional<Lease> take(UUID jobId, long eventId, String worker, Duration leaseFor) {
        UUID token = UUID.randomUUID();
        return jdbc.query("""
                UPDATE jobs j SET status = 'running', lease_token = ?, lease_owner = ?,
                                  lease_expires_at = now() + make_interval(secs => ?), updated_at = now()
                 WHERE j.job_id = ? AND j.finalized_at IS NULL AND j.lease_token IS NULL
                   AND j.status IN ('queued', 'retry_wait') AND j.dispatched_at IS NOT NULL
                   AND ? = (SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch')
                RETURNING j.job_id, j.lease_token, j.tenant_id, j.preset_id, j.preset_version, j.kind, j.aspect_class,
                          j.provider, j.inputs::text AS inputs, j.source_key, j.source_sha256, j.correlation_id,
                          (SELECT u.media_type FROM uploads u WHERE u.upload_id = j.upload_id) AS source_media_type,
                          j.attempts, j.max_attempts, j.expires_at, j.unparseable_streak""",
                JobLeases::lease, token, worker, leaseFor.toMillis() / 1000.0, jobId, eventId).stream().findFirst();
    }

    /** Why a dispatch message did not get a lease (for the log line of an acknowledged duplicate). */
    public String whyNoLease(UUID jobId, long eventId) {
        return jdbc.query("""
                SELECT j.status, j.lease_token IS NOT NULL AS leased,
                       (SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch') AS newest
                  FROM jobs j WHERE j.job_id = ?""", rs -> {
            if (!rs.next()) {
                return "unknown job";
            }
            String status = rs.getString("status");
            if (JobStatus.fromWire(status).map(JobStatus::terminal).orElse(false)) {
                return "job is already " + status;
            }
            if (rs.getBoolean("leased")) {
                return "another worker holds the lease";
            }
            long newest = rs.getLong("newest");
            return newest != eventId ? "stale dispatch event " + eventId + " (current " + newest + ")" : "job is " + status;
        }, jobId);
    }

    /** How the provider gate answered. */
    public sealed interface GatePass permits Submitting, Snoozed, Ended {
    }

    /** The attempt started: the job is {@code submitting}, its attempt row is open. */
    public record Submitting(int attempt) implements GatePass {
    }

    /** The gate was closed or full: the job waits (no attempt spent) until {@code until}. */
    public record Snoozed(Instant until, String reason) implements GatePass {
    }

    /** The job ended before its call (caps), or the lease was lost. */
    public record Ended(String reason) implements GatePass {
    }

    /**
     * Checks the job's caps, then passes the provider's gate: closed until a Retry-After, or full at
     * the provider's concurrency limit (counted across all instances under the gate row's lock).
     */
    public GatePass passGate(Lease lease, String adapter, String revision, String worker, int maxConcurrency,
                             Duration fullDelay) {
        return transactions.execute(tx -> {
            Instant now = clock.instant();
            if (lease.attempts() >= lease.maxAttempts()) {
                return end(lease, ErrorCategory.EXHAUSTED, "no attempts left: " + lease.attempts() + " of "
                        + lease.maxAttempts() + " used");
            }
            if (!now.isBefore(lease.expiresAt())) {
                return end(lease, ErrorCategory.EXPIRED, "lifetime ended at " + lease.expiresAt());
            }
            Instant closedUntil = jdbc.queryForObject("""
                    INSERT INTO provider_gates (provider) VALUES (?)
                    ON CONFLICT (provider) DO UPDATE SET provider = EXCLUDED.provider
                    RETURNING CASE WHEN closed_until = '-infinity' THEN NULL ELSE closed_until END""",
                    (rs, i) -> instant(rs, 1), adapter);
            Instant wakeAt = null;
            String reason = null;
            if (closedUntil != null && closedUntil.isAfter(now)) {
                wakeAt = closedUntil;
                reason = "provider " + adapter + " gate closed until " + closedUntil;
            } else {
                Integer inFlight = jdbc.queryForObject(
                        "SELECT count(*) FROM jobs WHERE provider = ? AND status = 'submitting'", Integer.class, adapter);
                if (inFlight != null && inFlight >= maxConcurrency) {
                    wakeAt = now.plus(fullDelay);
                    reason = "provider " + adapter + " at its concurrency limit " + maxConcurrency;
                }
            }
            if (wakeAt != null) {
                if (wakeAt.isAfter(lease.expiresAt())) {
                    return end(lease, ErrorCategory.EXPIRED, reason + ", beyond the job's lifetime");
                }
                return requeue(lease, wakeAt, 0, null) ? new Snoozed(wakeAt, reason) : new Ended("lease lost");
            }
            Integer attempt = jdbc.query("""
                    UPDATE jobs SET status = 'submitting', attempts = attempts + 1, adapter_revision = ?, updated_at = now()
                     WHERE job_id = ? AND lease_token = ? RETURNING attempts""",
                    rs -> rs.next() ? rs.getInt(1) : null, revision, lease.jobId(), lease.token());
            if (attempt == null) {
                return new Ended("lease lost");
            }
            jdbc.update("""
                    INSERT INTO attempts (job_id, attempt, lease_token, worker, adapter, adapter_revision, started_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)""",
                    lease.jobId(), attempt, lease.token(), worker, adapter, revision, Timestamp.from(now));
            return new Submitting(attempt);
        });
    }

    private Ended end(Lease lease, ErrorCategory category, String message) {
        boolean ended = finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.failed(category.wire(), message));
        return new Ended(ended ? category.wire() + ": " + message : "lease lost");
    }

    /**
     * Back to {@code retry_wait} with a new dispatch event due at {@code at}: the lease and the job's
     * dispatch slot are released, older unpublished dispatch events of the job dropped.
     *
     * @return false if the lease was lost (nothing changed)
     */
    public boolean requeue(Lease lease, Instant at, int unparseableStreak, String lastCategory) {
        Boolean done = transactions.execute(tx -> {
            // Only while the lease is ours (checked, not locked: the job row lock comes second in the lock order).
            jdbc.update("""
                    DELETE FROM outbox o USING jobs j
                     WHERE o.job_id = ? AND o.event_type = 'dispatch' AND o.published_at IS NULL
                       AND j.job_id = o.job_id AND j.lease_token = ?""", lease.jobId(), lease.token());
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs j SET status = 'retry_wait', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL,
                                      dispatched_at = NULL, next_attempt_at = ?, unparseable_streak = ?, updated_at = now()
                      FROM (SELECT job_id, dispatched_at FROM jobs WHERE job_id = ? FOR UPDATE) old
                     WHERE j.job_id = old.job_id AND j.lease_token = ? AND j.finalized_at IS NULL
                    RETURNING j.tenant_id, j.attempts, old.dispatched_at IS NOT NULL AS held_slot""",
                    Timestamp.from(at), unparseableStreak, lease.jobId(), lease.token()).stream().findFirst();
            if (row.isEmpty()) {
                return false;
            }
            String tenant = (String) row.get().get("tenant_id");
            if (Boolean.TRUE.equals(row.get().get("held_slot"))) {
                jdbc.update("UPDATE tenant_accounts SET running_jobs = running_jobs - 1 WHERE tenant_id = ?", tenant);
                jdbc.update("UPDATE dispatch_window SET running = running - 1 WHERE id = 1");
            }
            jdbc.update("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) VALUES (?, ?, 'dispatch', ?)",
                    lease.jobId(), tenant, Timestamp.from(at));
            statusEvent(lease.jobId(), tenant, "retry_wait", ((Number) row.get().get("attempts")).intValue(), lastCategory);
            return true;
        });
        return Boolean.TRUE.equals(done);
    }

    /**
     * A request that may or may not have reached the provider: {@code submission_unknown}, resolved by
     * asking the provider (reconciliation), never by blind resubmission. Lease and slot are released.
     */
    public boolean parkUnknown(Lease lease, String providerRequestId) {
        Boolean done = transactions.execute(tx -> {
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs j SET status = 'submission_unknown', lease_token = NULL, lease_owner = NULL,
                                      lease_expires_at = NULL, dispatched_at = NULL,
                                      provider_request_id = coalesce(?, j.provider_request_id), updated_at = now()
                      FROM (SELECT job_id, dispatched_at FROM jobs WHERE job_id = ? FOR UPDATE) old
                     WHERE j.job_id = old.job_id AND j.lease_token = ? AND j.finalized_at IS NULL
                    RETURNING j.tenant_id, j.attempts, old.dispatched_at IS NOT NULL AS held_slot""",
                    providerRequestId, lease.jobId(), lease.token()).stream().findFirst();
            if (row.isEmpty()) {
                return false;
            }
            String tenant = (String) row.get().get("tenant_id");
            if (Boolean.TRUE.equals(row.get().get("held_slot"))) {
                jdbc.update("UPDATE tenant_accounts SET running_jobs = running_jobs - 1 WHERE tenant_id = ?", tenant);
                jdbc.update("UPDATE dispatch_window SET running = running - 1 WHERE id = 1");
            }
            statusEvent(lease.jobId(), tenant, "submission_unknown", ((Number) row.get().get("attempts")).intValue(),
                    ErrorCategory.AMBIGUOUS.wire());
            return true;
        });
        return Boolean.TRUE.equals(done);
    }

    /** The provider accepted the task: {@code provider_pending} with its reference; the slot stays held. */
    public boolean markPending(Lease lease, String providerTask, String providerRequestId) {
        Boolean done = transactions.execute(tx -> {
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs SET status = 'provider_pending', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL,
                                    provider_request_id = coalesce(?, ?, provider_request_id), updated_at = now()
                     WHERE job_id = ? AND lease_token = ? AND finalized_at IS NULL
                    RETURNING tenant_id, attempts""", providerTask, providerRequestId, lease.jobId(), lease.token())
                    .stream().findFirst();
            row.ifPresent(r -> statusEvent(lease.jobId(), (String) r.get("tenant_id"), "provider_pending",
                    ((Number) r.get("attempts")).intValue(), null));
            return row.isPresent();
        });
        return Boolean.TRUE.equals(done);
    }

    /** Closes the attempt row with what this worker saw (kept even when the lease was lost meanwhile). */
    public void closeAttempt(UUID jobId, int attempt, UUID token, String outcome, AdapterResult result, long durationMs,
                             Instant nextAttemptAt) {
        jdbc.update("""
                UPDATE attempts SET ended_at = now(), duration_ms = ?, outcome = ?, http_status = ?, provider_request_id = ?,
                                    error_category = ?, error_message = ?, retry_after = ?, next_attempt_at = ?,
                                    response_excerpt = ?
                 WHERE job_id = ? AND attempt = ? AND lease_token = ?""",
                durationMs, outcome, result.httpStatus(), result.providerRequestId(),
                result.category() == null ? null : result.category().wire(), result.message(), result.retryAfter(),
                nextAttemptAt == null ? null : Timestamp.from(nextAttemptAt), result.excerpt(), jobId, attempt, token);
    }

    /** A 429 closes the provider's gate until {@code until} for every job (never shortens a longer close). */
    public void closeGate(String provider, Instant until, String reason) {
        jdbc.update("""
                INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES (?, ?, ?, now())
                ON CONFLICT (provider) DO UPDATE
                   SET closed_until = greatest(provider_gates.closed_until, EXCLUDED.closed_until),
                       closed_reason = EXCLUDED.closed_reason, updated_at = now()""",
                provider, Timestamp.from(until), reason);
    }

    private void statusEvent(UUID jobId, String tenant, String status, int attempt, String category) {
        jdbc.update("""
                INSERT INTO outbox (job_id, tenant_id, event_type, payload)
                VALUES (?, ?, 'status', jsonb_build_object('status', ?::text, 'attempt', ?::int, 'error_category', ?::text))""",
                jobId, tenant, status, attempt, category);
    }

    private static Lease lease(ResultSet rs, int row) throws SQLException {
        return new Lease(rs.getObject("job_id", UUID.class), rs.getObject("lease_token", UUID.class),
                rs.getString("tenant_id"), rs.getString("preset_id"), rs.getInt("preset_version"), rs.getString("kind"),
                rs.getString("aspect_class"), rs.getString("provider"), rs.getString("inputs"), rs.getString("source_key"),
                rs.getString("source_sha256"), rs.getString("source_media_type"), rs.getString("correlation_id"), rs.getInt("attempts"),
                rs.getInt("max_attempts"), instant(rs, "expires_at"), rs.getInt("unparseable_streak"));
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }

    static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }
}
