package io.jobgate.job;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which release rows the calling thread gives counters back on: one of the gateway's and the
 * window's ({@code gateway_capacity} and {@code dispatch_window}, V10), of a provider's window share
 * ({@code provider_window}, V30) and of each tenant's ({@code tenant_releases}, V24). Rows only
 * releases lock, so a release never waits on admission or the relay; one per thread, so the
 * releasing threads of an instance do not wait on each other's commits either.
 */
final class ReleaseShards {

    /** Release rows of {@code gateway_capacity} and {@code dispatch_window} (V10): ids 2..17. */
    static final int RELEASE_SHARDS = 16;

    /** Release rows of each tenant's counters in {@code tenant_releases} (V24): shards 1..8. */
    static final int TENANT_RELEASE_SHARDS = 8;

    /** The next thread's release shard (0-based), from a random start so that instances start apart. */
    private static final AtomicInteger NEXT_RELEASE_SHARD = new AtomicInteger(ThreadLocalRandom.current().nextInt(RELEASE_SHARDS));

    /**
     * This thread's release shard (0-based): threads take shards in turn, so up to {@link #RELEASE_SHARDS}
     * threads of an instance (its workers) never pick the same counter row. Picked at random per release,
     * two of eight workers often did, and the second waited for the first's commit (its WAL flush): 5 to
     * 25 ms on a sixth of a drain's finalizes.
     */
    private static final ThreadLocal<Integer> RELEASE_SHARD =
            ThreadLocal.withInitial(() -> Math.floorMod(NEXT_RELEASE_SHARD.getAndIncrement(), RELEASE_SHARDS));

    private ReleaseShards() {
    }

    /** The release shard of the calling thread: {@code gateway_capacity} and {@code dispatch_window} id 2..17. */
    static int releaseShard() {
        return 2 + RELEASE_SHARD.get();
    }

    /** The calling thread's shard of a tenant's release rows, 1..8 (threads of one instance in turn, as above). */
    static int tenantReleaseShard() {
        return 1 + RELEASE_SHARD.get() % TENANT_RELEASE_SHARDS;
    }
}
