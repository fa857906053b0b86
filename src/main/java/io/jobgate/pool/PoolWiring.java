package io.jobgate.pool;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Arrays;

import io.jobgate.infra.Settings;
import io.jobgate.job.ProviderGates;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.TenantDirectory;
import org.apache.camel.CamelContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The wiring of pool: the pools read from {@code jobgate.pools.dirs} and checked against the providers, the tenants'
 * rules of where their jobs run checked against both, and the placer.
 */
public final class PoolWiring {

    private static final Logger LOG = LoggerFactory.getLogger(PoolWiring.class);

    private PoolWiring() {
    }

    public static PoolPlacer bind(CamelContext context, Settings settings, ProviderCatalog providers, ProviderGates gates, Clock clock,
                                  TenantDirectory tenants) throws IOException {
        PoolCatalog pools = PoolCatalog.load(Arrays.stream(settings.required("jobgate.pools.dirs").split(","))
                .map(String::trim).filter(d -> !d.isEmpty()).map(Path::of).toList(), providers);
        pools.all().forEach(pool -> LOG.info("pool {} ({} jobs): {}", pool.name(), pool.kind(), pool.members().stream()
                .map(m -> m.provider() + " weight " + m.weight() + " max-wait " + m.maxWait().toSeconds() + " s")
                .collect(java.util.stream.Collectors.joining(", "))));
        TenantPoolRules.check(tenants.all(), pools, providers);
        PoolPlacer placer = new PoolPlacer(pools, providers, gates, clock, tenants);
        context.getRegistry().bind("poolCatalog", pools);
        context.getRegistry().bind("poolPlacer", placer);
        return placer;
    }
}
