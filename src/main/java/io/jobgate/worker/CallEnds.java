package io.jobgate.worker;

import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;

import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * The early hand-back of answered calls' provider slots (route step {@code end-call}), batched: the answer
 * only queues its call here and goes on to wait for its place; one releaser frees every call queued
 * meanwhile in one statement ({@link JobLeases#endCalls}) and then wakes the relay once.
 *
 * <p>Why not each answer itself: a wave of answers arriving together asked the connection pool for one
 * connection each, hundreds at once; while finishing was slow (real images: megabytes each to decode,
 * check and store) they queued ahead of the finishes, starts and relay rounds for the pool's whole timeout,
 * and an answer whose finish timed out there was lost. Now the hand-backs hold one connection at a time.
 * A call whose record comes first frees nothing twice: each call is freed under its own lease token.
 */
public final class CallEnds implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(CallEnds.class);

    /** One statement frees at most this many calls (a bounded array of parameters). */
    static final int MOST_PER_BATCH = 1000;

    private record Ended(UUID jobId, UUID leaseToken) {
    }

    private final BlockingQueue<Ended> queue = new LinkedBlockingQueue<>();
    private final BiFunction<List<UUID>, List<UUID>, Integer> endCalls;
    private final Runnable afterFreed;
    private volatile boolean stopping;
    private Thread releaser;

    /**
     * @param endCalls   frees the calls given by job and lease token, returning how many still held a slot
     * @param afterFreed what a batch that freed slots wakes (the relay, so the next jobs go now)
     */
    public CallEnds(BiFunction<List<UUID>, List<UUID>, Integer> endCalls, Runnable afterFreed) {
        this.endCalls = endCalls;
        this.afterFreed = afterFreed;
    }

    public synchronized void start() {
        if (releaser == null) {
            stopping = false;
            releaser = new Thread(this::releaseAll, "call-ends");
            releaser.setDaemon(true);
            releaser.start();
        }
    }

    /** Route step (end-call): the answered call's slot goes back with the next batch. */
    public void end(Exchange exchange) {
        Lease lease = exchange.getProperty(Worker.STARTED, Worker.Started.class).lease();
        queue.add(new Ended(lease.jobId(), lease.token()));
    }

    private void releaseAll() {
        List<Ended> batch = new ArrayList<>();
        while (!stopping || !queue.isEmpty()) {
            try {
                Ended first = queue.poll(200, TimeUnit.MILLISECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, MOST_PER_BATCH - 1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            release(batch);
            batch.clear();
        }
    }

    private void release(List<Ended> batch) {
        try {
            int freed = endCalls.apply(batch.stream().map(Ended::jobId).toList(), batch.stream().map(Ended::leaseToken).toList());
            if (freed > 0) {
                afterFreed.run();
            }
        } catch (RuntimeException e) {
            // Only an early hand-back: each answer's record gives its slot back anyway.
            LOG.warn("{} answered calls' provider slots not given back before their records ({}); the records give them back",
                    batch.size(), e.getClass().getSimpleName());
        }
    }

    /** Frees what is queued, then stops (a stop's last answers still hand back early). */
    @Override
    public synchronized void close() {
        stopping = true;
        if (releaser != null) {
            try {
                releaser.join(TimeUnit.SECONDS.toMillis(5));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            releaser = null;
        }
    }
}
