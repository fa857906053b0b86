package io.jobgate.job;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The counter rows a release writes (V10, V24) are the calling thread's own: up to 16 threads of an
 * instance (its workers) each write a different gateway and window row, so none waits for another's
 * commit on a counter row, and a thread keeps its row.
 */
class ReleaseShardsTest {

    @Test
    void threadsOfAnInstanceReleaseOnDifferentCounterRowsAndEachKeepsItsOwn() throws Exception {
        int threads = ReleaseShards.RELEASE_SHARDS;
        Set<Integer> shards = ConcurrentHashMap.newKeySet();
        Set<Integer> tenantShards = ConcurrentHashMap.newKeySet();
        Set<String> unsteady = ConcurrentHashMap.newKeySet();
        CyclicBarrier together = new CyclicBarrier(threads); // all alive at once, as a worker pool's threads are
        List<Thread> started = IntStream.range(0, threads).mapToObj(i -> new Thread(() -> {
            try {
                together.await();
                int shard = ReleaseShards.releaseShard();
                int tenantShard = ReleaseShards.tenantReleaseShard();
                shards.add(shard);
                tenantShards.add(tenantShard);
                if (ReleaseShards.releaseShard() != shard || ReleaseShards.tenantReleaseShard() != tenantShard) {
                    unsteady.add(Thread.currentThread().getName());
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        })).toList();
        started.forEach(Thread::start);
        for (Thread t : started) {
            t.join();
        }
        assertThat(shards).as("gateway_capacity and dispatch_window release rows, ids 2..17")
                .hasSize(threads).allMatch(s -> s >= 2 && s <= 1 + ReleaseShards.RELEASE_SHARDS);
        assertThat(tenantShards).as("a tenant's release rows, 1..8: each taken by two of the sixteen threads")
                .hasSize(ReleaseShards.TENANT_RELEASE_SHARDS).allMatch(s -> s >= 1 && s <= ReleaseShards.TENANT_RELEASE_SHARDS);
        assertThat(unsteady).as("threads whose shard changed").isEmpty();
    }
}
