package io.jobgate.adapter;

import java.util.function.Function;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.ServiceStatus;
import org.apache.camel.spi.ReloadStrategy;
import org.apache.camel.spi.Resource;

import io.jobgate.provider.AdapterSource;

/**
 * Is a provider's adapter route loaded and started right now? A settings file alone does not make
 * a provider: a dropped-in route that does not parse, or was stopped, takes no jobs (admission
 * answers 422 instead of queueing jobs that would loop in {@code submitting}). Asked live, so a
 * fixed file dropped in is offered as soon as its route starts.
 */
public final class AdapterRoutes implements Function<String, String> {

    private final CamelContext context;

    public AdapterRoutes(CamelContext context) {
        this.context = context;
    }

    /** @return null when the route consuming {@code direct:provider-<name>} is started, else why not */
    @Override
    public String apply(String provider) {
        // Asked on every admission: the route found last time answers while it still runs (a
        // direct endpoint has one consumer, so a started route is the one), without a scan of all routes.
        Route known = running.get(provider);
        if (known != null && started(known)) {
            return null;
        }
        Route route = consuming("direct://provider-" + provider);
        if (route == null) {
            return "no adapter route is loaded for direct:provider-" + provider + lastReloadError();
        }
        ServiceStatus status = context.getRouteController().getRouteStatus(route.getRouteId());
        if (status != null && status.isStarted()) {
            running.put(provider, route);
            return null;
        }
        return "its adapter route " + route.getRouteId() + " is " + (status == null ? "not started" : status.name().toLowerCase());
    }

    /** The route last seen running for each provider's {@code direct:provider-<name>}. */
    private final java.util.Map<String, Route> running = new java.util.concurrent.ConcurrentHashMap<>();

    /** Whether that route object still consumes: false once it is stopped, suspended or removed (a hot reload). */
    private static boolean started(Route route) {
        return route.getConsumer() instanceof org.apache.camel.StatefulService consumer && consumer.isStarted();
    }

    /**
     * The route file of {@code provider}'s adapter as loaded (digest, settings it reads), read once per
     * loaded route: a hot reload makes a new route object, so its file is read again.
     */
    public AdapterSource source(String provider) {
        Loaded known = sources.get(provider);
        if (known != null && started(known.route())) {
            return known.source(); // that route still consumes the endpoint: no other route can
        }
        Route route = consuming("direct://provider-" + provider);
        return route == null ? AdapterSource.UNKNOWN : sourceOf(provider, provider, route);
    }

    /**
     * The candidate route file of {@code provider} (consuming {@code direct:provider-<name>-candidate}) as
     * loaded, when that route is started; null when none runs. Its placeholders of the provider's settings
     * count in its revision, as for the stable file.
     */
    public AdapterSource candidateSource(String provider) {
        String key = provider + "-candidate";
        Loaded known = sources.get(key);
        if (known != null && started(known.route())) {
            return known.source(); // a candidate in its rollout: asked on every start, found without a scan
        }
        String uri = "direct://provider-" + provider + "-candidate";
        // Most providers never have a candidate: a route consuming the endpoint registers it, so no endpoint
        // means no candidate, found by one registry lookup instead of a copy and scan of every route under
        // Camel's routes lock (sixteen consumers took turns on it).
        if (context.hasEndpoint(uri) == null) {
            return null;
        }
        Route route = consuming(uri);
        ServiceStatus status = route == null ? null : context.getRouteController().getRouteStatus(route.getRouteId());
        return status == null || !status.isStarted() ? null : sourceOf(key, provider, route);
    }

    /** The route consuming {@code uri} (a direct endpoint has one consumer), or null: a scan of every route. */
    private Route consuming(String uri) {
        for (Route route : context.getRoutes()) {
            if (uri.equals(route.getEndpoint().getEndpointUri())) {
                return route;
            }
        }
        return null;
    }

    /** {@code route}'s file, read once per route object (kept under {@code key}: the provider, or its candidate). */
    private AdapterSource sourceOf(String key, String provider, Route route) {
        Loaded loaded = sources.get(key);
        if (loaded == null || loaded.route() != route) {
            loaded = new Loaded(route, read(provider, route));
            sources.put(key, loaded);
        }
        return loaded.source();
    }

    private record Loaded(Route route, AdapterSource source) {
    }

    private final java.util.Map<String, Loaded> sources = new java.util.concurrent.ConcurrentHashMap<>();

    private static AdapterSource read(String provider, Route route) {
        Resource resource = route.getSourceResource();
        if (resource == null || !resource.exists()) {
            return AdapterSource.UNKNOWN;
        }
        try (java.io.InputStream in = resource.getInputStream()) {
            return AdapterSource.of(provider, new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.io.IOException e) {
            return AdapterSource.UNKNOWN;
        }
    }

    /** The last failed reload of a route file, named with its reason (a drop-in that did not load). */
    private String lastReloadError() {
        ReloadStrategy reload = context.hasService(ReloadStrategy.class);
        Exception error = reload == null ? null : reload.getLastError();
        if (error == null) {
            return "";
        }
        String message = error.getMessage() == null ? error.getClass().getSimpleName() : error.getMessage();
        return " (the last route reload failed: " + AdapterResult.truncate(message.replaceAll("\\s+", " "), 300) + ")";
    }
}
