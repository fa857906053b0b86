package io.jobgate.pool;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Arrays;
import java.util.Map;

import io.jobgate.infra.Settings;
import io.jobgate.job.ProviderGates;
import io.jobgate.ops.Meters;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.TenantDirectory;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wiring of pool: the pools read from {@code jobgate.pools.dirs} and checked against the providers, the tenants'
 * rules of where their jobs run checked against both, the members' health and drain, and the placer.
 */
public final class PoolWiring {

    private static final Logger LOG = LoggerFactory.getLogger(PoolWiring.class);

    private PoolWiring() {
    }

    public static PoolPlacer bind(CamelContext context, Settings settings, JdbcTemplate jdbc, ProviderCatalog providers,
                                  io.jobgate.preset.PresetCatalog presets, ProviderGates gates, Clock clock, TenantDirectory tenants)
            throws IOException {
        PoolCatalog pools = PoolCatalog.load(Arrays.stream(settings.required("jobgate.pools.dirs").split(","))
                .map(String::trim).filter(d -> !d.isEmpty()).map(Path::of).toList(), providers);
        pools.checkPresets(presets);
        pools.all().forEach(pool -> LOG.info("pool {} ({} jobs{}): {}", pool.name(), pool.kind(),
                (pool.kindDefault() ? ", the kind's default" : "") + (pool.presets().isEmpty() ? "" : ", presets "
                        + String.join(", ", new java.util.TreeSet<>(pool.presets()))), pool.members().stream()
                .map(m -> m.provider() + " weight " + m.weight() + " max-wait " + m.maxWait().toSeconds() + " s"
                        + (m.failureThreshold() == 0 ? ", never cools" : ", cools " + m.cooldown().toSeconds() + " s after "
                        + m.failureThreshold() + " failures within " + m.failureWindow().toSeconds() + " s"))
                .collect(java.util.stream.Collectors.joining(", "))));
        TenantPoolRules.check(tenants.all(), pools, providers);
        PoolHealth health = new PoolHealth(jdbc, clock);
        PoolPlacer placer = new PoolPlacer(pools, providers, gates, clock, tenants, health);
        context.getRegistry().bind("poolHealth", health);
        context.getRegistry().bind("poolCatalog", pools);
        context.getRegistry().bind("poolPlacer", placer);
        return placer;
    }

    /**
     * The pools' series (docs/operating.md, "Pools"): per pool and member, whether it takes attempts now, cools down,
     * is drained, its weight, its calls in flight and its failures in its window; and the count of cooldowns begun.
     */
    public static PoolViews meter(PoolPlacer placer, Meters meters, JdbcTemplate jdbc, Clock clock) {
        PoolViews views = new PoolViews(placer.pools(), placer.health(), jdbc, clock);
        placer.health().onCooled(meters::poolMemberCooled);
        if (placer.pools().all().isEmpty()) {
            return views;
        }
        Map<String, String> gauges = new java.util.LinkedHashMap<>();
        gauges.put("jobgate_pool_member_takes_attempts", "1 while the pool member takes new attempts (gate open, healthy, not drained)");
        gauges.put("jobgate_pool_member_cooling", "1 while the pool member cools down after its failures, or its probe runs");
        gauges.put("jobgate_pool_member_drained", "1 while an operator keeps the pool member drained");
        gauges.put("jobgate_pool_member_weight", "the pool member's weight");
        gauges.put("jobgate_pool_member_calls_in_flight", "calls in flight on the pool member's provider, over all instances");
        gauges.put("jobgate_pool_member_failures", "the pool member's definite failures in its current window");
        meters.gauges(gauges, 0, () -> {
            Map<String, Map<Map<String, String>, Double>> series = new java.util.HashMap<>();
            gauges.keySet().forEach(name -> series.put(name, new java.util.HashMap<>()));
            for (PoolViews.PoolView pool : views.list()) {
                for (PoolViews.Member m : pool.members()) {
                    Map<String, String> tags = Map.of("pool", pool.name(), "member", m.provider());
                    series.get("jobgate_pool_member_takes_attempts").put(tags, m.state().equals("open") || m.state().equals("probe-open") ? 1.0 : 0.0);
                    series.get("jobgate_pool_member_cooling").put(tags, m.state().equals("cooling") || m.state().equals("probing") ? 1.0 : 0.0);
                    series.get("jobgate_pool_member_drained").put(tags, m.state().equals("drained") ? 1.0 : 0.0);
                    series.get("jobgate_pool_member_weight").put(tags, (double) m.weight());
                    series.get("jobgate_pool_member_calls_in_flight").put(tags, (double) m.callsInFlight());
                    series.get("jobgate_pool_member_failures").put(tags, (double) m.failures());
                }
            }
            return series;
        });
        return views;
    }
}
