package io.jobgate.canary;

import java.time.Clock;
import java.util.function.Function;

import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobTransitions;
import io.jobgate.provider.AdapterSource;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The wiring of canary (docs/canary.md): candidates beside stable adapters, a share of attempts, gates, stop,
 * rollback. Its stops counted in the metrics and its events published on the relay's topic are wired by the
 * gateway's configuration: canary uses neither ops nor relay.
 */
public final class CanaryWiring {

    private CanaryWiring() {
    }

    public record Canary(Canaries canaries, CanaryLifecycle lifecycle, CanaryViews views) {
    }

    /** @param candidateSources each provider's candidate adapter source, by provider name */
    public static Canary bind(CamelContext context, JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock,
                              ProviderCatalog providers, Function<String, AdapterSource> candidateSources, JobTransitions transitions,
                              JobFinalizer finalizer) {
        Registry registry = context.getRegistry();
        Canaries canaries = new Canaries(jdbc, providers, candidateSources, clock);
        CanaryLifecycle canaryLifecycle = new CanaryLifecycle(jdbc, transactions, transitions, finalizer, providers, canaries);
        CanaryViews canaryViews = new CanaryViews(jdbc, providers, canaries, clock);
        registry.bind("canaries", canaries);
        registry.bind("canaryLifecycle", canaryLifecycle);
        return new Canary(canaries, canaryLifecycle, canaryViews);
    }
}
