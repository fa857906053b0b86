package io.jobgate.support;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Per test class: a fresh HTTP port and data directory, the shared test PostgreSQL (emptied), and
 * the test tenants beside the shipped ones. Settings go in as system properties, which override
 * config/application.properties the same way environment variables do in production.
 */
public final class GatewayTestSupport {

    private GatewayTestSupport() {
    }

    /** The shipped routes plus the test adapters (fake providers). */
    public static final String ROUTES = "file:routes/*.camel.yaml,file:routes/providers/*.camel.yaml,file:routes/evaluators/*.camel.yaml,"
            + "file:src/test/resources/adapters/*.camel.yaml";

    /** Workers and a fast poller: jobs waiting on a provider are asked about within a fraction of a second. */
    public static final Map<String, String> RECONCILING = Map.of(
            "jobgate.worker.enabled", "true",
            "jobgate.worker.backoff-base-ms", "100",
            "jobgate.reconcile.enabled", "true",
            "jobgate.reconcile.period-ms", "100",
            "jobgate.reconcile.first-check-ms", "200",
            "jobgate.reconcile.check-cap-ms", "400");

    /**
     * The built-in simulator as the provider (100 ms renders, 1.8 s slow ones against a 1 s call deadline),
     * workers with short backoffs and a fast poller.
     */
    public static final Map<String, String> SIMULATING = Map.of(
            "jobgate.simulator.enabled", "true",
            "jobgate.simulator.processing-ms", "100",
            "jobgate.simulator.slow-ms", "1800",
            "jobgate.provider.simulator.call-deadline-ms", "1000",
            "jobgate.worker.enabled", "true",
            "jobgate.worker.backoff-base-ms", "200",
            "jobgate.reconcile.enabled", "true",
            "jobgate.reconcile.first-check-ms", "300",
            "jobgate.reconcile.period-ms", "100");

    /** {@code base} with {@code extra} on top. */
    public static Map<String, String> with(Map<String, String> base, Map<String, String> extra) {
        Map<String, String> all = new LinkedHashMap<>(base);
        all.putAll(extra);
        return all;
    }

    /** What the previous test class set: cleared first, so no class inherits another's settings. */
    private static final java.util.Set<String> SET_BEFORE = new java.util.HashSet<>();

    public static synchronized int prepare(Map<String, String> extra) throws Exception {
        SET_BEFORE.forEach(System::clearProperty);
        SET_BEFORE.clear();
        int port = freePort();
        TestDatabase.reset();
        Map<String, String> props = new LinkedHashMap<>();
        props.put("camel.server.port", Integer.toString(port));
        props.put("jobgate.data-dir", Files.createTempDirectory("jobgate-test").toString());
        props.put("jobgate.db.url", TestDatabase.url());
        props.put("jobgate.db.user", TestDatabase.user());
        props.put("jobgate.db.password", TestDatabase.password());
        props.put("jobgate.broker.url", "");
        props.put("jobgate.s3.endpoint", "");
        props.put("jobgate.s3.access-key", "");
        props.put("jobgate.s3.secret-key", "");
        props.put("jobgate.broker.user", "");
        props.put("jobgate.broker.password", "");
        props.put("jobgate.broker.embedded-port", Integer.toString(freePort()));
        props.put("jobgate.relay.enabled", "true");
        props.put("jobgate.relay.claim-seconds", "30");
        props.put("jobgate.tenants.files", "config/tenants.yaml,src/test/resources/test-tenants.yaml");
        props.put("jobgate.uploads.max-bytes", "26214400");
        props.put("jobgate.admission.max-in-flight", "10000");
        // Workers and sweeper only where a test class asks for them (relay tests inspect jobs.dispatch).
        props.put("jobgate.worker.enabled", "false");
        props.put("jobgate.sweeper.enabled", "false");
        props.put("jobgate.reconcile.enabled", "false");
        props.put("jobgate.simulator.enabled", "false");
        props.put("jobgate.simulator.port", "0");
        props.put("jobgate.simulator.faults", "");
        props.put("jobgate.public-base-url", "http://127.0.0.1:" + port);
        props.put("jobgate.providers.dirs", "config/providers,src/test/resources/providers");
        props.put("camel.main.routes-include-pattern", ROUTES);
        props.put("camel.main.routes-reload-enabled", "false");
        props.putAll(extra);
        props.forEach(System::setProperty);
        SET_BEFORE.addAll(props.keySet());
        return port;
    }

    /**
     * Binds {@code clock} as the gateway's clock before the gateway wires itself (from a test
     * class's {@code @Configure} method), so a test moves time by moving it.
     */
    public static void useClock(org.apache.camel.main.MainConfigurationProperties configuration, java.time.Clock clock) {
        ClockConfiguration.clock = clock;
        // Explicit configurations run before the ones found by scanning the main class (JobgateConfiguration).
        configuration.addConfiguration(ClockConfiguration.class);
    }

    /** Binds the clock a test class chose (Camel instantiates configurations by class). */
    public static final class ClockConfiguration implements org.apache.camel.CamelConfiguration {
        static volatile java.time.Clock clock;

        @Override
        public void configure(org.apache.camel.CamelContext context) {
            context.getRegistry().bind("clock", clock);
        }
    }

    /**
     * A free port below Linux's ephemeral range (32768 and up): a port the kernel handed out for
     * ServerSocket(0) and released can be handed out again at once to any client socket (the many
     * connections to PostgreSQL) before the test's server binds it.
     */
    public static int freePort() throws IOException {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int i = 0; i < 200; i++) {
            int port = random.nextInt(20_000, 32_000);
            try (ServerSocket socket = new ServerSocket()) {
                socket.setReuseAddress(false);
                socket.bind(new java.net.InetSocketAddress("0.0.0.0", port));
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }
}
