package io.jobgate.support;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The gateway's clock in tests that need time to pass: the system clock plus an offset a test
 * moves ({@link #advance}) and puts back ({@link #reset}) — every decision of the gateway (due
 * times, leases, lifetimes, checks) reads this clock, so moving it is moving time.
 */
public final class MovableClock extends Clock {

    private final AtomicReference<Duration> offset = new AtomicReference<>(Duration.ZERO);

    public void advance(Duration by) {
        offset.updateAndGet(o -> o.plus(by));
    }

    public void reset() {
        offset.set(Duration.ZERO);
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("the gateway's clock is UTC");
    }

    @Override
    public Instant instant() {
        return Instant.now().plus(offset.get());
    }
}
