package io.jobgate.adapter;

import java.time.Duration;
import java.util.Collection;
import java.util.Iterator;
import java.util.Optional;

import io.jobgate.provider.Provider;
import org.apache.camel.CamelContext;
import org.apache.camel.component.http.HttpClientConfigurer;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.support.service.ServiceSupport;
import org.apache.hc.client5.http.impl.IdleConnectionEvictor;
import org.apache.hc.core5.http.HeaderElement;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.message.MessageSupport;
import org.apache.hc.core5.util.TimeValue;

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
 *
 * <p>A connection idle longer than {@code maxIdle} (or than the server's own {@code Keep-Alive: timeout}, less
 * a second) is not used again: a server closes an idle connection when its own timeout passes, and a submit
 * sent on it in that instant gets no answer at all, an ambiguous outcome ({@code submission_unknown}) that a
 * provider without a lookup (OpenAI) can never settle. The check before reuse cannot see a close that has
 * not happened yet; leaving the connection before the server's timeout does. Servers' idle timeouts start at
 * about 5 s (Node, uvicorn), so the default stays below them; a new connection costs milliseconds against
 * calls of seconds.
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
    public static Size size(CamelContext context, Collection<Provider> providers, int spare, Duration maxIdle,
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
            HttpClientConfigurer operators = http.getHttpClientConfigurer();
            http.setHttpClientConfigurer(builder -> {
                if (operators != null) {
                    operators.configureHttpClient(builder);
                }
                builder.setKeepAliveStrategy((response, httpContext) -> keepIdle(response, maxIdle));
            });
        }
        // Connections past their time are closed in the background too, not only when the pool reaches them.
        IdleConnectionEvictor evictor = new IdleConnectionEvictor(pool, TimeValue.ofMilliseconds(Math.max(100, maxIdle.toMillis())),
                TimeValue.ofMilliseconds(Math.max(1, maxIdle.toMillis())));
        try {
            context.addService(new ServiceSupport() {
                @Override
                protected void doStart() {
                    evictor.start();
                }

                @Override
                protected void doStop() {
                    evictor.shutdown();
                }
            });
        } catch (Exception e) {
            throw new IllegalStateException("the adapters' idle-connection evictor did not start", e);
        }
        return new Size(perRoute, total, allowed, operatorPerRoute.isPresent() || operatorTotal.isPresent());
    }

    /**
     * How long a connection may wait idle after {@code response} before it is not used again: {@code maxIdle},
     * or the server's {@code Keep-Alive: timeout} less a second when that is shorter (at 1 s or less: not kept).
     * Never zero: the client reads a keep-alive of zero as "for ever".
     */
    static TimeValue keepIdle(HttpResponse response, Duration maxIdle) {
        long millis = maxIdle.toMillis();
        // The header read as the client's own keep-alive strategy reads it (its elements, "timeout" in seconds).
        for (Iterator<HeaderElement> it = MessageSupport.iterate(response, "Keep-Alive"); it.hasNext(); ) {
            HeaderElement element = it.next();
            if ("timeout".equalsIgnoreCase(element.getName()) && element.getValue() != null && element.getValue().matches("\\d{1,9}")) {
                millis = Math.min(millis, Math.max(0, Long.parseLong(element.getValue()) * 1000 - 1000));
                break;
            }
        }
        return TimeValue.ofMilliseconds(Math.max(1, millis));
    }
}
