package io.jobgate.admission;

import java.util.UUID;
import java.util.function.ToLongFunction;
import java.util.function.UnaryOperator;

import io.jobgate.common.ApiProblem;
import io.jobgate.fate.PoolPlacement;
import io.jobgate.pool.Pool;
import io.jobgate.pool.PoolPlacer;
import io.jobgate.preset.Preset;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;

/**
 * Where a new job's first attempt goes and what the job costs, one rule for every job admitted: a client's
 * ({@link AdmissionService}) and the summary ordered for a transcription ({@code summary/SummaryOrders}).
 * <ul>
 * <li>a provider named: pinned to it;</li>
 * <li>a pool named, else the pool that lists the job's preset, else its kind's default pool: placed by the pool's
 * rule, priced at the dearest member that could serve it (of those the tenant may use), never raised by a move;</li>
 * <li>neither: its kind's default provider (or one the tenant's rules allow), as without pools.</li>
 * </ul>
 * The tenant's rules of where its jobs run hold on every path (docs/providers.md, "Pools" and "Tenant rules").
 */
public final class AdmissionPlacement {

    /**
     * @param pool          the pool the job is placed in, or null (pinned, or its kind's default provider)
     * @param waitingReason why its first attempt waits (placed on a member whose gate is closed), or null
     */
    public record Placed(Provider provider, String pool, String waitingReason, long costMicros) {
    }

    private final ProviderCatalog providers;
    private final PoolPlacer pools;

    public AdmissionPlacement(ProviderCatalog providers, PoolPlacer pools) {
        this.providers = providers;
        this.pools = pools;
    }

    /**
     * @param provider the provider the request names, or null
     * @param pool     the pool the request names, or null (never both: the request's parser refuses that)
     * @param field    where the request names them, for a problem's {@code field}: {@code ""} or {@code "summary."}
     * @param whyNot   per provider, why the tenant's rules rule it out (null: it may use it)
     * @param price    what the job costs on a provider
     */
    public Placed place(String tenantId, UnaryOperator<String> whyNot, String provider, String pool, Preset preset,
                        String aspectClass, long inputBytes, UUID jobId, String field, ToLongFunction<Provider> price) {
        Pool chosen = pool != null ? named(pool, preset, tenantId, field)
                : provider != null ? null
                : implied(preset, tenantId).orElse(null);
        if (chosen == null) {
            Provider pinned = providers.choose(provider, preset, aspectClass, inputBytes, whyNot);
            return new Placed(pinned, null, null, price.applyAsLong(pinned));
        }
        PoolPlacement.To first = first(chosen, tenantId, preset, aspectClass, inputBytes, jobId, field);
        long cost = pools.fitting(chosen, tenantId, preset, aspectClass, inputBytes).stream().mapToLong(price).max().orElseThrow();
        return new Placed(providers.find(first.member()).orElseThrow(), chosen.name(), first.waitingReason(), cost);
    }

    /**
     * Refuses now what {@link #place} would refuse for a job placed later (a summary, ordered once its transcript
     * ended): a pool named that is unknown, of another kind or ruled out for the tenant; without a pool (its preset's
     * or kind's either), a provider that does not serve the preset or that the tenant may not use.
     */
    public void check(String tenantId, UnaryOperator<String> whyNot, String provider, String pool, Preset preset, String field) {
        if (pool != null) {
            named(pool, preset, tenantId, field);
        } else if (provider != null || implied(preset, tenantId).isEmpty()) {
            providers.choose(provider, preset, null, 0, whyNot);
        }
    }

    /** The pool a job naming neither a provider nor a pool runs in (its preset's, else its kind's), if the tenant may use it. */
    private java.util.Optional<Pool> implied(Preset preset, String tenantId) {
        return pools.pools().forPreset(preset).filter(p -> pools.usable(p, tenantId));
    }

    /**
     * The pool a job names: declared ({@code unknown_pool}), of the preset's kind ({@code pool_kind_mismatch}) and with
     * a member the tenant's rules let it use ({@code pool_not_allowed}).
     */
    Pool named(String name, Preset preset, String tenantId, String field) {
        Pool pool = pools.pools().find(name).orElseThrow(() -> ApiProblem.of(422, "unknown_pool", "No pool '" + name + "'; declared: "
                + String.join(", ", pools.pools().all().stream().map(Pool::name).toList()) + ".").with("field", field + "pool"));
        if (!pool.kind().equals(preset.kind())) {
            throw ApiProblem.of(422, "pool_kind_mismatch", "Pool '" + name + "' serves " + pool.kind() + " jobs; preset '" + preset.id()
                    + "' is of kind " + preset.kind() + ".").with("field", field + "pool");
        }
        if (!pools.usable(pool, tenantId)) {
            throw ApiProblem.of(422, "pool_not_allowed", "Tenant " + tenantId + " may use no member of pool '" + name + "' ("
                    + String.join(", ", pool.providers()) + "): its providers rule rules each one out.").with("field", field + "pool");
        }
        return pool;
    }

    /** The member of {@code pool} the job's first attempt goes to (its gate's reopening is the dispatch's due time). */
    private PoolPlacement.To first(Pool pool, String tenantId, Preset preset, String aspectClass, long inputBytes, UUID jobId,
                                   String field) {
        PoolPlacement placement = pools.place(pool, tenantId, preset, aspectClass, inputBytes, jobId, 1, null, null, null);
        if (placement instanceof PoolPlacement.To to) {
            return to;
        }
        PoolPlacement.Unserved unserved = (PoolPlacement.Unserved) placement;
        if (unserved.drained()) {
            // An operator's drain, to be brought back: nothing wrong with the request, try again later.
            throw ApiProblem.of(503, "pool_drained", "Every member of pool '" + pool.name() + "' that could take this job is drained"
                    + " by an operator: " + unserved.why() + ". Try again later.").with("field", field + "pool").withHeader("Retry-After", "60");
        }
        throw ApiProblem.of(422, "aspect_class_not_rendered", "No member of pool '" + pool.name() + "' can take this job now: "
                + unserved.why() + ".").with("field", field + "pool");
    }
}
