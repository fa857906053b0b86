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
import io.jobgate.provider.Provider;
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

    private static final String LEASE_COLUMNS = """
            j.job_id, j.lease_token, j.tenant_id, j.preset_id, j.preset_version, j.kind, j.aspect_class,
            j.provider, j.inputs::text AS inputs, j.source_key, j.source_sha256, j.correlation_id,
            (SELECT u.media_type FROM uploads u WHERE u.upload_id = j.upload_id) AS source_media_type,
            j.attempts, j.max_attempts, j.expires_at, j.unparseable_streak
            """;

    /**
     * Only a dispatched, unleased, waiting job may start an attempt, and only for its newest dispatch
     * event (an older, duplicated message must not start an attempt before its time).
     */
    private static final String MAY_START = """
            j.finalized_at IS NULL AND j.lease_token IS NULL AND j.status IN ('queued', 'retry_wait')
            AND j.dispatched_at IS NOT NULL
            AND ? = (SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch')
            """;

    /** The stored request of a job the dispatch event {@code eventId} may start, read without a lock. */
    public Optional<Lease> peek(UUID jobId, long eventId) {
        return jdbc.query("SELECT " + LEASE_COLUMNS + " FROM jobs j WHERE j.job_id = ? AND " + MAY_START,
                JobLeases::lease, jobId, eventId).stream().findFirst();
    }

    /** Does {@code leaseToken} still hold the job? (Asked before a worker promotes an output.) */
    public boolean holds(UUID jobId, UUID leaseToken) {
        return Boolean.TRUE.equals(jdbc.queryForObject(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND lease_token = ?)", Boolean.class, jobId, leaseToken));
    }

    /** Why a dispatch message cannot start an attempt (for the log line of an acknowledged duplicate). */
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

    /** What re-validation found before the call: fail now, or wait and try again (no attempt spent). */
    public record Verdict(ErrorCategory category, String message, boolean retry) {
    }

    /** How starting an attempt ended. */
    public sealed interface GatePass permits Submitting, Snoozed, Ended, NotLeased {
    }

    /** The attempt started under {@code lease}: the job is {@code submitting}, its attempt row is open. */
    public record Submitting(Lease lease, int attempt) implements GatePass {
    }

    /** The gate was closed or full, or re-validation asked to wait: back to {@code retry_wait} until {@code until}. */
    public record Snoozed(Instant until, String reason) implements GatePass {
    }

    /** The job ended before its call (caps, invalid request). */
    public record Ended(String reason) implements GatePass {
    }

    /** Another worker or a newer event got there first: nothing changed. */
    public record NotLeased(String reason) implements GatePass {
    }

    /**
     * In one transaction: the lease (fresh token, owner, expiry), then what re-validation decided, the
     * job's caps, and the provider's gate — closed until a Retry-After, or full at the provider's
     * concurrency limit, counted across all instances under the gate row's lock. A closed or full
     * gate snoozes the job without spending an attempt; passing opens the attempt row.
     */
    public GatePass start(UUID jobId, long eventId, String worker, Duration leaseFor, Provider provider,
                          Duration fullDelay, Verdict verdict, Duration deferDelay) {
        return transactions.execute(tx -> {
            // The job's unpublished dispatch events first, then its row: the lock order of the relay,
            // finalize and requeue (which this transaction may call: snooze, caps).
            Optional<Lease> taken = jdbc.query("""
                    WITH waiting_events AS (
                        SELECT event_id FROM outbox
                         WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL FOR UPDATE)
                    UPDATE jobs j SET status = 'running', lease_token = ?, lease_owner = ?,
                                      lease_expires_at = now() + make_interval(secs => ?), updated_at = now()
                     WHERE (SELECT count(*) FROM waiting_events) >= 0 AND j.job_id = ? AND\s""" + MAY_START
                    + " RETURNING " + LEASE_COLUMNS,
                    JobLeases::lease, jobId, UUID.randomUUID(), worker, leaseFor.toMillis() / 1000.0, jobId, eventId)
                    .stream().findFirst();
            if (taken.isEmpty()) {
                return new NotLeased(whyNoLease(jobId, eventId));
            }
            Lease lease = taken.get();
            Instant now = clock.instant();
            if (verdict != null && !verdict.retry()) {
                return end(lease, verdict.category(), verdict.message());
            }
            if (lease.attempts() >= lease.maxAttempts()) {
                return end(lease, ErrorCategory.EXHAUSTED, "no attempts left: " + lease.attempts() + " of "
                        + lease.maxAttempts() + " used");
            }
            if (!now.isBefore(lease.expiresAt())) {
                return end(lease, ErrorCategory.EXPIRED, "lifetime ended at " + lease.expiresAt());
            }
            Instant wakeAt = null;
            String reason = null;
            if (verdict != null) {
                wakeAt = now.plus(deferDelay);
                reason = verdict.message();
            } else {
                Instant closedUntil = jdbc.queryForObject("""
                        INSERT INTO provider_gates (provider) VALUES (?)
                        ON CONFLICT (provider) DO UPDATE SET provider = EXCLUDED.provider
                        RETURNING CASE WHEN closed_until = '-infinity' THEN NULL ELSE closed_until END""",
                        (rs, i) -> instant(rs, 1), provider.name());
                if (closedUntil != null && closedUntil.isAfter(now)) {
                    wakeAt = closedUntil;
                    reason = "provider " + provider.name() + " gate closed until " + closedUntil;
                } else {
                    // A statement of its own, after the gate row's lock: its snapshot sees every call
                    // started by a transaction that held the lock before us.
                    Integer inFlight = jdbc.queryForObject("SELECT count(*) FROM jobs WHERE provider = ? AND status = 'submitting'",
                            Integer.class, provider.name());
                    if (inFlight != null && inFlight >= provider.maxConcurrency()) {
                        wakeAt = now.plus(fullDelay);
                        reason = "provider " + provider.name() + " at its concurrency limit " + provider.maxConcurrency();
                    }
                }
            }
            if (wakeAt != null) {
                if (wakeAt.isAfter(lease.expiresAt())) {
                    return end(lease, ErrorCategory.EXPIRED, reason + ", beyond the job's lifetime");
                }
                requeue(lease.jobId(), lease.token(), wakeAt, lease.unparseableStreak(),
                        verdict == null ? null : verdict.category().wire());
                return new Snoozed(wakeAt, reason);
            }
            int attempt = jdbc.queryForObject("""
                    WITH counted AS (
                        UPDATE jobs SET status = 'submitting', attempts = attempts + 1, adapter_revision = ?, updated_at = now()
                         WHERE job_id = ? AND lease_token = ? RETURNING job_id, attempts)
                    INSERT INTO attempts (job_id, attempt, lease_token, worker, adapter, adapter_revision, started_at)
                    SELECT job_id, attempts, ?, ?, ?, ?, ? FROM counted
                    RETURNING attempt""",
                    Integer.class, provider.revision(), lease.jobId(), lease.token(), lease.token(), worker, provider.name(),
                    provider.revision(), Timestamp.from(now));
            return new Submitting(lease, attempt);
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
    public boolean requeue(UUID jobId, UUID leaseToken, Instant at, int unparseableStreak, String lastCategory) {
        return requeueWhere(jobId, leaseToken, null, at, unparseableStreak, lastCategory);
    }

    /**
     * Back to {@code retry_wait} for a job no worker holds, only while it is in {@code fromStatus}
     * (reconciliation: the provider confirmed it never got the request, so a resubmit is safe).
     */
    public boolean requeueUnleased(UUID jobId, String fromStatus, Instant at, String lastCategory) {
        return requeueWhere(jobId, null, fromStatus, at, 0, lastCategory);
    }

    private boolean requeueWhere(UUID jobId, UUID token, String fromStatus, Instant at, int unparseableStreak, String lastCategory) {
        Boolean done = transactions.execute(tx -> {
            // Only while the lease is ours (checked, not locked: the job row lock comes second in the lock order).
            jdbc.update("""
                    DELETE FROM outbox o USING jobs j
                     WHERE o.job_id = ? AND o.event_type = 'dispatch' AND o.published_at IS NULL
                       AND j.job_id = o.job_id AND j.lease_token IS NOT DISTINCT FROM ?::uuid
                       AND (?::text IS NULL OR j.status = ?::text)""", jobId, token, fromStatus, fromStatus);
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs j SET status = 'retry_wait', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL,
                                      dispatched_at = NULL, next_attempt_at = ?, unparseable_streak = ?, updated_at = now(),
                                      next_check_at = NULL, provider_task = NULL
                      FROM (SELECT job_id, dispatched_at FROM jobs WHERE job_id = ? FOR UPDATE) old
                     WHERE j.job_id = old.job_id AND j.lease_token IS NOT DISTINCT FROM ?::uuid AND j.finalized_at IS NULL
                       AND (?::text IS NULL OR j.status = ?::text)
                    RETURNING j.tenant_id, j.attempts, old.dispatched_at IS NOT NULL AS held_slot""",
                    Timestamp.from(at), unparseableStreak, jobId, token, fromStatus, fromStatus).stream().findFirst();
            if (row.isEmpty()) {
                return false;
            }
            String tenant = releaseSlot(row.get());
            jdbc.update("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) VALUES (?, ?, 'dispatch', ?)",
                    jobId, tenant, Timestamp.from(at));
            statusEvent(jobId, tenant, "retry_wait", ((Number) row.get().get("attempts")).intValue(), lastCategory);
            return true;
        });
        return Boolean.TRUE.equals(done);
    }

    /**
     * A request that may or may not have reached the provider: {@code submission_unknown}, resolved by
     * asking the provider (reconciliation), never by blind resubmission. Lease and slot are released.
     */
    public boolean parkUnknown(UUID jobId, UUID leaseToken, String providerRequestId, Instant firstCheck) {
        Boolean done = transactions.execute(tx -> {
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs j SET status = 'submission_unknown', lease_token = NULL, lease_owner = NULL,
                                      lease_expires_at = NULL, dispatched_at = NULL, next_check_at = ?, checks = 0,
                                      provider_request_id = coalesce(?, j.provider_request_id), updated_at = now()
                      FROM (SELECT job_id, dispatched_at FROM jobs WHERE job_id = ? FOR UPDATE) old
                     WHERE j.job_id = old.job_id AND j.lease_token = ? AND j.finalized_at IS NULL
                    RETURNING j.tenant_id, j.attempts, old.dispatched_at IS NOT NULL AS held_slot""",
                    Timestamp.from(firstCheck), providerRequestId, jobId, leaseToken).stream().findFirst();
            if (row.isEmpty()) {
                return false;
            }
            String tenant = releaseSlot(row.get());
            statusEvent(jobId, tenant, "submission_unknown", ((Number) row.get().get("attempts")).intValue(),
                    ErrorCategory.AMBIGUOUS.wire());
            return true;
        });
        return Boolean.TRUE.equals(done);
    }

    /**
     * The provider accepted the task: {@code provider_pending} with its reference (a webhook finds the
     * job by it; the poller asks from {@code firstCheck} on); the slot stays held.
     */
    public boolean markPending(UUID jobId, UUID leaseToken, String providerTask, String providerRequestId, Instant firstCheck) {
        Boolean done = transactions.execute(tx -> {
            Optional<Map<String, Object>> row = jdbc.queryForList("""
                    UPDATE jobs SET status = 'provider_pending', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL,
                                    provider_task = ?, provider_request_id = coalesce(?, provider_request_id),
                                    next_check_at = ?, checks = 0, updated_at = now()
                     WHERE job_id = ? AND lease_token = ? AND finalized_at IS NULL
                    RETURNING tenant_id, attempts""", providerTask, providerRequestId, Timestamp.from(firstCheck),
                    jobId, leaseToken).stream().findFirst();
            row.ifPresent(r -> statusEvent(jobId, (String) r.get("tenant_id"), "provider_pending",
                    ((Number) r.get("attempts")).intValue(), null));
            return row.isPresent();
        });
        return Boolean.TRUE.equals(done);
    }

    /** Closes the attempt row with what this worker saw (kept even when the lease was lost meanwhile). */
    public void closeAttempt(UUID jobId, int attempt, UUID token, String outcome, AdapterResult result, long durationMs,
                             Instant nextAttemptAt, Boolean retryAfterUnderstood) {
        jdbc.update("""
                UPDATE attempts SET ended_at = now(), duration_ms = ?, outcome = ?, http_status = ?, provider_request_id = ?,
                                    error_category = ?, error_message = ?, retry_after = ?, retry_after_understood = ?,
                                    next_attempt_at = ?, response_excerpt = ?, billed_units = ?, billed_unit = ?
                 WHERE job_id = ? AND attempt = ? AND lease_token = ?""",
                durationMs, outcome, result.httpStatus(), result.providerRequestId(),
                result.category() == null ? null : result.category().wire(), result.message(), result.retryAfter(),
                retryAfterUnderstood,
                nextAttemptAt == null ? null : Timestamp.from(nextAttemptAt), result.excerpt(), result.billedAmount(),
                result.billedUnit(), jobId, attempt, token);
    }

    /**
     * A 429 closes the provider's gate until {@code until} for every job (never shortens a longer
     * close). The provider's dispatch events not yet relayed become due at the reopening, so a
     * backlog waits in the outbox instead of cycling through the broker and the workers only to be
     * snoozed one by one.
     *
     * @return how many waiting dispatch events were moved to the reopening
     */
    public int closeGate(String provider, Instant until, String reason) {
        jdbc.update("""
                INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES (?, ?, ?, now())
                ON CONFLICT (provider) DO UPDATE
                   SET closed_until = greatest(provider_gates.closed_until, EXCLUDED.closed_until),
                       closed_reason = EXCLUDED.closed_reason, updated_at = now()""",
                provider, Timestamp.from(until), reason);
        // Outbox rows before job rows, the lock order of the relay and finalize.
        Integer moved = transactions.execute(tx -> jdbc.queryForObject("""
                WITH moved AS (
                    UPDATE outbox o SET available_at = ?
                      FROM jobs j
                     WHERE o.published_at IS NULL AND o.event_type = 'dispatch' AND o.available_at < ?
                       AND j.job_id = o.job_id AND j.provider = ? AND j.finalized_at IS NULL
                    RETURNING o.job_id),
                shown AS (
                    UPDATE jobs j SET next_attempt_at = ?
                      FROM moved m WHERE j.job_id = m.job_id AND j.status = 'retry_wait' AND j.next_attempt_at < ?)
                SELECT count(*) FROM moved""",
                Integer.class, Timestamp.from(until), Timestamp.from(until), provider, Timestamp.from(until), Timestamp.from(until)));
        return moved == null ? 0 : moved;
    }

    /**
     * The job left its dispatch slot in the statement that returned {@code row} (dispatched_at cleared):
     * the running counters follow in the same transaction, so they always equal the jobs holding a slot.
     *
     * @return the job's tenant
     */
    private String releaseSlot(Map<String, Object> row) {
        String tenant = (String) row.get("tenant_id");
        if (Boolean.TRUE.equals(row.get("held_slot"))) {
            jdbc.update("UPDATE tenant_accounts SET running_jobs = running_jobs - 1 WHERE tenant_id = ?", tenant);
            jdbc.update("UPDATE dispatch_window SET running = running - 1 WHERE id = 1");
        }
        return tenant;
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
