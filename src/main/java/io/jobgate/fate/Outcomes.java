package io.jobgate.fate;

import io.jobgate.adapter.RateLimitWait;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.RevisionRole;
import java.time.Instant;
import java.util.Optional;

/**
 * What evidence means for a job: the one place its rules are written. Pure (no clock, no I/O): the caller
 * gives the evidence, the attempt's revision role, where the job stands and the waits it drew, and applies the
 * {@link Fate} it gets back. Rules, in the order they are asked:
 * <ul>
 *   <li>A category that {@link ErrorCategory.Handling#FAIL fails} fails a stable attempt's job at once; one that
 *       is {@link ErrorCategory.Handling#UNKNOWN unknown} parks it ({@code submission_unknown}).</li>
 *   <li>A retryable failure waits the backoff; a 429 waits its {@code Retry-After} (the provider's word is the
 *       minimum) and closes the provider's gate; a second unparseable reply in a row fails the job. Whichever
 *       source brought it: the worker's call, a lookup, a webhook.</li>
 *   <li>A canary candidate's evidence is never the job's: its output is held, its failure recorded on it, and the
 *       job is due now for an attempt on the stable revision; its 429 closes the candidate's own gate. The stable
 *       revision's unparseable streak is left as it was.</li>
 *   <li>A dispatch the broker dead-lettered before any attempt started from it goes out again, twice at most
 *       ({@link #DEAD_LETTERS_GIVEN_BACK}); the third time the job fails as {@code dead_lettered}. A gateway killed with
 *       the message in its consumers' buffers counts deliveries no worker saw; a poison message still ends.</li>
 *   <li>Every new attempt is within the caps ({@link #withinCaps}): none beyond {@code max_attempts}, none starting
 *       at or after the lifetime's end. A lost lease and a deferred start too.</li>
 * </ul>
 */
public final class Outcomes {

    /** A job's dispatches given back after the broker dead-lettered them; the next dead letter fails the job. */
    public static final int DEAD_LETTERS_GIVEN_BACK = 2;

    private Outcomes() {
    }

    /**
     * @param role     the revision the evidence is about ran as (a start's: the stable one)
     * @param standing where the job stands against its caps
     * @param waits    the durations drawn for this decision
     */
    public static Fate decide(Evidence evidence, RevisionRole role, Standing standing, Waits waits, Instant now) {
        if (evidence instanceof Evidence.Failure failure) {
            return role == RevisionRole.CANDIDATE ? candidateFailed(failure, standing, waits, now) : failed(failure, standing, waits, now);
        }
        if (evidence instanceof Evidence.NotAtProvider absent) {
            if (role == RevisionRole.CANDIDATE) {
                return withinCaps(standing, now, "a canary candidate's task was lost: " + absent.why(),
                        new Fate.Retry(now, standing.unparseableStreak(), null, null));
            }
            Instant at = now.plus(waits.backoff());
            return withinCaps(standing, at, absent.why(), new Fate.Retry(at, 0, ErrorCategory.AMBIGUOUS, null));
        }
        if (evidence instanceof Evidence.Output output) {
            return new Fate.Succeed(output.record());
        }
        if (evidence instanceof Evidence.TaskRunning running) {
            return running.wasUnknown() ? new Fate.TaskFound(now.plus(waits.firstCheck()), running.task(), running.state())
                    : new Fate.CheckAgain(now.plus(waits.nextCheck()), "provider still working");
        }
        if (evidence instanceof Evidence.NoAnswer none) {
            return new Fate.CheckAgain(none.until() != null ? none.until() : now.plus(waits.nextCheck()), none.why());
        }
        if (evidence instanceof Evidence.LookupRateLimited limited) {
            // Without a readable Retry-After: the job's next check, or the provider's rate-limit pause for a header
            // that cannot be read. A candidate's 429 closes the candidate only: the stable revision's jobs go on.
            RateLimitWait wait = RateLimitWait.after(limited.retryAfter(), now, waits.nextCheck(), waits.rateLimitBackoff());
            boolean candidate = role == RevisionRole.CANDIDATE;
            return new Fate.CheckAgain(wait.until(), (candidate ? "canary candidate rate limited" : "rate limited")
                    + ": asked again at " + wait.until(), new Fate.RateLimit(wait.until(), wait.headerUnderstood(), candidate));
        }
        if (evidence instanceof Evidence.HeldOutput) {
            return withinCaps(standing, now, "a canary candidate's output is not the job's",
                    new Fate.Retry(now, standing.unparseableStreak(), null, null));
        }
        if (evidence instanceof Evidence.LeaseEnded ended) {
            if (ended.sent() && !ended.resubmitSafe()) {
                return new Fate.Park(); // looked up first: a resubmit could render and bill twice
            }
            Fate next = withinCaps(standing, now, "lease " + ended.why(),
                    new Fate.Retry(now, 0, ended.sent() ? ErrorCategory.AMBIGUOUS : null, null));
            // With no attempt left, a request that was sent may still be answered (late, or to a lookup): it is parked,
            // not failed blind. One never sent can bring nothing back: the job ends now, not on a retry that never comes.
            return next instanceof Fate.Fail && ended.sent() ? new Fate.Park() : next;
        }
        if (evidence instanceof Evidence.RolledBack rolledBack) {
            return withinCaps(standing, now, "canary rolled back: " + rolledBack.why(),
                    new Fate.Retry(now, standing.unparseableStreak(), null, null));
        }
        if (evidence instanceof Evidence.Starting) {
            return withinCaps(standing, now, "none left to start", new Fate.Start());
        }
        if (evidence instanceof Evidence.DispatchDeadLettered dead) {
            if (dead.givenBackBefore() >= DEAD_LETTERS_GIVEN_BACK) {
                return new Fate.Fail(ErrorCategory.DEAD_LETTERED, "the dispatch message was dead-lettered "
                        + (dead.givenBackBefore() + 1) + " times before any attempt started from it; the last is kept in jobs.dispatch.dead");
            }
            return withinCaps(standing, now, "dispatch dead-lettered", new Fate.Redispatch());
        }
        Evidence.Deferred deferred = (Evidence.Deferred) evidence;
        return withinCaps(standing, deferred.until(), deferred.reason(),
                new Fate.Retry(deferred.until(), standing.unparseableStreak(), deferred.category(), null));
    }

