package io.jobgate.adapter;

import java.util.function.Function;

import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.apache.camel.ServiceStatus;
import org.apache.camel.spi.ReloadStrategy;

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
        String uri = "direct://provider-" + provider;
        for (Route route : context.getRoutes()) {
            if (uri.equals(route.getEndpoint().getEndpointUri())) {
                ServiceStatus status = context.getRouteController().getRouteStatus(route.getRouteId());
                return status != null && status.isStarted() ? null
                        : "its adapter route " + route.getRouteId() + " is " + (status == null ? "not started" : status.name().toLowerCase());
            }
        }
        return "no adapter route is loaded for direct:provider-" + provider + lastReloadError();
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
