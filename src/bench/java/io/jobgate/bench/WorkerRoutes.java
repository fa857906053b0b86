package io.jobgate.bench;

import org.apache.camel.CamelContext;

/**
 * The worker's two routes (routes/worker.camel.yaml), which the benches start and stop themselves (the
 * gateway they boot does not run the worker role): {@code provider-call} takes the calls that
 * {@code worker} hands off, so it starts first and stops last.
 */
final class WorkerRoutes {
    private WorkerRoutes() {
    }

    static void start(CamelContext context) throws Exception {
        context.getRouteController().startRoute("provider-call");
        context.getRouteController().startRoute("worker");
    }

    static void stop(CamelContext context) throws Exception {
        context.getRouteController().stopRoute("worker");
        context.getRouteController().stopRoute("provider-call");
    }
}
