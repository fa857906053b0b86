package io.jobgate.api;

import java.util.List;

import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;
import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.PlatformHttpComponent;
import org.apache.camel.component.platform.http.PlatformHttpConstants;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpEngine;
import org.apache.camel.support.LifecycleStrategySupport;

/**
 * The calls the gateway may hold open without a thread (a read waiting for its job, {@link WaitingReads}; a worker's
 * lease waiting for tasks, {@link LeaseWaits}): each a Vert.x handler ahead of the exchange.
 *
 * <p>Why ahead of the route: platform-http's Vert.x consumer (Camel 4.18) runs the whole exchange inside
 * {@code vertx.executeBlocking} and calls the route's processor synchronously, so a call held in the route would hold a
 * Vert.x worker until it answered (20 by default: the 21st held call would stall the whole API). A handler here sees
 * every request after its body was read (holding one before that would let an HTTP/2 request end unread, which the body
 * handler then refuses), parks the ones it holds (a timer on the event loop, an entry in a set) and passes every other
 * on at once ({@code rc.next()}).
 */
public final class HeldRequests {

    /** One kind of held call. */
    public interface Holder extends Handler<RoutingContext> {
        /** Lets every held call go: the gateway is stopping, its routes still answer. */
        void releaseAll();
    }

    private HeldRequests() {
    }

    /**
     * Makes platform-http build its consumers with these holders (the engine it looks up by name before making one of
     * its own: a Camel that made its own would answer every held call at once, so it refuses to start so), and lets
     * every held call go as soon as the context begins to stop.
     */
    public static void install(CamelContext context, List<Holder> holders) throws Exception {
        VertxPlatformHttpEngine engine = new VertxPlatformHttpEngine();
        engine.setCamelContext(context);
        engine.setHandlers(List.copyOf(holders));
        context.getRegistry().bind(PlatformHttpConstants.PLATFORM_HTTP_ENGINE_NAME, engine);
        context.addStartupListener((started, alreadyStarted) -> {
            if (started.getComponent("platform-http", PlatformHttpComponent.class).getEngine() != engine) {
                throw new IllegalStateException("platform-http does not use the engine of held calls");
            }
        });
        context.getLifecycleStrategies().add(new LifecycleStrategySupport() {
            @Override
            public void onContextStopping(CamelContext stopping) {
                holders.forEach(Holder::releaseAll);
            }
        });
    }
}
