package io.jobgate.adapter;

import java.time.Duration;
import java.util.function.LongUnaryOperator;

/**
 * Capped exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff and
 * Jitter"): the delay before retry {@code n} (1-based) is uniform in [0, min(cap, base × 2^(n-1))].
 * The random source is injected so tests can pin it.
 */
public final class Backoff {

    private final Duration base;
    private final Duration cap;
    private final LongUnaryOperator uniformBelow;

    /** @param uniformBelow given a bound b > 0, returns a uniform value in [0, b) */
    public Backoff(Duration base, Duration cap, LongUnaryOperator uniformBelow) {
        if (base.isNegative() || base.isZero() || cap.compareTo(base) < 0) {
            throw new IllegalArgumentException("backoff needs 0 < base <= cap, was " + base + " and " + cap);
        }
        this.base = base;
        this.cap = cap;
        this.uniformBelow = uniformBelow;
    }

    public static Backoff withRandomJitter(Duration base, Duration cap) {
        return new Backoff(base, cap, bound -> java.util.concurrent.ThreadLocalRandom.current().nextLong(bound));
    }

    /** The ceiling of the jitter window for retry {@code n}: base × 2^(n-1), capped. */
    public Duration ceiling(int retry) {
        if (retry < 1) {
            throw new IllegalArgumentException("retries count from 1");
        }
        int shift = Math.min(retry - 1, 62);
        long millis = base.toMillis();
        long ceiling = millis > (cap.toMillis() >> shift) ? cap.toMillis() : millis << shift;
        return Duration.ofMillis(Math.min(ceiling, cap.toMillis()));
    }

    public Duration delay(int retry) {
        return Duration.ofMillis(uniformBelow.applyAsLong(ceiling(retry).toMillis() + 1));
    }
}
