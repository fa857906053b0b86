package io.jobgate;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

import io.jobgate.infra.Settings;
import org.apache.camel.main.Main;

/**
 * The gateway's Camel Main: its settings file, its CamelConfiguration, environment overrides. Used
 * by the {@code run} command, the benchmark and the tests; it knows none of the commands.
 */
public final class Gateway {

    /** Settings file of the gateway; every entry can be overridden by environment variable. */
    public static final String SETTINGS = "file:config/application.properties";

    private Gateway() {
    }

    /** The gateway's Camel Main, with the CamelConfiguration that wires the parts. */
    public static Main gateway() throws IOException {
        Main main = new Main(Gateway.class, JobgateConfiguration.class) {
            /**
             * Camel's early pass over every route file, before the context is configured, looks for
             * beans declared in them (and modelines, which are off): jobgate's route files declare
             * routes, REST and route configurations only, its beans are wired in Java, so the pass only
             * parsed each file a second time (about 10 % of the start's main thread). A bean declared
             * in a route file would still be bound, when the routes load.
             */
            @Override
            protected void modelineRoutes(org.apache.camel.CamelContext context) {
            }
        };
        // Named above instead of found by scanning this package, which walks every entry of the
        // shaded jar (~1.2 s of each start).
        main.configure().setBasePackageScanEnabled(false);
        main.setPropertyPlaceholderLocations(SETTINGS);
        overrideFromEnvironment(main);
        return main;
    }

    /** Starts the gateway on a background thread and returns once its Camel context runs (bench, tests). */
    public static Main startInBackground(java.time.Duration timeout) throws Exception {
        Main main = gateway();
        java.util.concurrent.atomic.AtomicReference<Exception> failure = new java.util.concurrent.atomic.AtomicReference<>();
        Thread runner = new Thread(() -> {
            try {
                main.run();
            } catch (Exception e) {
                failure.set(e);
            }
        }, "jobgate-main");
        runner.setDaemon(true);
        runner.start();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (main.getCamelContext() == null || !main.getCamelContext().isStarted()) {
            if (!runner.isAlive()) {
                Exception cause = failure.get();
                throw new IllegalStateException("the gateway did not start" + (cause == null ? "" : ": " + cause.getMessage()), cause);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the gateway did not start within " + timeout);
            }
            Thread.sleep(50); // start-up poll of a background thread; nothing to wait on instead
        }
        return main;
    }

    /**
     * The {@code camel.*} settings docs/settings.md documents: each may come from the environment alone,
     * whether or not the settings file names it.
     */
    static final java.util.List<String> CAMEL_SETTINGS = java.util.List.of("camel.server.host", "camel.server.port");

    /**
     * Camel Main reads {@code CAMEL_*} variables for components only; the server, management and
     * REST settings — the file's entries and {@link #CAMEL_SETTINGS}, whether or not the file names
     * them — are overridden here by the variable named after each ({@code camel.server.port} ←
     * {@code CAMEL_SERVER_PORT}): a variable is looked up by the entry's name, never read back into
     * one, since its underscores could stand for dots or dashes. {@code jobgate.*} entries are
     * resolved by Camel's properties component, which asks the environment first for any key.
     */
    static void overrideFromEnvironment(Main main) throws IOException {
        java.util.Set<String> keys = new java.util.TreeSet<>(CAMEL_SETTINGS);
        Path file = Path.of(SETTINGS.substring("file:".length()));
        if (Files.isReadable(file)) {
            Properties settings = new Properties();
            try (Reader reader = Files.newBufferedReader(file)) {
                settings.load(reader);
            }
            keys.addAll(settings.stringPropertyNames());
        }
        for (String key : keys) {
            String value = System.getenv(Settings.environmentName(key));
            if (key.startsWith("camel.") && value != null) {
                main.addOverrideProperty(key, value);
            }
        }
    }
}
