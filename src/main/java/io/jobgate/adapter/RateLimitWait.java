package io.jobgate.adapter;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * When the next request may go to a provider that answered 429: its {@code Retry-After} when it
 * can be read; without the header, the usual capped backoff; with a header that cannot be read, the
 * provider's conservative rate-limit backoff (it did ask for a pause, only its length is unknown).
 *
 * @param until             the earliest start of the next request (also the gate's reopening)
 * @param headerUnderstood  null without a header, else whether it could be read
 */
public record RateLimitWait(Instant until, Boolean headerUnderstood) {

    public static RateLimitWait after(String retryAfter, Instant now, Duration backoff, Duration rateLimitBackoff) {
        if (retryAfter == null || retryAfter.isBlank()) {
            return new RateLimitWait(now.plus(backoff), null);
        }
        Optional<Instant> allowed = RetryAfter.earliestRetry(retryAfter, now);
        return allowed.map(at -> new RateLimitWait(at, true))
                .orElseGet(() -> new RateLimitWait(now.plus(rateLimitBackoff), false));
    }
}
