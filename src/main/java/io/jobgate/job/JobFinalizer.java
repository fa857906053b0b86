package io.jobgate.job;

import java.util.UUID;

/**
 * The one way a job becomes terminal, shared by worker, webhook, poller, sweeper, cancel and
 * operator repair: the {@link JobTransitions} event for the terminal state (finalized once,
 * reservations released, refund at most once — the ledger's unique index on (job, refund) makes a
 * second one impossible). A second call for the same job changes nothing and reports so.
 */
public final class JobFinalizer {

    private final JobTransitions transitions;

    public JobFinalizer(JobTransitions transitions) {
        this.transitions = transitions;
    }

    /**
     * What ends a job: its terminal state, error category and message, the refund, and for a
     * success the result record (JSON: output location, media type, bytes, digest).
     */
    public record Outcome(JobStatus status, String errorCategory, String errorMessage, RefundPolicy refund,
                          String resultJson, String cause) {
        public Outcome {
            if (!status.terminal()) {
                throw new IllegalArgumentException(status + " is not terminal");
            }
        }

        public Outcome(JobStatus status, String errorCategory, String errorMessage, RefundPolicy refund, String resultJson) {
            this(status, errorCategory, errorMessage, refund, resultJson, null);
        }

        /**
         * The same ending, caused by {@code cause}: a job that ran out of attempts or lifetime right
         * after a 429 stays {@code exhausted}/{@code expired}, and its metrics count it as 429-caused.
         */
        public Outcome causedBy(String cause) {
            return new Outcome(status, errorCategory, errorMessage, refund, resultJson, cause);
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
        return finalizeJobIf(jobId, new JobTransitions.Guard(leaseToken, null, onlyFrom, null), outcome);
    }

    /**
     * As {@link #finalizeJob(UUID, UUID, Outcome)}, closing the worker's attempt {@code closing} in the
     * same statement as the ending's other writes (nothing is written when the lease was lost).
     */
    public boolean finalizeJob(UUID jobId, UUID leaseToken, Outcome outcome, JobTransitions.AttemptClose closing) {
        return finalizeJobIf(jobId, JobTransitions.Guard.lease(leaseToken), outcome, closing);
    }

    /** As {@link #finalizeJob(UUID, Outcome)}, only while {@code guard} holds. */
    public boolean finalizeJobIf(UUID jobId, JobTransitions.Guard guard, Outcome outcome) {
        return finalizeJobIf(jobId, guard, outcome, null);
    }

    /** As {@link #finalizeJobIf(UUID, JobTransitions.Guard, Outcome)}, closing the attempt {@code closing} in the same statement. */
    public boolean finalizeJobIf(UUID jobId, JobTransitions.Guard guard, Outcome outcome, JobTransitions.AttemptClose closing) {
        int refund = outcome.refund() == RefundPolicy.NONE ? 0
                : outcome.status() == JobStatus.CANCELLED ? cancelledRefundPercent : failedRefundPercent;
        return transitions.apply(jobId, JobTransitions.Event.ending(outcome.status()), guard,
                JobTransitions.Change.ending(outcome.errorCategory(), outcome.errorMessage(), outcome.resultJson(), refund,
                        outcome.cause()), null, closing)
                .isPresent();
    }
}
