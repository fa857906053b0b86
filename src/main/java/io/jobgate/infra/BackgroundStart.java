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

    private BackgroundStart(String name) {
        this.name = name;
    }

    public static <T> BackgroundStart<T> of(String name, Callable<T> start) {
        BackgroundStart<T> part = new BackgroundStart<>(name);
        Thread thread = new Thread(() -> {
            try {
                part.started.complete(start.call());
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

    /** After a failed start: a part started but not taken over would otherwise keep running. */
    public void stopIfUnclaimed(Stop<T> stop) {
        if (claimed) {
            return;
        }
        claimed = true;
        try {
            stop.stop(started.get());
        } catch (Exception e) {
            LOG.debug("{} did not start or stop cleanly after a failed start", name, e);
        }
    }
}
