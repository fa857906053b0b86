package io.jobgate.adapter;

import java.util.Collection;
import java.util.Optional;

import io.jobgate.provider.Provider;
import org.apache.camel.CamelContext;
import org.apache.camel.component.http.HttpComponent;

/**
 * The connection pool of the HTTP client behind the adapters (camel-http's {@code http} and {@code https}
 * components), sized from the providers' own limits: every call a provider's {@code max-concurrency}
 * allows gets a connection at once, so no call waits inside the client for one (where its lease would
 * run out while the provider never saw it). Left at the library's defaults (20 per host, 200 in all) the
 * pool, not the provider's limit, would decide how many calls are in flight.
 *
 * <p>Size: the sum of the providers' {@code max-concurrency} (each is over all instances, so one instance
 * never needs more), plus {@code spare} connections for what runs beside the calls (reconciliation's
 * lookups, cancels, readiness probes). Per route (one provider host) the same: several providers may share
 * one host. An operator's own {@code camel.component.http.connections-per-route} or
 * {@code max-total-connections} wins (a smaller one is logged as the cap it is). Connections idle in the
 * pool are checked before reuse and live at most five minutes (a provider's address may move).
 */
public final class AdapterHttpPool {

    /** What the pool was sized to, and whether an operator's setting took its place. */
    public record Size(int perRoute, int total, int callsAllowed, boolean operatorSet) {
    }

    private AdapterHttpPool() {
    }

    /** Calls the providers allow in flight at once, over all instances (each provider's {@code max-concurrency}). */
    public static int callsAllowed(Collection<Provider> providers) {
        return providers.stream().mapToInt(Provider::maxConcurrency).sum();
    }

    /**
     * Sizes both components before any endpoint makes its connection manager.
     *
     * @param operatorPerRoute an explicit {@code camel.component.http.connections-per-route}, if set
     * @param operatorTotal    an explicit {@code camel.component.http.max-total-connections}, if set
     */
    public static Size size(CamelContext context, Collection<Provider> providers, int spare,
                            Optional<Integer> operatorPerRoute, Optional<Integer> operatorTotal) {
        int allowed = callsAllowed(providers);
        int wanted = allowed + spare;
        int perRoute = operatorPerRoute.orElse(wanted);
        int total = operatorTotal.orElse(Math.max(wanted, perRoute));
        // One pool for both schemes. A pooled connection is checked before it is used again: a server (or a
        // proxy in front of it) that closed it while it sat idle would otherwise fail the next request with
        // "no response", an ambiguous outcome for a submit that never reached the provider. The check
        // costs at most a millisecond, against calls that take seconds.
        org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager pool =
                org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder.create()
                        .setMaxConnTotal(total)
                        .setMaxConnPerRoute(perRoute)
                        .setDefaultConnectionConfig(org.apache.hc.client5.http.config.ConnectionConfig.custom()
                                .setValidateAfterInactivity(org.apache.hc.core5.util.TimeValue.ZERO_MILLISECONDS)
                                .setTimeToLive(org.apache.hc.core5.util.TimeValue.ofMinutes(5))
                                .build())
                        .build();
        for (String scheme : new String[] {"http", "https"}) {
            HttpComponent http = context.getComponent(scheme, HttpComponent.class);
            http.setConnectionsPerRoute(perRoute);
            http.setMaxTotalConnections(total);
            http.setClientConnectionManager(pool);
        }
        return new Size(perRoute, total, allowed, operatorPerRoute.isPresent() || operatorTotal.isPresent());
    }
}
