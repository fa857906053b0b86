package io.jobgate.pool;

import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.fate.MemberState;
import io.jobgate.fate.PoolFacts;
import io.jobgate.fate.PoolPlacement;
import io.jobgate.fate.PoolPlacements;
import io.jobgate.job.ProviderGates;
import io.jobgate.preset.Preset;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.ProviderRules;
import io.jobgate.tenant.Tenant;
import io.jobgate.tenant.TenantDirectory;

/**
 * Reads the facts of a pool's placement — each member's fit for the job ({@link ProviderCatalog#whyNotServing}) and
 * for its tenant ({@link ProviderRules}), its gate ({@link ProviderGates}), its health ({@link PoolHealth}), weight and
 * max-wait, and whether the tenant
 * lets the job leave its member — and asks the one rule ({@link PoolPlacements#place}). Asked at
 * admission, after a definite failure, and at a start whose member's gate is closed beyond its max-wait or whose
 * member takes no attempt now; it writes only the claim of a cooled member's probe, at a start.
 */
public final class PoolPlacer {

    private final PoolCatalog pools;
    private final ProviderCatalog providers;
    private final ProviderGates gates;
    private final Clock clock;
    private final TenantDirectory tenants;
    private final PoolHealth health;

    public PoolPlacer(PoolCatalog pools, ProviderCatalog providers, ProviderGates gates, Clock clock, TenantDirectory tenants,
                      PoolHealth health) {
        this.tenants = tenants;
        this.health = health;
        this.pools = pools;
        this.providers = providers;
        this.gates = gates;
        this.clock = clock;
    }

    public PoolCatalog pools() {
        return pools;
    }

    public PoolHealth health() {
        return health;
    }

    /**
     * The member of {@code pool} the attempt {@code attempt} of tenant {@code tenantId}'s job {@code jobId} goes to.
     *
     * @param exclude            the member that just failed definitely (left out when another can take it), or null
     * @param excludeClosedUntil the failed member's gate closes until then (its 429's Retry-After, written after this
     *                           placement), or null
     * @param current            the member the job is on now (it stays there when its tenant allows no failover), or
     *                           null at admission
     */
    public PoolPlacement place(Pool pool, String tenantId, Preset preset, String aspectClass, long inputBytes, UUID jobId, int attempt,
                               String exclude, Instant excludeClosedUntil, String current) {
        Tenant tenant = tenant(tenantId);
        List<PoolFacts.Member> members = members(pool, tenant, preset, aspectClass, inputBytes, jobId).stream()
                .map(m -> excludeClosedUntil == null || !m.name().equals(exclude) || (m.closedUntil() != null
                        && !m.closedUntil().isBefore(excludeClosedUntil)) ? m : m.withClosedUntil(excludeClosedUntil)).toList();
        return PoolPlacements.place(new PoolFacts(members, exclude,
                PoolFacts.hash(jobId, attempt), clock.instant(), tenant.rules().failover() ? null : current));
    }

    /**
     * May the job's attempt start on its member {@code provider} of {@code pool} now, as far as the member's health
     * goes? Healthy, or the probe this job holds: yes; whose cooldown just ended: yes when this attempt claims its probe
     * (claimed by the call about to be made, not at placement: a job placed there may wait its turn in a backlog, and a
     * probe must be a call); cooling, probed by another job, or drained: no (the start places the job again). Reads the
     * snapshot only, writes only to claim a probe.
     */
    public boolean mayStartOn(Pool pool, String provider, UUID jobId) {
        Optional<Pool.Member> member = pool.member(provider);
        if (member.isEmpty()) {
            return true; // no longer a member (the files changed): the job finishes where it is
        }
        PoolHealth.State state = health.state(pool, member.get(), jobId);
        return state.state() == MemberState.HEALTHY
                || (state.state() == MemberState.PROBE_OPEN && health.claimProbe(pool, member.get(), jobId));
    }

    /**
     * The members that can serve the job at all (gates aside) and that its tenant may use: whose prices bound what a
     * pool job costs.
     */
    public List<Provider> fitting(Pool pool, String tenantId, Preset preset, String aspectClass, long inputBytes) {
        Tenant tenant = tenant(tenantId);
        return pool.members().stream().filter(m -> tenant.whyNot(m.provider()) == null).map(m -> providers.find(m.provider()).orElse(null))
                .filter(p -> p != null && providers.whyNotServing(p, preset, aspectClass, inputBytes) == null).toList();
    }

    /** Does the tenant's rule let it use some member of {@code pool}? */
    public boolean usable(Pool pool, String tenantId) {
        Tenant tenant = tenant(tenantId);
        return pool.providers().stream().anyMatch(m -> tenant.whyNot(m) == null);
    }

    private Tenant tenant(String tenantId) {
        // A tenant removed from the files since its job was admitted keeps no rules: its jobs finish where they may.
        return tenants.byId(tenantId).orElseGet(() -> new Tenant(tenantId, tenantId, "", 1, 1, 0, java.util.Map.of()));
    }

    private List<PoolFacts.Member> members(Pool pool, Tenant tenant, Preset preset, String aspectClass, long inputBytes, UUID jobId) {
        java.util.Map<String, java.time.Instant> closed = gates.closedUntil(pool.providers());
        return pool.members().stream().map(m -> {
            Provider provider = providers.find(m.provider()).orElse(null);
            String denied = tenant.whyNot(m.provider());
            String whyNot = denied != null ? denied : provider == null ? "no settings for provider " + m.provider()
                    : providers.whyNotServing(provider, preset, aspectClass, inputBytes);
            PoolHealth.State state = health.state(pool, m, jobId);
            return new PoolFacts.Member(m.provider(), m.weight(), m.maxWait(), whyNot, closed.get(m.provider()), state.state(), state.until());
        }).toList();
    }
}
