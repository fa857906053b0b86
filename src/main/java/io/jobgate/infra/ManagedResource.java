package io.jobgate.infra;

import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Adapts a start/stop pair to a Camel service, so the context stops embedded servers and pools
 * in the reverse order it started them (pool before database, after the routes are drained). A
 * start action runs when the context starts, before any route: a part starting in the background
 * is awaited there, so the routes are loaded meanwhile.
 */
public final class ManagedResource extends ServiceSupport {

    private static final Logger LOG = LoggerFactory.getLogger(ManagedResource.class);

    @FunctionalInterface
    public interface Action {
        void run() throws Exception;
    }

    private final String name;
    private final Action onStart;
    private final Action onStop;

    private ManagedResource(String name, Action onStart, Action onStop) {
        this.name = name;
        this.onStart = onStart;
        this.onStop = onStop;
    }

    public static ManagedResource stoppedBy(String name, Action onStop) {
        return new ManagedResource(name, () -> { }, onStop);
    }

    /** {@code onStart} runs as the context starts, before the routes; {@code onStop} after they stopped. */
    public static ManagedResource startedAndStoppedBy(String name, Action onStart, Action onStop) {
        return new ManagedResource(name, onStart, onStop);
    }

    @Override
    protected void doStart() throws Exception {
        onStart.run();
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
