package io.jobgate.adapter;

import java.time.Clock;

import io.jobgate.common.SettingsReader;
import io.jobgate.job.ProviderGates;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The wiring of adapter, in two steps: the adapters' routes and their HTTP pool as soon as the providers are
 * read (the pool is sized by the providers' settings as their files have them, before the adapters' sources
 * are read into them), then the beans the routes call, once the provider gates exist.
 */
public final class AdapterWiring {

    private AdapterWiring() {
    }

    /** The adapters' HTTP pool as sized, and their routes (which run, and the source of each). */
    public record Routes(AdapterHttpPool.Size pool, AdapterRoutes routes) {
    }

    /** Calls to adapter routes from outside a route, and a provider's cancel. */
    public record Calls(AdapterCaller caller, ProviderCancel cancel) {
    }

    public static Routes routes(CamelContext context, SettingsReader settings, ProviderCatalog providers) {
        HttpMethodConverter.register(context);
        // Every call a provider allows gets a connection at once (a call waiting for one would spend its lease).
        AdapterHttpPool.Size pool = AdapterHttpPool.size(context, providers.all(),
                settings.intValue("jobgate.http.spare-connections", 0, 100_000),
                settings.millis("jobgate.http.max-idle-ms", 0, 3_600_000),
                settings.optional("camel.component.http.connections-per-route").map(Integer::valueOf),
                settings.optional("camel.component.http.max-total-connections").map(Integer::valueOf));
        AdapterRoutes adapterRoutes = new AdapterRoutes(context);
        providers.watchAdapters(adapterRoutes);
        providers.readAdapterSources(adapterRoutes::source);
        return new Routes(pool, adapterRoutes);
    }

    public static Calls calls(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, Clock clock, ProviderCatalog providers,
                              ProviderGates gates) {
        Registry registry = context.getRegistry();
        registry.bind("providerReadiness", new ProviderReadiness(providers, gates, clock,
                settings.millis("jobgate.providers.readiness-period-ms", 1000, 86_400_000),
                settings.millis("jobgate.providers.readiness-backoff-ms", 10, 60_000)));
        AdapterCaller adapters = new AdapterCaller(context);
        ProviderCancel providerCancel = new ProviderCancel(jdbc, providers, adapters);
        registry.bind("providerCancel", providerCancel);
        registry.bind("adapterAnswer", new AdapterAnswer(providers));
        registry.bind("multipartForm", new MultipartForm());
        registry.bind("awsSigV4", new AwsSigV4());
        return new Calls(adapters, providerCancel);
    }
}
