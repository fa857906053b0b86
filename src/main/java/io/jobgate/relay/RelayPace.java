package io.jobgate.relay;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * When this instance's next dispatch round may start (route outbox-relay, step round-gap). Every admitted
 * job and every call that ends wakes the relay. Under load a round per wake took a job or two for the cost
 * of a whole round (its claim statement's fixed part, a broker transaction, a mark), and back-to-back
 * rounds took a core of PostgreSQL between them. So a round during which the relay was woken again (the
 * gateway is busy) makes the next one wait {@code jobgate.relay.round-gap-ms}, and the wakes of that time
 * make one round. A round that ran alone (an idle gateway: one job, then quiet) lets the next start at
 * once, so a lone job waits for nothing.
 */
public final class RelayPace {

    private final long gapNanos;
    private final AtomicLong wakes = new AtomicLong();
    // Rounds run on the relay's one consumer; the fields are read and written there only.
    private long wakesAtRoundStart;
    private long nextRoundNanos = System.nanoTime();

    public RelayPace(int gapMs) {
        this.gapNanos = TimeUnit.MILLISECONDS.toNanos(gapMs);
    }

    /** The relay was asked for a round (an admission, an ended call, a due time, another instance). */
    void woken() {
        wakes.incrementAndGet();
    }

    /** Milliseconds until the next round may start: 0, or what is left of the gap after a busy round. */
    public long untilNextRound() {
        long wait = nextRoundNanos - System.nanoTime();
        return wait <= 0 ? 0 : TimeUnit.NANOSECONDS.toMillis(wait) + 1;
    }

    /** A round starts now: wakes from here on came while it ran. */
    void roundStarts() {
        wakesAtRoundStart = wakes.get();
    }

    /** A round ended: if the relay was woken while it ran, the next waits the gap. */
    void roundEnded() {
        long now = System.nanoTime();
        nextRoundNanos = wakes.get() != wakesAtRoundStart ? now + gapNanos : now;
    }
}
