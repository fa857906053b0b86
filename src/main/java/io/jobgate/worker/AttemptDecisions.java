package io.jobgate.worker;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.adapter.Backoff;
import io.jobgate.adapter.RateLimitWait;
import io.jobgate.canary.Canaries;
import io.jobgate.job.AttemptCaps;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.ProviderGates;
import io.jobgate.provider.Provider;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rules that decide, under its lease, where a job goes after an attempt's answer: finalized
 * (succeeded, or failed by its category or its caps), waiting on its provider's task, parked as
 * unknown, or waiting for its next attempt (backoff, Retry-After, a canary candidate's failure). Each
 * decision is written here, in the recorder's transaction, with the attempt's close
 * ({@link OutcomeRecorder}); a write that finds the lease gone decides {@code lease_lost}.
 */
public final class AttemptDecisions {

    private static final Logger LOG = LoggerFactory.getLogger(AttemptDecisions.class);

    /** Where a job waits on an attempt whose lease ran out during its call (the sweeper's release). */
    private static final Set<JobStatus> LATE_FINISH_FROM = Set.of(JobStatus.SUBMISSION_UNKNOWN, JobStatus.RETRY_WAIT);

    /**
     * What was decided: the attempt's outcome, the job's next state (for the attempt's log line), when
     * its next attempt is due.
     *
     * @param late an answer whose lease had run out, still made the job's (finalized, or its task adopted)
     */
    record Decision(String outcome, String next, Instant at, Boolean retryAfterUnderstood, boolean late) {
        Decision(String outcome, String next, Instant at) {
            this(outcome, next, at, null, false);
        }

        Decision(String outcome, String next, Instant at, Boolean retryAfterUnderstood) {
            this(outcome, next, at, retryAfterUnderstood, false);
        }

        Decision with(Boolean understood) {
            return new Decision(outcome, next, at, understood, late);
        }
    }

    private final JobLeases leases;
    private final JobFinalizer finalizer;
    private final ProviderGates gates;
    private final Canaries canaries;
    private final Clock clock;
    private final Backoff backoff;
    private final Duration firstCheck;

    /**
     * @param gates      closed for a provider's whole fleet by a 429 of a stable revision
     * @param canaries   a candidate's held output and its own gate
     * @param backoff    the delay before a retry (capped exponential, full jitter)
     * @param firstCheck when a task the provider accepted (or an unknown submission) is first looked up
     */
    public AttemptDecisions(JobLeases leases, JobFinalizer finalizer, ProviderGates gates, Canaries canaries, Clock clock,
                            Backoff backoff, Duration firstCheck) {
        this.leases = leases;
        this.finalizer = finalizer;
        this.gates = gates;
        this.canaries = canaries;
        this.clock = clock;
        this.backoff = backoff;
        this.firstCheck = firstCheck;
    }

    /**
     * Decides and writes the job's move and the attempt's close (the caller's transaction holds both).
     *
     * @param result   the adapter's answer, a refused output already turned into its failure
     * @param promoted the promoted output's record, for a success
     * @param held     a canary candidate's checked output kept in quarantine (never the job's)
     * @param lost     the output was promoted under a newer lease (superseded)
     */
    Decision decide(Worker.Called called, AdapterResult result, String promoted, String held, boolean lost) {
        Lease lease = called.started().lease();
        int attempt = called.started().attempt();
        long durationMs = called.durationMs();
        Decision decided;
        if (result.succeeded() && held != null) {
            // The job's output comes from an approved revision: a new attempt now, on the stable one.
            decided = candidateOutput(lease);
            leases.closeAttempt(lease.jobId(), attempt, lease.token(), decided.outcome, result, durationMs, decided.at, null);
            canaries.heldOutput(lease.jobId(), attempt, held);
            return decided;
        } else if (result.succeeded() && !lost) {
            // The attempt is closed as succeeded by the finalize's own statement of writes, before its
            // counter rows (still the transaction's last writes before its commit); a lease lost
            // meanwhile writes nothing there, and the attempt is closed as lost below.
            if (finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.succeeded(promoted),
                    leases.attemptClose(attempt, lease.token(), "succeeded", result, durationMs, null, null))) {
                return new Decision("succeeded", "succeeded", null);
            }
            // The lease ran out during the call: the answer is still the job's while it waits on this
            // attempt (no newer one started), through the one finalize, billed once.
            if (finalizer.finalizeJobIf(lease.jobId(), JobTransitions.Guard.onAttempt(attempt, LATE_FINISH_FROM),
                    JobFinalizer.Outcome.succeeded(promoted),
                    leases.attemptClose(attempt, lease.token(), "late_succeeded", result, durationMs, null, null))) {
                return new Decision("late_succeeded", "succeeded", null, null, true);
            }
            decided = new Decision("lease_lost", "none", null);
        } else if (result.succeeded()) {
            decided = new Decision("lease_lost", "none", null);
        } else if (result.pending()) {
            decided = pending(lease, result, attempt);
        } else if (called.started().holdsOutput()) {
            decided = candidateFailed(lease, result, attempt, called.started());
        } else {
            decided = failedOrRetry(lease, result, attempt, called.started().provider());
        }
        leases.closeAttempt(lease.jobId(), attempt, lease.token(), decided.outcome, result, durationMs, decided.at,
                decided.retryAfterUnderstood);
        return decided;
    }

    /** The provider accepted the task: the job waits on it, first looked up after {@code firstCheck}. */
    private Decision pending(Lease lease, AdapterResult result, int attempt) {
        Instant check = clock.instant().plus(firstCheck);
        if (leases.markPending(lease.jobId(), lease.token(), result.providerTask(), result.providerRequestId(),
                result.providerState(), check)) {
            return new Decision("pending", "provider_pending", null);
        }
        if (result.providerTask() != null && leases.adoptPending(lease.jobId(), attempt, result.providerTask(),
                result.providerRequestId(), result.providerState(), check)) {
            return new Decision("late_pending", "provider_pending", null, null, true);
        }
        return new Decision("lease_lost", "none", null);
    }

    /** Fail now, park as unknown, or wait for a retry (within the attempt and lifetime caps). */
    private Decision failedOrRetry(Lease lease, AdapterResult result, int attempt, Provider provider) {
        ErrorCategory category = result.category();
        switch (category.handling()) {
            case FAIL -> {
                return ended(lease, category, result.message());
            }
            case UNKNOWN -> {
                boolean mine = leases.parkUnknown(lease.jobId(), lease.token(), result.providerRequestId(), clock.instant().plus(firstCheck));
                return new Decision(mine ? "submission_unknown" : "lease_lost", mine ? "submission_unknown" : "none", null);
            }
            default -> {
                int streak = 0;
                if (category == ErrorCategory.UNPARSEABLE_RESPONSE) {
                    AttemptLog.unparseable(lease.jobId().toString(), result.excerpt());
                    streak = lease.unparseableStreak() + 1;
                    if (streak >= 2) {
                        return ended(lease, category, "two unparseable replies in a row; last: " + result.message());
                    }
                }
                Instant now = clock.instant();
                Instant at = now.plus(backoff.delay(attempt));
                Boolean understood = null;
                if (category == ErrorCategory.RATE_LIMITED) {
                    RateLimitWait wait = RateLimitWait.after(result.retryAfter(), now, backoff.delay(attempt),
                            provider.rateLimitBackoff());
                    at = wait.until(); // the provider's word is the minimum delay
                    understood = wait.headerUnderstood();
                    gates.close(provider.name(), at, "HTTP 429 for job " + lease.jobId());
                }
                if (Boolean.FALSE.equals(understood)) {
                    LOG.warn("job {} attempt {}: provider {} sent a Retry-After that cannot be read; waiting its rate-limit backoff of {} s",
                            lease.jobId(), attempt, provider.name(), provider.rateLimitBackoff().toSeconds());
                }
                Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(attempt, lease.maxAttempts(), lease.expiresAt(),
                        at, category.wire() + " (" + result.message() + ")");
                if (capped.isPresent()) {
                    return ended(lease, capped.get().category(), capped.get().message(),
                            category == ErrorCategory.RATE_LIMITED ? category.wire() : null).with(understood);
                }
                boolean mine = leases.requeue(lease.jobId(), lease.token(), at, streak, category.wire());
                return new Decision(mine ? "retry_wait" : "lease_lost", mine ? "retry_wait" : "none", mine ? at : null, understood);
            }
        }
    }

    /**
     * A canary candidate's output was checked and kept in quarantine: the job is due again now, for an
     * attempt on the stable revision (its last ran on the candidate), within its caps.
     */
    private Decision candidateOutput(Lease lease) {
        Instant now = clock.instant();
        Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(lease.attempts() + 1, lease.maxAttempts(), lease.expiresAt(),
                now, "a canary candidate's output is not the job's");
        if (capped.isPresent()) {
            Decision ended = ended(lease, capped.get().category(), capped.get().message());
            return new Decision(ended.outcome.equals("failed") ? "candidate_output" : ended.outcome, ended.next, null);
        }
        boolean mine = leases.requeue(lease.jobId(), lease.token(), now, 0, null);
        return new Decision(mine ? "candidate_output" : "lease_lost", mine ? "retry_wait" : "none", mine ? now : null);
    }

    /**
     * A canary candidate's attempt failed, whatever the category ({@code invalid_output}, a refusal, a 429, a
     * timeout after sending included): the failure is the candidate's, recorded on its attempt for its gates,
     * never its job's. The job is due now for an attempt on the stable revision (its last ran on the
     * candidate; the candidate never takes a job's last attempt), within its lifetime. A 429 closes the
     * candidate's own gate until its Retry-After, not the provider's: stable attempts are not held up. A
     * call that may have reached the provider is not looked up first: the candidate's task, if the provider
     * has it, can only ever give an output that is held, never the job's. The job's unparseable streak is
     * the stable revision's and is left as it was.
     */
    private Decision candidateFailed(Lease lease, AdapterResult result, int attempt, Worker.Started started) {
        ErrorCategory category = result.category();
        Instant now = clock.instant();
        Boolean understood = null;
        if (category == ErrorCategory.RATE_LIMITED) {
            RateLimitWait wait = RateLimitWait.after(result.retryAfter(), now, backoff.delay(attempt),
                    started.provider().rateLimitBackoff());
            understood = wait.headerUnderstood();
            canaries.closeCandidate(started.revision(), wait.until(), "HTTP 429 for job " + lease.jobId());
        } else if (category == ErrorCategory.UNPARSEABLE_RESPONSE) {
            AttemptLog.unparseable(lease.jobId().toString(), result.excerpt());
        }
        Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(attempt, lease.maxAttempts(), lease.expiresAt(), now,
                "canary candidate's " + category.wire() + " (" + result.message() + ")");
        if (capped.isPresent()) {
            return ended(lease, capped.get().category(), capped.get().message()).with(understood);
        }
        boolean mine = leases.requeue(lease.jobId(), lease.token(), now, lease.unparseableStreak(), category.wire());
        return new Decision(mine ? "retry_wait" : "lease_lost", mine ? "retry_wait" : "none", mine ? now : null, understood);
    }

    private Decision ended(Lease lease, ErrorCategory category, String message) {
        return ended(lease, category, message, null);
    }

    /** @param cause what used the caps up, when it was a 429 (the metrics' 429-caused failures) */
    private Decision ended(Lease lease, ErrorCategory category, String message, String cause) {
        boolean mine = finalizer.finalizeJob(lease.jobId(), lease.token(),
                JobFinalizer.Outcome.failed(category.wire(), message).causedBy(cause));
        return new Decision(mine ? "failed" : "lease_lost", mine ? "failed:" + category.wire() : "none", null);
    }
}
