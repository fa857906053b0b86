package io.jobgate.job;

import java.time.Instant;
import java.util.Optional;

/**
 * The two caps stored on every accepted job, decided here only: no attempt beyond
 * {@code max_attempts}, none starting at or after {@code expires_at}. Asked by the worker before a
 * call and after a retryable outcome, and by reconciliation before a resubmit.
 */
public final class AttemptCaps {

    /** Why a job ends instead of trying again. */
    public record Ending(ErrorCategory category, String message) {
    }

    private AttemptCaps() {
    }

    /**
     * @param attemptsUsed attempts made so far
     * @param at           when the next attempt would start
     * @param last         what happened last (for the message)
     * @return the ending when the next attempt may not happen, empty when it may
     */
    public static Optional<Ending> nextAttempt(int attemptsUsed, int maxAttempts, Instant expiresAt, Instant at, String last) {
        if (attemptsUsed >= maxAttempts) {
            return Optional.of(new Ending(ErrorCategory.EXHAUSTED, attemptsUsed + " of " + maxAttempts
                    + " attempts used; last: " + last));
        }
        if (!at.isBefore(expiresAt)) {
            return Optional.of(new Ending(ErrorCategory.EXPIRED, "next attempt at " + at + " would pass the job's lifetime ("
                    + expiresAt + "); last: " + last));
        }
        return Optional.empty();
    }
}
