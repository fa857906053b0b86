package io.jobgate.pool;

import java.time.Clock;
import java.util.List;
import java.util.UUID;

import io.jobgate.fate.PoolFacts;
import io.jobgate.fate.PoolPlacement;
import io.jobgate.fate.PoolPlacements;
import io.jobgate.job.ProviderGates;
import io.jobgate.preset.Preset;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;

/**
 * Reads the facts of a pool's placement — each member's fit for the job ({@link ProviderCatalog#whyNotServing}), its
 * gate ({@link ProviderGates}), weight and max-wait — and asks the one rule ({@link PoolPlacements#place}). Asked at
 * admission, after a definite failure, and at a start whose member's gate is closed beyond its max-wait; it writes
 * nothing.
 */
public final class PoolPlacer {

    private final PoolCatalog pools;
    private final ProviderCatalog providers;
    private final ProviderGates gates;
    private final Clock clock;

    public PoolPlacer(PoolCatalog pools, ProviderCatalog providers, ProviderGates gates, Clock clock) {
        this.pools = pools;
        this.providers = providers;
        this.gates = gates;
        this.clock = clock;
    }

    public PoolCatalog pools() {
        return pools;
    }

    /**
     * The member of {@code pool} the attempt {@code attempt} of job {@code jobId} goes to.
     *
     * @param exclude the member that just failed definitely (left out when another can take it), or null
     */
    public PoolPlacement place(Pool pool, Preset preset, String aspectClass, long inputBytes, UUID jobId, int attempt, String exclude) {
        return PoolPlacements.place(new PoolFacts(members(pool, preset, aspectClass, inputBytes), exclude,
                PoolFacts.hash(jobId, attempt), clock.instant()));
    }

    /** The members that can serve the job at all (gates aside): whose prices bound what a pool job costs. */
    public List<Provider> fitting(Pool pool, Preset preset, String aspectClass, long inputBytes) {
        return pool.members().stream().map(m -> providers.find(m.provider()).orElse(null))
                .filter(p -> p != null && providers.whyNotServing(p, preset, aspectClass, inputBytes) == null).toList();
    }

    private List<PoolFacts.Member> members(Pool pool, Preset preset, String aspectClass, long inputBytes) {
        return pool.members().stream().map(m -> {
            Provider provider = providers.find(m.provider()).orElse(null);
            String whyNot = provider == null ? "no settings for provider " + m.provider()
                    : providers.whyNotServing(provider, preset, aspectClass, inputBytes);
            return new PoolFacts.Member(m.provider(), m.weight(), m.maxWait(), whyNot, gates.closedUntil(m.provider()).orElse(null));
        }).toList();
    }
}
