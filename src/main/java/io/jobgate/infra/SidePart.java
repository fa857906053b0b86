package io.jobgate.infra;

import java.util.Map;

/**
 * A part that may run beside the gateway in its process, found on the class path
 * ({@code META-INF/services/io.jobgate.infra.SidePart}), so the gateway's own code imports none of
 * them: the bundled provider simulator is one. It starts in the background while the gateway
 * starts its database, and hands back the settings the gateway should use to reach it.
 */
public interface SidePart {

    /** A started side part: stopped with the gateway. */
    interface Running extends AutoCloseable {
        /** Settings to override so the gateway reaches this part (e.g. its URL, once its port is known). */
        Map<String, String> overrides();

        @Override
        void close();
    }

    /** Its name, for logs and the Camel service that stops it. */
    String name();

    /** Starts in the background if the settings enable it; null when they leave it off. */
    BackgroundStart<Running> start(Settings settings);
}
