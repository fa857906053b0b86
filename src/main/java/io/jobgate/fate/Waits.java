package io.jobgate.fate;

import java.time.Duration;

/**
 * The durations a decision may wait, drawn by the caller (the backoff's jitter stays outside, so a decision is
 * a function of its inputs).
 *
 * @param backoff          the delay before a retry: this attempt's capped exponential backoff, jitter drawn
 * @param rateLimitBackoff the provider's pause after a 429 whose {@code Retry-After} cannot be read
 * @param nextCheck        until a job waiting on its provider's task is asked about again
 * @param firstCheck       until a task just found is first asked about
 */
public record Waits(Duration backoff, Duration rateLimitBackoff, Duration nextCheck, Duration firstCheck) {

    /** No wait of its own: a decision whose times are all given by its evidence (a start, a lost lease, a rollback). */
    public static final Waits NONE = new Waits(Duration.ZERO, Duration.ZERO);

    /** The waits of a decision that is not about a task at the provider. */
    public Waits(Duration backoff, Duration rateLimitBackoff) {
        this(backoff, rateLimitBackoff, Duration.ZERO, Duration.ZERO);
    }
}
