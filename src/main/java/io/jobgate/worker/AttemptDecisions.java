package io.jobgate.worker;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.adapter.Backoff;
import io.jobgate.canary.Canaries;
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.PoolPlacements;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
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
    private final Canaries canaries;
    private final Clock clock;
    private final Backoff backoff;
    private final Duration firstCheck;
    private final PoolMoves moves;

    /**
     * @param leases     the job's one door: every write of a decision, under the lease
     * @param canaries   a candidate's own gate, closed by its 429
     * @param backoff    the delay before a retry (capped exponential, full jitter)
     * @param firstCheck when a task the provider accepted (or an unknown submission) is first looked up
     */
    AttemptDecisions(JobLeases leases, Canaries canaries, Clock clock, Backoff backoff, Duration firstCheck, PoolMoves moves) {
        this.moves = moves;
        this.leases = leases;
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
            decided = apply(called.started(), decide(called.started(), new Evidence.HeldOutput(held)), "candidate_output", null);
            leases.closeAttempt(lease, attempt, decided.outcome, seen(result, durationMs), decided.at, null);
            leases.recordHeld(lease.jobId(), attempt, held);
            return decided;
        } else if (result.succeeded() && !lost) {
            // The attempt is closed as succeeded by the finalize's own statement of writes, before its
            // counter rows (still the transaction's last writes before its commit); a lease lost
            // meanwhile writes nothing there, and the attempt is closed as lost below.
            if (leases.succeed(lease, attempt, promoted, seen(result, durationMs))) {
                moves.ended(called.started(), null, null);
                return new Decision("succeeded", "succeeded", null);
            }
            // The lease ran out during the call: the answer is still the job's while it waits on this
            // attempt (no newer one started), through the one finalize, billed once.
            if (leases.succeedLate(lease, attempt, promoted, seen(result, durationMs))) {
                return new Decision("late_succeeded", "succeeded", null, null, true);
            }
            decided = new Decision("lease_lost", "none", null);
        } else if (result.succeeded()) {
            decided = new Decision("lease_lost", "none", null);
        } else if (result.pending()) {
            decided = pending(lease, result, attempt);
            if (decided.outcome.equals("pending")) {
                moves.ended(called.started(), null, null); // the member accepted the task: it works (a probe decided)
            }
        } else {
            if (result.category() == ErrorCategory.UNPARSEABLE_RESPONSE) {
                AttemptLog.unparseable(lease.jobId().toString(), result.excerpt());
            }
            // Counted against its member first: a failure that cools the member down keeps this retry off it too.
            moves.ended(called.started(), result.category(), result.message());
            Fate fate = decide(called.started(), new Evidence.Failure(result.category(), result.message(), result.retryAfter()));
            PoolMoves.Move placed = moved(called.started(), fate, result.category());
            // Placed on its own member: it stays (no other member it may use can take it, or no failover for its tenant).
            PoolMoves.Move move = placed != null && placed.leaves(lease) ? placed : null;
            if (move != null) {
                fate = Outcomes.movedTo(fate, move.at(), standing(called.started()));
            }
            decided = apply(called.started(), fate, "retry_wait", result.providerRequestId(), fate instanceof Fate.Retry ? move : null,
                    placed == null ? null : placed.waits());
            if (move != null && decided.outcome.equals("retry_wait")) {
                moves.log(lease, attempt, move, "after " + result.category().wire());
            }
        }
        leases.closeAttempt(lease, attempt, decided.outcome, seen(result, durationMs), decided.at, decided.retryAfterUnderstood);
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

    /**
     * Where a pool job's retry goes after a definite failure, when the rulebook lets it be placed again
     * ({@link PoolPlacements#mayMove}): maybe another member.
     */
    private PoolMoves.Move moved(Worker.Started started, Fate fate, ErrorCategory category) {
        if (!PoolPlacements.mayMove(fate, category, started.lease().pool() != null, started.role())) {
            return null;
        }
        // A 429 closes the member's gate (after this placement): placed as closed until its Retry-After.
        java.time.Instant closing = fate.rateLimit() == null || fate.rateLimit().candidateGate() ? null : fate.rateLimit().until();
        return moves.afterFailure(started.lease(), started.attempt(), backoff.delay(started.attempt()), closing).orElse(null);
    }

    private static Standing standing(Worker.Started started) {
        Lease lease = started.lease();
        return new Standing(started.attempt(), lease.maxAttempts(), lease.expiresAt(), lease.unparseableStreak());
    }

    /** The rulebook's decision on an attempt's evidence, the role being the one its start chose. */
    private Fate decide(Worker.Started started, Evidence evidence) {
        Lease lease = started.lease();
        return Outcomes.decide(evidence, started.role(),
                standing(started),
                new Waits(backoff.delay(started.attempt()), started.provider().rateLimitBackoff()), clock.instant());
    }

    /**
     * Writes a decision under the lease: a 429's gate closed (the provider's, or a candidate's own), then the job
     * failed, parked as unknown, or back to {@code retry_wait}.
     *
     * @param retried   the attempt's outcome when the job is due again ({@code retry_wait}, {@code candidate_output})
     * @param requestId the provider's request id, kept for the lookup of an unknown submission
     */
    private Decision apply(Worker.Started started, Fate fate, String retried, String requestId) {
        return apply(started, fate, retried, requestId, null, null);
    }

    /**
     * As above; {@code move}: a pool job's retry moved to another member (its provider and due time), or null;
     * {@code waits}: what a pool job that stays says while it waits for its member's closed gate, or null.
     */
    private Decision apply(Worker.Started started, Fate fate, String retried, String requestId, PoolMoves.Move move, String waits) {
        Lease lease = started.lease();
        Fate.RateLimit rateLimit = fate.rateLimit();
        Boolean understood = rateLimit == null ? null : rateLimit.headerUnderstood();
        if (rateLimit != null) {
            closeGate(started, rateLimit);
        }
        if (fate instanceof Fate.Fail fail) {
            Decision ended = ended(lease, fail.category(), fail.message(), fail.cause()).with(understood);
            // A held output stays the candidate's attempt's outcome even when its job ends on its caps.
            return retried.equals("candidate_output") && ended.outcome.equals("failed")
                    ? new Decision("candidate_output", ended.next, null) : ended;
        }
        if (fate instanceof Fate.Park) {
            boolean mine = leases.parkUnknown(lease.jobId(), lease.token(), requestId, clock.instant().plus(firstCheck));
            return new Decision(mine ? "submission_unknown" : "lease_lost", mine ? "submission_unknown" : "none", null);
        }
        Fate.Retry retry = (Fate.Retry) fate;
        Instant at = move == null ? retry.at() : move.at();
        boolean mine = leases.requeueOn(lease.jobId(), lease.token(), move == null ? null : move.provider(), at, retry.unparseableStreak(),
                retry.last() == null ? null : retry.last().wire(), move == null ? waits : null);
        return new Decision(mine ? retried : "lease_lost", mine ? "retry_wait" : "none", mine ? at : null, understood);
    }

    /**
     * A stable revision's 429 closes the provider's gate for its whole fleet; a canary candidate's closes the
     * candidate's own, so stable attempts are not held up.
     */
    private void closeGate(Worker.Started started, Fate.RateLimit rateLimit) {
        Lease lease = started.lease();
        if (rateLimit.candidateGate()) {
            canaries.closeCandidate(started.revision(), rateLimit.until(), "HTTP 429 for job " + lease.jobId());
        } else {
            leases.closeGate(started.provider().name(), rateLimit.until(), "HTTP 429 for job " + lease.jobId());
        }
        if (Boolean.FALSE.equals(rateLimit.headerUnderstood())) {
            LOG.warn("job {} attempt {}: provider {} sent a Retry-After that cannot be read; waiting its rate-limit backoff of {} s",
                    lease.jobId(), started.attempt(), started.provider().name(), started.provider().rateLimitBackoff().toSeconds());
        }
    }

    /** @param cause what used the caps up, when it was a 429 (the metrics' 429-caused failures) */
    private Decision ended(Lease lease, ErrorCategory category, String message, String cause) {
        boolean mine = leases.fail(lease.jobId(), lease.token(), category, message, cause);
        return new Decision(mine ? "failed" : "lease_lost", mine ? "failed:" + category.wire() : "none", null);
    }

    /** What the worker saw of its attempt, as its row keeps it. */
    private static JobLeases.AttemptSeen seen(AdapterResult result, long durationMs) {
        return new JobLeases.AttemptSeen(result.httpStatus(), result.providerRequestId(), result.category(), result.message(),
                result.retryAfter(), result.excerpt(), result.billedAmount(), result.billedUnit(), durationMs);
    }
}
