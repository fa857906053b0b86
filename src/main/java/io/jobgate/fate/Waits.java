package io.jobgate.fate;

import java.time.Duration;

/**
 * The durations a decision may wait, drawn by the caller (the backoff's jitter stays outside, so a decision is
 * a function of its inputs).
 *
 * @param backoff          the delay before a retry: this attempt's capped exponential backoff, jitter drawn
 * @param rateLimitBackoff the provider's pause after a 429 whose {@code Retry-After} cannot be read
 */
public record Waits(Duration backoff, Duration rateLimitBackoff) {
}
