package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The one way a job becomes terminal. In one transaction: set the terminal state and
 * {@code finalized_at} only if not yet set, release the admission reservations, and refund at
 * most once (the ledger's unique index on (job, refund) makes a second refund impossible).
 * A second call for the same job changes nothing and reports so.
 */
public final class JobFinalizer {

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final Clock clock;

    public JobFinalizer(JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
    }

    /**
     * What ends a job: its terminal state, error category and message, the refund, and for a
     * success the result record (JSON: output location, media type, bytes, digest).
     */
    public record Outcome(JobStatus status, String errorCategory, String errorMessage, RefundPolicy refund,
                          String resultJson) {
        public Outcome {
            if (!status.terminal()) {
                throw new IllegalArgumentException(status + " is not terminal");
            }
        }

        public Outcome(JobStatus status, String errorCategory, String errorMessage, RefundPolicy refund) {
            this(status, errorCategory, errorMessage, refund, null);
        }

        /** A failure the tenant does not pay for. */
        public static Outcome failed(String category, String message) {
            return new Outcome(JobStatus.FAILED, category, message, RefundPolicy.FULL, null);
        }

        public static Outcome succeeded(String resultJson) {
            return new Outcome(JobStatus.SUCCEEDED, null, null, RefundPolicy.NONE, resultJson);
        }
    }

    /**
     * NONE: the tenant pays (success). FULL: the tenant is refunded the share the settings give for
     * the terminal state ({@code jobgate.refunds.failed-percent}, {@code .cancelled-percent}; 100 by default).
     */
    public enum RefundPolicy {
        NONE, FULL
    }

    private volatile int failedRefundPercent = 100;
    private volatile int cancelledRefundPercent = 100;

    /** Partial refunds: the percentage of a job's cost given back when it fails or is cancelled. */
    public JobFinalizer refunding(int failedPercent, int cancelledPercent) {
        this.failedRefundPercent = failedPercent;
        this.cancelledRefundPercent = cancelledPercent;
        return this;
    }

    /** @return true if this call finalized the job, false if it was already terminal */
    public boolean finalizeJob(UUID jobId, Outcome outcome) {
        return finalizeJob(jobId, null, outcome);
    }

    /**
     * As {@link #finalizeJob(UUID, Outcome)}, but only while {@code leaseToken} (when given) is the
     * job's current lease: a worker whose lease ended changes nothing.
     *
     * @return true if this call finalized the job
     */
    public boolean finalizeJob(UUID jobId, UUID leaseToken, Outcome outcome) {
        return finalizeJob(jobId, leaseToken, null, outcome);
    }

    /**
     * As {@link #finalizeJob(UUID, UUID, Outcome)}, and only while the job is in one of
     * {@code onlyFrom} (when given): evidence about a provider task applies to a job still waiting on it.
     */
    public boolean finalizeJob(UUID jobId, UUID leaseToken, java.util.Set<JobStatus> onlyFrom, Outcome outcome) {
        String[] from = onlyFrom == null ? null : onlyFrom.stream().map(JobStatus::wire).toArray(String[]::new);
        Boolean done = transactions.execute(tx -> {
            Instant now = clock.instant();
            // Lock order shared with the relay (outbox row, then job) and admission (gateway row, then
            // tenant row): no deadlock among the three. A dispatch not yet published is moot now.
            // A lease-bound finalize drops dispatch events only while the lease is ours (checked, not locked).
            jdbc.update("""
                    DELETE FROM outbox o USING jobs j
                     WHERE o.job_id = ? AND o.event_type = 'dispatch' AND o.published_at IS NULL
                       AND j.job_id = o.job_id AND (?::uuid IS NULL OR j.lease_token = ?::uuid)""",
                    jobId, leaseToken, leaseToken);
            Optional<Map<String, Object>> ended = jdbc.queryForList("""
                    UPDATE jobs j SET status = ?, error_category = ?, error_message = ?, finalized_at = ?, updated_at = ?,
                                      dispatched_at = NULL, lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL,
                                      next_attempt_at = NULL, result = coalesce(?::jsonb, j.result)
                      FROM (SELECT job_id, dispatched_at FROM jobs WHERE job_id = ? FOR UPDATE) old
                     WHERE j.job_id = old.job_id AND j.finalized_at IS NULL AND (?::uuid IS NULL OR j.lease_token = ?::uuid)
                       AND (?::text[] IS NULL OR j.status = ANY (?::text[]))
                    RETURNING j.tenant_id, j.source_bytes, j.cost_micros, j.attempts,
                              old.dispatched_at IS NOT NULL AS held_slot""",
                    outcome.status().wire(), outcome.errorCategory(), outcome.errorMessage(), Timestamp.from(now),
                    Timestamp.from(now), outcome.resultJson(), jobId, leaseToken, leaseToken, from, from).stream().findFirst();
            if (ended.isEmpty()) {
                return false;
            }
            String tenant = (String) ended.get().get("tenant_id");
            long bytes = ((Number) ended.get().get("source_bytes")).longValue();
            long cost = ((Number) ended.get().get("cost_micros")).longValue();
            int attempts = ((Number) ended.get().get("attempts")).intValue();
            int slot = Boolean.TRUE.equals(ended.get().get("held_slot")) ? 1 : 0;
            jdbc.update("UPDATE gateway_capacity SET in_flight = in_flight - 1 WHERE id = 1");
            jdbc.update("UPDATE tenant_accounts SET open_jobs = open_jobs - 1, queued_bytes = queued_bytes - ?, "
                    + "running_jobs = running_jobs - ? WHERE tenant_id = ?", bytes, slot, tenant);
            if (slot == 1) {
                jdbc.update("UPDATE dispatch_window SET running = running - 1 WHERE id = 1");
            }
            long refund = outcome.refund() == RefundPolicy.NONE ? 0 : Math.multiplyExact(cost,
                    (long) (outcome.status() == JobStatus.CANCELLED ? cancelledRefundPercent : failedRefundPercent)) / 100;
            if (refund > 0) {
                // The debit's metered units go back in the same share.
                jdbc.update("""
                        INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, reference, created_at, units, unit)
                        SELECT ?, ?, 'refund', ?, ?, ?, -d.units * ? / ?, d.unit FROM ledger d
                         WHERE d.job_id = ? AND d.entry_type = 'debit'
                        ON CONFLICT (job_id, entry_type) WHERE entry_type IN ('debit', 'refund') DO NOTHING""",
                        tenant, jobId, refund, outcome.errorCategory(), Timestamp.from(now), refund, cost, jobId);
            }
            // Followers learn the end from the status event.
            jdbc.update("""
                    INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, created_at)
                    VALUES (?, ?, 'status', jsonb_build_object('status', ?::text, 'attempt', ?::int,
                            'error_category', ?::text), ?, ?)""",
                    jobId, tenant, outcome.status().wire(), attempts, outcome.errorCategory(), Timestamp.from(now),
                    Timestamp.from(now));
            return true;
        });
        return Boolean.TRUE.equals(done);
    }
}