    /** A stable attempt's failure: fail, park, or retry after its backoff or its 429's pause. */
    private static Fate failed(Evidence.Failure failure, Standing standing, Waits waits, Instant now) {
        ErrorCategory category = failure.category();
        switch (category.handling()) {
            case FAIL -> {
                return new Fate.Fail(category, failure.message());
            }
            case UNKNOWN -> {
                return new Fate.Park();
            }
            default -> {
                int streak = 0;
                if (category == ErrorCategory.UNPARSEABLE_RESPONSE) {
                    streak = standing.unparseableStreak() + 1;
                    if (streak >= 2) {
                        return new Fate.Fail(category, "two unparseable replies in a row; last: " + failure.message());
                    }
                }
                Instant at = now.plus(waits.backoff());
                Fate.RateLimit rateLimit = null;
                if (category == ErrorCategory.RATE_LIMITED) {
                    RateLimitWait wait = RateLimitWait.after(failure.retryAfter(), now, waits.backoff(), waits.rateLimitBackoff());
                    at = wait.until();
                    rateLimit = new Fate.RateLimit(wait.until(), wait.headerUnderstood(), false);
                }
                return withinCaps(standing, at, category.wire() + " (" + failure.message() + ")",
                        new Fate.Retry(at, streak, category, rateLimit));
            }
        }
    }

    /**
     * A canary candidate's failure, whatever its category (a refusal, a 429, a timeout after sending included): its
     * own, recorded on its attempt for its gates. The job is due now on the stable revision; a call that may have
     * reached the provider is not looked up first, since the candidate's task could only ever give a held output.
     */
    private static Fate candidateFailed(Evidence.Failure failure, Standing standing, Waits waits, Instant now) {
        ErrorCategory category = failure.category();
        Fate.RateLimit rateLimit = null;
        if (category == ErrorCategory.RATE_LIMITED) {
            RateLimitWait wait = RateLimitWait.after(failure.retryAfter(), now, waits.backoff(), waits.rateLimitBackoff());
            rateLimit = new Fate.RateLimit(wait.until(), wait.headerUnderstood(), true);
        }
        return withinCaps(standing, now, "canary candidate's " + category.wire() + " (" + failure.message() + ")",
                new Fate.Retry(now, standing.unparseableStreak(), category, rateLimit));
    }

    /**
     * The caps-and-lifetime rule, the one place it is written: {@code ifRoom} when another attempt may start at
     * {@code at}, else the job fails as {@code exhausted} (no attempt beyond {@code max_attempts}) or {@code expired}
     * (none starting at or after {@code expires_at}). A retry's 429 pause is applied
     * all the same (other jobs wait it out), and a stable revision's 429 is named as the failure's cause.
     *
     * @param last what happened last, for the failure's message
     */
    static Fate withinCaps(Standing standing, Instant at, String last, Fate ifRoom) {
        ErrorCategory category;
        String message;
        if (standing.attemptsUsed() >= standing.maxAttempts()) {
            category = ErrorCategory.EXHAUSTED;
            message = standing.attemptsUsed() + " of " + standing.maxAttempts() + " attempts used; last: " + last;
        } else if (!at.isBefore(standing.expiresAt())) {
            category = ErrorCategory.EXPIRED;
            message = "next attempt at " + at + " would pass the job's lifetime (" + standing.expiresAt() + "); last: " + last;
        } else {
            return ifRoom;
        }
        Fate.RateLimit rateLimit = ifRoom.rateLimit();
        String cause = rateLimit != null && !rateLimit.candidateGate() ? ErrorCategory.RATE_LIMITED.wire() : null;
        return new Fate.Fail(category, message, cause, rateLimit);
    }

    /**
     * A pool job's next attempt moved, after a definite failure, to another member due at {@code at}: the failed
     * member's wait (a 429's {@code Retry-After}) no longer holds the job, so the caps are judged against {@code at}. A
     * retry stays a retry, due then; a failure only because the failed member's wait ran past the lifetime becomes a
     * retry when {@code at} is within it (its 429 still closes that member's gate). Anything else is unchanged.
     */
    public static Fate movedTo(Fate fate, Instant at, Standing standing) {
        if (fate instanceof Fate.Retry retry) {
            return withinCaps(standing, at, retry.last() == null ? "moved" : retry.last().wire(),
                    new Fate.Retry(at, retry.unparseableStreak(), retry.last(), retry.rateLimit()));
        }
        if (fate instanceof Fate.Fail fail && fail.category() == ErrorCategory.EXPIRED && fail.rateLimit() != null
                && !fail.rateLimit().candidateGate()) {
            return withinCaps(standing, at, ErrorCategory.RATE_LIMITED.wire(),
                    new Fate.Retry(at, 0, ErrorCategory.RATE_LIMITED, fail.rateLimit()));
        }
        return fate;
    }

    /** May a job that stands so start an attempt now (nothing else against it)? */
    public static boolean mayStart(Standing standing, Instant now) {
        return decide(new Evidence.Starting(), RevisionRole.STABLE, standing, Waits.NONE, now) instanceof Fate.Start;
    }
}
