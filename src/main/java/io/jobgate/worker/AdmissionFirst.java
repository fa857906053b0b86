package io.jobgate.worker;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

import org.apache.camel.Exchange;
import org.apache.camel.support.SynchronizationAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Admission first (docs/operating.md): while this instance is busy accepting jobs, its workers run
 * fewer attempts at once, so accepting keeps the CPU it shares with processing. A documented trade:
 * processing slows down while admission is busy, and never stops ({@code busy-concurrency} is at
 * least 1).
 * <p>
 * Busy: at least {@code busy-per-second} jobs accepted a second (HTTP and JMS intake alike: counted
 * where the admission writer commits them), measured over the last {@code window-ms}, while this
 * machine's CPUs are at least {@code busy-cpu-percent} busy (accepting and processing compete for them;
 * attempts that mostly wait on their provider leave them idle, and then nothing yields). While busy at
 * most {@code busy-concurrency} attempts run at once, started at least {@code busy-start-interval-ms}
 * apart, else {@code jobgate.worker.concurrency} with no interval. With
 * hysteresis, so the limit does not flap: busy starts at the busy rate and ends only once the rate has
 * stayed below half of it for {@code quiet-ms}. Attempts already running when the limit drops run on;
 * the next ones wait.
 * <p>
 * The worker route's first step ({@link #enter}) takes a place, or waits for one with the JMS message
 * unacknowledged (nothing is lost or duplicated: the transacted consumer commits only after the
 * route), and holds it until the exchange completes. A waiting worker checks the limit again at least
 * every {@value #RECHECK_MILLIS} ms, so workers are back to full concurrency within about
 * {@code quiet-ms} plus that once admission goes quiet.
 * <p>
 * Camel's {@code throttle} EIP (ConcurrentRequests mode) was the first candidate and does not fit:
 * a worker blocked in it sees a raised limit only when another message reaches the throttle (after a
 * running attempt ends, which may be a provider's whole call deadline), and in Camel 4.18 its per-key
 * state is dropped 10 s after the last release even while a permit is held (CAMEL-24926), after
 * which more attempts than the limit run at once.
 * <p>
 * The rate follows the process's monotonic clock, not the gateway's {@code Clock}: it measures this
 * process's load, not a business time (tests that move or freeze the business clock do not freeze it).
 */
public final class AdmissionFirst {

    private static final Logger LOG = LoggerFactory.getLogger(AdmissionFirst.class);

    /** The machine's CPU load is read at most this often. */
    static final long CPU_READ_MILLIS = 100;
    /** A waiting worker checks the limit again at least this often (a raised limit needs no new message). */
    static final long RECHECK_MILLIS = 100;
    private static final long RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(RECHECK_MILLIS);
    /** The window is counted in this many buckets (a rate over between 0.9 and 1.0 of the window). */
    static final int BUCKETS = 10;
    private static final long NEVER = Long.MIN_VALUE;

    /**
     * @param enabled         false: always {@code fullConcurrency}
     * @param fullConcurrency {@code jobgate.worker.concurrency}, the route's consumers
     * @param busyConcurrency attempts at once while admission is busy, 1..fullConcurrency
     * @param busyPerSecond   jobs accepted a second from which admission counts as busy
     * @param window          over how long that rate is measured
     * @param quietFor        how long the rate must stay below half the busy rate before the limit rises again
     * @param busyStartInterval while busy, attempts start at least this far apart (0: the concurrency limit only)
     * @param busyCpu         admission counts as busy only while this machine's CPUs are at least this busy (0..1 of
     *                        all of them; 0: the rate alone): workers yield only when accepting and processing
     *                        compete for the CPU, never for a busy admission on a machine with CPU to spare (nor for
     *                        attempts that mostly wait on their provider)
     */
    public record Settings(boolean enabled, int fullConcurrency, int busyConcurrency, int busyPerSecond, Duration window,
                           Duration quietFor, Duration busyStartInterval, double busyCpu) {

        /** The rate alone (no CPU condition). */
        public Settings(boolean enabled, int fullConcurrency, int busyConcurrency, int busyPerSecond, Duration window,
                        Duration quietFor, Duration busyStartInterval) {
            this(enabled, fullConcurrency, busyConcurrency, busyPerSecond, window, quietFor, busyStartInterval, 0);
        }

        public Settings {
            if (fullConcurrency < 1 || busyConcurrency < 1) {
                throw new IllegalStateException("worker concurrencies must be at least 1");
            }
            if (busyConcurrency > fullConcurrency) {
                throw new IllegalStateException("setting jobgate.worker.admission-first.busy-concurrency (" + busyConcurrency
                        + ") must not be above jobgate.worker.concurrency (" + fullConcurrency + ")");
            }
            if (busyPerSecond < 1 || window.toMillis() < BUCKETS || quietFor.isNegative() || busyStartInterval.isNegative()
                    || !(busyCpu >= 0 && busyCpu <= 1)) {
                throw new IllegalStateException("admission-first: busy-per-second >= 1, window-ms >= " + BUCKETS
                        + ", quiet-ms >= 0, busy-start-interval-ms >= 0, busy-cpu-percent 0..100");
            }
        }

        public static Settings from(io.jobgate.infra.Settings s) {
            return new Settings(
                    s.bool("jobgate.worker.admission-first.enabled"),
                    s.intValue("jobgate.worker.concurrency", 1, 10_000),
                    s.intValue("jobgate.worker.admission-first.busy-concurrency", 1, 10_000),
                    s.intValue("jobgate.worker.admission-first.busy-per-second", 1, 1_000_000),
                    s.millis("jobgate.worker.admission-first.window-ms", BUCKETS, 60_000),
                    s.millis("jobgate.worker.admission-first.quiet-ms", 0, 60_000),
                    s.millis("jobgate.worker.admission-first.busy-start-interval-ms", 0, 60_000),
                    s.intValue("jobgate.worker.admission-first.busy-cpu-percent", 0, 100) / 100.0);
        }
    }

    private final Settings settings;
    private final LongSupplier nanoTime;
    private final DoubleSupplier cpuLoad;
    private final long bucketNanos;
    private final long quietNanos;
    private final long intervalNanos;
    /** Jobs accepted in the window that make admission busy, and below which it is quiet. */
    private final long busyCount;
    private final long quietCount;

    // The window: admissions per bucket, and which bucket (nanoTime / bucketNanos) each slot holds. Guarded by itself.
    private final long[] counts = new long[BUCKETS];
    private final long[] stamps = new long[BUCKETS];
    /** When an admission last found the window at or above the quiet count (guarded by counts). */
    private long lastLoud = NEVER;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition placeFreed = lock.newCondition();
    // Guarded by lock.
    private boolean yielding;
    private int running;
    /** When the last attempt took its place. */
    private long lastStart = NEVER;
    /** Workers waiting for a place, first come first served. */
    private final java.util.ArrayDeque<Object> queue = new java.util.ArrayDeque<>();

    private final LongAdder admissions = new LongAdder();
    private final LongAdder yields = new LongAdder();

    public AdmissionFirst(Settings settings) {
        this(settings, System::nanoTime, CpuLoad.ofMachine(CPU_READ_MILLIS)::now);
    }

    /** @param nanoTime a monotonic clock in nanoseconds (tests pass one they move) */
    AdmissionFirst(Settings settings, LongSupplier nanoTime) {
        this(settings, nanoTime, () -> -1);
    }

    /**
     * @param nanoTime a monotonic clock in nanoseconds (tests pass one they move)
     * @param cpuLoad  this machine's recent CPU load, 0..1 (negative: unknown, then the rate alone decides)
     */
    AdmissionFirst(Settings settings, LongSupplier nanoTime, DoubleSupplier cpuLoad) {
        this.settings = settings;
        this.nanoTime = nanoTime;
        this.cpuLoad = cpuLoad;
        this.bucketNanos = settings.window().toNanos() / BUCKETS;
        this.quietNanos = settings.quietFor().toNanos();
        this.intervalNanos = settings.busyStartInterval().toNanos();
        this.busyCount = Math.max(1, (long) Math.ceil(settings.busyPerSecond() * settings.window().toNanos() / 1e9));
        this.quietCount = Math.max(1, busyCount / 2);
        java.util.Arrays.fill(stamps, NEVER);
    }

    public Settings settings() {
        return settings;
    }

    /** A job was accepted on this instance (HTTP or JMS intake): called once per admitted job. */
    public void admitted() {
        admissions.increment();
        long now = nanoTime.getAsLong();
        long bucket = Math.floorDiv(now, bucketNanos);
        int slot = (int) Math.floorMod(bucket, (long) BUCKETS);
        synchronized (counts) {
            if (stamps[slot] != bucket) {
                stamps[slot] = bucket;
                counts[slot] = 0;
            }
            counts[slot]++;
            if (windowCount(bucket) >= quietCount) {
                lastLoud = now;
            }
        }
    }

    /** Admissions in the buckets of the window that ends with {@code bucket} (caller holds counts). */
    private long windowCount(long bucket) {
        long sum = 0;
        for (int i = 0; i < BUCKETS; i++) {
            if (stamps[i] > bucket - BUCKETS && stamps[i] <= bucket) {
                sum += counts[i];
            }
        }
        return sum;
    }

    /** How many attempts may run at once right now. */
    public int limit() {
        lock.lock();
        try {
            return limitAt(nanoTime.getAsLong());
        } finally {
            lock.unlock();
        }
    }

    /** Caller holds lock. */
    private int limitAt(long now) {
        if (!settings.enabled()) {
            return settings.fullConcurrency();
        }
        long count;
        long loud;
        synchronized (counts) {
            count = windowCount(Math.floorDiv(now, bucketNanos));
            loud = lastLoud;
        }
        double cpu;
        if (!yielding && count >= busyCount && cpuBusy(cpu = settings.busyCpu() > 0 ? cpuLoad.getAsDouble() : -1)) {
            yielding = true;
            yields.increment();
            LOG.info("admission busy ({} jobs accepted in the last {} ms{}): workers run at most {} attempts at once",
                    count, settings.window().toMillis(), cpu < 0 ? "" : String.format(", CPUs %.0f %% busy", cpu * 100),
                    settings.busyConcurrency());
        } else if (yielding && count < quietCount && (loud == NEVER || now - loud >= quietNanos)) {
            yielding = false;
            LOG.info("admission quiet: workers back to {} attempts at once", settings.fullConcurrency());
            placeFreed.signalAll();
        }
        return yielding ? settings.busyConcurrency() : settings.fullConcurrency();
    }

    /** Whether the CPUs are busy enough for admission to count as busy (unknown: the rate alone decides). */
    private boolean cpuBusy(double load) {
        return settings.busyCpu() <= 0 || load < 0 || load >= settings.busyCpu();
    }

    /**
     * Route step, the worker route's first: waits until fewer attempts run than {@link #limit()}
     * allows (checking again whenever a place frees and at least every {@value #RECHECK_MILLIS} ms), then
     * holds a place until the exchange completes, successfully or not.
     */
    public void enter(Exchange exchange) throws InterruptedException {
        lock.lock();
        try {
            if (!queue.isEmpty() || startsIn(nanoTime.getAsLong()) > 0) {
                // In arrival order: a worker that finished an attempt and comes back with its next message
                // does not pass one that has been waiting (whose message would otherwise wait for as long
                // as admission stays busy).
                Object ticket = new Object();
                queue.addLast(ticket);
                try {
                    long wait = RECHECK_NANOS;
                    do {
                        placeFreed.awaitNanos(Math.min(wait, RECHECK_NANOS));
                        wait = queue.peekFirst() == ticket ? startsIn(nanoTime.getAsLong()) : RECHECK_NANOS;
                    } while (wait > 0);
                } finally {
                    queue.remove(ticket);
                    placeFreed.signalAll(); // the next in line may have a place too
                }
            }
            running++;
            lastStart = nanoTime.getAsLong();
        } finally {
            lock.unlock();
        }
        exchange.getExchangeExtension().addOnCompletion(new Place());
    }

    /** 0 when an attempt may start now, else about how long until it may (caller holds lock). */
    private long startsIn(long now) {
        if (running >= limitAt(now)) {
            return RECHECK_NANOS;
        }
        if (yielding && intervalNanos > 0 && lastStart != NEVER && now - lastStart < intervalNanos) {
            return intervalNanos - (now - lastStart);
        }
        return 0;
    }

    /** A place held by one exchange: given back once, when the exchange completes or fails. */
    private final class Place extends SynchronizationAdapter {
        private final AtomicBoolean held = new AtomicBoolean(true);

        @Override
        public void onDone(Exchange exchange) {
            if (held.compareAndSet(true, false)) {
                leave();
            }
        }
    }

    private void leave() {
        lock.lock();
        try {
            running--;
            placeFreed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Attempts holding a place now. */
    public int running() {
        lock.lock();
        try {
            return running;
        } finally {
            lock.unlock();
        }
    }

    /** Workers waiting for a place now (each with its message unacknowledged). */
    public int waiting() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    /** Whether the workers yield to admission now. */
    public boolean yielding() {
        return limit() < settings.fullConcurrency();
    }

    /** Times the workers started yielding to admission. */
    public long yields() {
        return yields.sum();
    }

    /** Jobs accepted on this instance since start. */
    public long admissions() {
        return admissions.sum();
    }
}
