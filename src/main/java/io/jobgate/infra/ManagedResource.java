package io.jobgate.infra;

import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Adapts a start/stop pair to a Camel service, so the context stops embedded servers and pools
 * in the reverse order it started them (pool before database, after the routes are drained).
 */
public final class ManagedResource extends ServiceSupport {

    private static final Logger LOG = LoggerFactory.getLogger(ManagedResource.class);

    @FunctionalInterface
    public interface Action {
        void run() throws Exception;
    }

    private final String name;
    private final Action onStop;

    private ManagedResource(String name, Action onStop) {
        this.name = name;
        this.onStop = onStop;
    }

    public static ManagedResource stoppedBy(String name, Action onStop) {
        return new ManagedResource(name, onStop);
    }

    @Override
    protected void doStop() throws Exception {
        onStop.run();
        LOG.info("Stopped {}", name);
    }

    @Override
    public String toString() {
        return name;
    }
}
