package io.jobgate.infra;

import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One embedded part starting on a thread of its own, so PostgreSQL, Artemis, S3Proxy and the
 * simulator start side by side instead of one after the other (each mostly waits on its own
 * process, files and sockets). {@link #await} hands the started part over; a part nobody took
 * because the start failed elsewhere is stopped by {@link #stopIfUnclaimed}.
 */
public final class BackgroundStart<T> {

    private static final Logger LOG = LoggerFactory.getLogger(BackgroundStart.class);

    @FunctionalInterface
    public interface Stop<T> {
        void stop(T part) throws Exception;
    }

    private final String name;
    private final CompletableFuture<T> started = new CompletableFuture<>();
    private volatile boolean claimed;
    private final java.util.concurrent.atomic.AtomicBoolean stopped = new java.util.concurrent.atomic.AtomicBoolean();
    private volatile long millis = -1;

    private BackgroundStart(String name) {
        this.name = name;
    }

    public static <T> BackgroundStart<T> of(String name, Callable<T> start) {
        BackgroundStart<T> part = new BackgroundStart<>(name);
        Thread thread = new Thread(() -> {
            long begun = System.nanoTime();
            try {
                T value = start.call();
                part.millis = (System.nanoTime() - begun) / 1_000_000;
                part.started.complete(value);
            } catch (Throwable e) {
                part.started.completeExceptionally(e);
            }
        }, "jobgate-start-" + name);
        thread.setDaemon(true);
        thread.start();
        return part;
    }

    /** Waits for the part; its start's exception is thrown here, on the thread that wires the gateway. */
    public T await() throws Exception {
        claimed = true;
        try {
            return started.get();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** How long the start took, once it succeeded; -1 before or after a failure. */
    public long millis() {
        return millis;
    }

    public String name() {
        return name;
    }

    /** After a failed start: a part started but not taken over would otherwise keep running. */
    public void stopIfUnclaimed(Stop<T> stop) {
        if (claimed) {
            return;
        }
        claimed = true;
        stop(stop);
    }

    /**
     * Stops the part once its start has ended, if it started; once only, whoever asks (the
     * gateway's stop, or the clean-up of a failed start).
     */
    public void stop(Stop<T> stop) {
        if (!stopped.compareAndSet(false, true)) {
            return;
        }
        try {
            stop.stop(started.get());
        } catch (ExecutionException didNotStart) {
            LOG.debug("{} did not start, nothing to stop", name, didNotStart.getCause());
        } catch (Exception e) {
            LOG.warn("{} did not stop cleanly: {}", name, e.toString());
        }
    }
}
