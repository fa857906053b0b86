package io.jobgate.relay;

import java.time.Clock;
import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.apache.camel.support.service.ServiceSupport;

/**
 * Wakes this instance's relay when a dispatch event written for later becomes due (a retry after its
 * back-off or Retry-After, a provider gate's reopening), so it is dispatched within milliseconds of
 * its time rather than at the next poll. Wakes are kept per {@link #SLOT_MS} slot, at the slot's end
 * (never before the due time): a burst of retries due together costs one wake. The poll stays the
 * fallback (another instance's retries, a restart).
 */
public final class RelayTimer extends ServiceSupport {

    static final long SLOT_MS = 10;

    private final Clock clock;
    private final Runnable wake;
    private final Set<Long> pending = ConcurrentHashMap.newKeySet();
    private volatile ScheduledExecutorService timer;

    public RelayTimer(Clock clock, Runnable wake) {
        this.clock = clock;
        this.wake = wake;
    }

    /** Wakes the relay once {@code due} has passed, by this gateway's clock. */
    public void wakeAt(Instant due) {
        ScheduledExecutorService t = timer;
        if (t == null || due == null) {
            return;
        }
        long slot = Math.floorDiv(due.toEpochMilli(), SLOT_MS) + 1;
        if (!pending.add(slot)) {
            return;
        }
        try {
            t.schedule(() -> {
                pending.remove(slot);
                wake.run();
            }, Math.max(0, slot * SLOT_MS - clock.millis()), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException stopping) {
            pending.remove(slot);
        }
    }

    @Override
    protected void doStart() {
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread thread = new Thread(r, "jobgate-relay-timer");
            thread.setDaemon(true);
            return thread;
        });
    }

    @Override
    protected void doStop() {
        ScheduledExecutorService t = timer;
        timer = null;
        if (t != null) {
            t.shutdownNow();
        }
        pending.clear();
    }
}
