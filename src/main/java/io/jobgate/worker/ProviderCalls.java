package io.jobgate.worker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where provider calls wait: the executor of the worker route's hand-off ({@code routes/worker.camel.yaml},
 * step {@code hand-off-call}). A dispatch message's JMS transaction ends once the attempt has started
 * (its lease and provider slot are in PostgreSQL); the call, its checks and its record then run here, for
 * as long as the provider takes. How many run at once is bounded by the providers' slots
 * ({@code max-concurrency}), never by this executor: it queues nothing and refuses nothing.
 *
 * <p>On a JVM with virtual threads (Java 21 and later) each call is a virtual thread: thousands of calls
 * waiting on slow providers cost a few KiB each, not a platform thread. On Java 17 each call in flight
 * is a platform thread with a small stack (512 KiB reserved; what a call touches is committed), made on
 * demand and ended after a minute idle. The choice is logged at start.
 */
public final class ProviderCalls extends AbstractExecutorService {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderCalls.class);

    private final ExecutorService delegate;
    private final boolean virtual;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicInteger peak = new AtomicInteger();
    private final AtomicLong handedOff = new AtomicLong();

    /**
     * Places for the work after an answer (classify, check and store the output, record): waiting on
     * providers is free, but thousands of answers checked at once would hold every pooled database
     * connection while they wait for a core (virtual threads share the machine's few carriers), and
     * the pool would time out. Answers beyond these places wait, holding nothing.
     */
    private final int finishPlaces;
    /**
     * The places while starts queue up ({@link #startsQueueUp}): an eighth (one of the default eight). Starting a call and finishing an
     * answer share the cores; when a wave of answers comes back together (calls started together end
     * together), every answer finished at full width took the cores from the starts of the provider's next
     * calls, whose slots the answers had just given back, so each wave of calls started later and wider than
     * the last. An answer finished a little later costs its job those milliseconds; a call started later
     * costs the provider's slot the whole wait. The answers left waiting are finished in the quiet between
     * waves (or as soon as the starts no longer queue up).
     */
    private final int finishPlacesWhileStarting;
    /** Half the worker's consumers starting attempts at once: starts queue up for the cores. */
    private final int startsQueueUpAt;
    private final java.util.concurrent.locks.ReentrantLock places = new java.util.concurrent.locks.ReentrantLock();
    /**
     * The answers waiting for a place, in the order they came, each woken on its own turn: only the first may
     * take a free place (an answer passed over could outwait its lease), and a place that frees wakes it alone.
     */
    private final java.util.ArrayDeque<java.util.concurrent.locks.Condition> waiting = new java.util.ArrayDeque<>();
    private int finishing;
    private final AtomicInteger starting = new AtomicInteger();

    private final int answersWaitingFree;

    /**
     * The calls this instance carries at once ({@code jobgate.worker.max-calls}; 0: no bound of its own, the
     * providers' slots bound them). What a deployment sizes from an instance's memory: with several
     * instances, each takes calls up to its own bound and the rest go to the others (docs/operating.md,
     * "Scaling out"). Counted as calls in flight plus starts under way, so a start that would pass it waits
     * before its lease (no call clock running, no attempt spent) holding its one dispatch message.
     */
    private final int maxCalls;
    private final java.util.concurrent.locks.ReentrantLock callPlaces = new java.util.concurrent.locks.ReentrantLock();
    private final java.util.concurrent.locks.Condition callPlaceFreed = callPlaces.newCondition();
    private final AtomicLong startsHeldAtCap = new AtomicLong();

    private ProviderCalls(ExecutorService delegate, boolean virtual, int finishPlaces, int answersWaitingFree, int startPlaces,
                          int maxCalls) {
        this.delegate = delegate;
        this.virtual = virtual;
        this.maxCalls = maxCalls;
        this.finishPlaces = finishPlaces;
        this.finishPlacesWhileStarting = Math.max(1, finishPlaces / 8);
        this.startsQueueUpAt = Math.max(1, startPlaces / 2);
        this.answersWaitingFree = answersWaitingFree;
    }

    /** A platform call thread's stack (Java 17 only): a call's route, HTTP client and checks stay well inside it. */
    private static final long STACK_BYTES = 512 * 1024;

    /**
     * Virtual threads where the JVM has them, else on-demand platform threads with small stacks.
     *
     * @param finishPlaces       answers finished at once ({@code jobgate.worker.finish-concurrency})
     * @param answersWaitingFree answers that may wait to be finished with their provider slots given back
     *                           ({@link #mustWaitToFinish}): the providers' calls in flight, summed
     * @param startPlaces        the worker's consumers that start attempts ({@code jobgate.worker.concurrency})
     * @param maxCalls           calls this instance carries at once ({@code jobgate.worker.max-calls}), 0 for no bound of its own
     */
    public static ProviderCalls create(int finishPlaces, int answersWaitingFree, int startPlaces, int maxCalls) {
        ExecutorService virtualThreads = virtualThreadPerTask();
        if (virtualThreads != null) {
            return new ProviderCalls(virtualThreads, true, finishPlaces, answersWaitingFree, startPlaces, maxCalls);
        }
        AtomicInteger n = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS, new SynchronousQueue<>(),
                task -> {
                    Thread t = new Thread(null, task, "provider-call-" + n.incrementAndGet(), STACK_BYTES);
                    t.setDaemon(true);
                    return t;
                });
        return new ProviderCalls(pool, false, finishPlaces, answersWaitingFree, startPlaces, maxCalls);
    }

    /** {@code Executors.newVirtualThreadPerTaskExecutor()} on Java 21+, looked up so the jar still runs on 17. */
    private static ExecutorService virtualThreadPerTask() {
        try {
            return (ExecutorService) MethodHandles.publicLookup()
                    .findStatic(java.util.concurrent.Executors.class, "newVirtualThreadPerTaskExecutor",
                            MethodType.methodType(ExecutorService.class))
                    .invoke();
        } catch (NoSuchMethodException | IllegalAccessException e) {
            return null; // Java 17: no virtual threads
        } catch (Throwable e) {
            throw new IllegalStateException("cannot make the virtual-thread executor", e);
        }
    }

    /** True when calls wait on virtual threads. */
    public boolean virtualThreads() {
        return virtual;
    }

    /** How a call in flight is carried, for the start-up line and health. */
    public String carrier() {
        return virtual ? "virtual threads (Java " + Runtime.version().feature() + ")"
                : "platform threads (Java " + Runtime.version().feature() + "; Java 21+ carries calls on virtual threads)";
    }

    /** Calls of this instance in flight now (handed off, not yet recorded). */
    public int inFlight() {
        return inFlight.get();
    }

    /** The most calls in flight at once since start. */
    public int peak() {
        return peak.get();
    }

    /** Calls handed off since start. */
    public long handedOff() {
        return handedOff.get();
    }

    /**
     * Route step ({@code worker}, {@code count-start}): this dispatch message is being started, until its
     * exchange is done (its call handed off, or acknowledged without one). The hand-off's copy carries no
     * part of it.
     */
    public void startBegins(org.apache.camel.Exchange exchange) throws InterruptedException {
        awaitCallPlace();
        exchange.getExchangeExtension().addOnCompletion(new org.apache.camel.support.SynchronizationAdapter() {
            @Override
            public void onDone(org.apache.camel.Exchange done) {
                if (starting.getAndDecrement() == startsQueueUpAt) {
                    wakeFirstWaiting(); // the starts no longer queue up: all places again, taken in turn
                }
                callPlaceFreed();
            }
        });
    }

    /**
     * Counts this start in, once the instance has room for one more call ({@code maxCalls}): until then the
     * consumer waits here, before the job is loaded or leased, and takes no further message.
     */
    private void awaitCallPlace() throws InterruptedException {
        if (maxCalls <= 0) {
            starting.incrementAndGet();
            return;
        }
        callPlaces.lockInterruptibly();
        try {
            if (inFlight.get() + starting.get() >= maxCalls) {
                startsHeldAtCap.incrementAndGet();
                while (inFlight.get() + starting.get() >= maxCalls) {
                    callPlaceFreed.await();
                }
            }
            starting.incrementAndGet();
        } finally {
            callPlaces.unlock();
        }
    }

    /** A start ended or a call ended: a start waiting at {@code maxCalls} may go. */
    private void callPlaceFreed() {
        if (maxCalls <= 0) {
            return;
        }
        callPlaces.lock();
        try {
            callPlaceFreed.signalAll(); // at most the worker's consumers wait here; each looks again
        } finally {
            callPlaces.unlock();
        }
    }

    /** This instance's own bound on calls at once ({@code jobgate.worker.max-calls}); 0: none. */
    public int maxCalls() {
        return maxCalls;
    }

    /** Starts that waited for a call place of this instance ({@code jobgate.worker.max-calls}) since start. */
    public long startsHeldAtCap() {
        return startsHeldAtCap.get();
    }

    /** Dispatch messages being started now. */
    public int starting() {
        return starting.get();
    }

    /** True while starts queue up for the cores: answers are then finished in {@link #finishPlacesWhileStarting} places. */
    boolean startsQueueUp() {
        return starting.get() >= startsQueueUpAt;
    }

    /** The places to finish answers now. */
    int placesNow() {
        return startsQueueUp() ? finishPlacesWhileStarting : finishPlaces;
    }

    /**
     * Route step ({@code provider-call}, {@code finish-place}): waits for a place to finish this call's
     * answer (first come, first served), held until the exchange is done (whatever happens to it).
     */
    public void enterFinish(org.apache.camel.Exchange exchange) throws InterruptedException {
        places.lockInterruptibly();
        try {
            if (!waiting.isEmpty() || finishing >= placesNow()) {
                java.util.concurrent.locks.Condition turn = places.newCondition();
                waiting.addLast(turn);
                try {
                    while (waiting.peekFirst() != turn || finishing >= placesNow()) {
                        turn.await();
                    }
                } finally {
                    boolean first = waiting.peekFirst() == turn;
                    waiting.remove(turn);
                    if (first) {
                        wakeFirstWaiting(); // the next in line looks for a place too (or takes over if this one was interrupted)
                    }
                }
            }
            finishing++;
        } finally {
            places.unlock();
        }
        exchange.getExchangeExtension().addOnCompletion(new org.apache.camel.support.SynchronizationAdapter() {
            @Override
            public void onDone(org.apache.camel.Exchange done) {
                places.lock();
                try {
                    finishing--;
                    wakeFirstWaiting();
                } finally {
                    places.unlock();
                }
            }
        });
    }

    /** Wakes the answer waiting longest: it takes a free place if there is one, and wakes the next. */
    private void wakeFirstWaiting() {
        places.lock();
        try {
            java.util.concurrent.locks.Condition first = waiting.peekFirst();
            if (first != null) {
                first.signal();
            }
        } finally {
            places.unlock();
        }
    }

    /**
     * Route predicate ({@code provider-call}, before {@code finish-place}): every place to finish an answer is
     * taken, so this answer will wait for one, and fewer than {@code answersWaitingFree} answers already wait
     * with their provider slots given back. That bound keeps what waiting answers hold in memory within
     * twice what the providers' slots alone allowed; beyond it an answer waits holding its slot, as before.
     */
    public boolean mustWaitToFinish() {
        places.lock();
        try {
            return (!waiting.isEmpty() || finishing >= placesNow()) && waiting.size() < answersWaitingFree;
        } finally {
            places.unlock();
        }
    }

    /** Answers waiting for a place to be finished. */
    public int waitingToFinish() {
        places.lock();
        try {
            return waiting.size();
        } finally {
            places.unlock();
        }
    }

    public int finishPlaces() {
        return finishPlaces;
    }

    @Override
    public void execute(Runnable call) {
        handedOff.incrementAndGet();
        peak.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
        try {
            delegate.execute(() -> {
                try {
                    call.run();
                } finally {
                    inFlight.decrementAndGet();
                    callPlaceFreed();
                }
            });
        } catch (RuntimeException e) {
            inFlight.decrementAndGet();
            callPlaceFreed();
            throw e;
        }
    }

    /**
     * A clean stop: no new calls (the worker route stopped first), and the calls in flight get up to
     * {@code grace} to record their outcome; the leases of those still running are handed back after this.
     */
    public void drain(Duration grace) throws InterruptedException {
        delegate.shutdown();
        int left = inFlight.get();
        if (left > 0) {
            LOG.info("waiting up to {} s for {} provider calls in flight to record their outcome", grace.toSeconds(), left);
        }
        if (!delegate.awaitTermination(grace.toMillis(), TimeUnit.MILLISECONDS)) {
            LOG.warn("{} provider calls still in flight after {} s: their leases are handed back (a provider that answered "
                    + "later is asked again by reconciliation)", inFlight.get(), grace.toSeconds());
            delegate.shutdownNow();
        }
    }

    @Override
    public void shutdown() {
        delegate.shutdown();
    }

    @Override
    public List<Runnable> shutdownNow() {
        return delegate.shutdownNow();
    }

    @Override
    public boolean isShutdown() {
        return delegate.isShutdown();
    }

    @Override
    public boolean isTerminated() {
        return delegate.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        return delegate.awaitTermination(timeout, unit);
    }
}
