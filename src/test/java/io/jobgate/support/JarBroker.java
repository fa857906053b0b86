package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A broker node of the packaged jar ({@code java -jar target/jobgate.jar broker}), one of a replicated pair
 * started with the commands of docs/operating.md ("Artemis: a replicated pair, from the jar"), read from the
 * page ({@link DocumentedSteps}); run as a process the test may kill and start again on its journal. What
 * differs from the page is only what one machine needs instead of two: loopback, a port and a data directory
 * per node, the test's tenants file and secrets of its own.
 */
public final class JarBroker implements AutoCloseable {

    /** The documented settings a test on one machine gives values of its own. */
    static final Set<String> MACHINE = Set.of("JOBGATE_DATA_DIR", "JOBGATE_TENANTS_FILES", "JOBGATE_BROKER_EMBEDDED_HOST",
            "JOBGATE_BROKER_EMBEDDED_PORT");

    private final Path dir;
    private final Map<String, String> environment;
    private final List<String> command;
    /** What its log says once it serves: "active" (AMQ221007), or for a backup "announced" to its primary (AMQ221031). */
    private final String startedMarker;
    private Process process;
    private int starts;

    private JarBroker(Path dir, Map<String, String> environment, List<String> command, String startedMarker) {
        this.dir = dir;
        this.environment = environment;
        this.command = command;
        this.startedMarker = startedMarker;
    }

    /** A replicated pair: the primary, and a backup holding a copy of its journal; and the gateway's settings for it. */
    public record Pair(JarBroker primary, JarBroker backup, Map<String, String> gatewayEnvironment) implements AutoCloseable {

        /** The primary first (the backup copies its journal from it), then the backup, until it announced itself. */
        public void start() throws Exception {
            primary.start();
            backup.start();
        }

        @Override
        public void close() throws Exception {
            try {
                backup.close();
            } finally {
                primary.close();
            }
        }
    }

    /** The documented pair's two nodes (not started) under {@code dir}, logging in the JMS producers of {@code tenantsFile}. */
    public static Pair documentedPair(Path dir, Path tenantsFile) throws Exception {
        int primaryPort = GatewayTestSupport.freePort();
        int backupPort = GatewayTestSupport.freePort();
        // The secrets the page has the reader make: the test's own, made per run.
        Map<String, String> secrets = Map.of("BROKER_PASSWORD", secret(), "CLUSTER_PASSWORD", secret());
        // Two machines on the page, one here: each documented host:port is a loopback port.
        Map<String, String> hosts = Map.of("broker-a:61616", "127.0.0.1:" + primaryPort, "broker-b:61616", "127.0.0.1:" + backupPort);
        JarBroker primary = node(dir.resolve("primary"), "broker-primary", primaryPort, tenantsFile, secrets, hosts, "AMQ221007");
        JarBroker backup = node(dir.resolve("backup"), "broker-backup", backupPort, tenantsFile, secrets, hosts, "AMQ221031");
        Map<String, String> gateway = new LinkedHashMap<>();
        DocumentedSteps.command("gateway-broker").environment().forEach((k, v) -> gateway.put(k, localise(v, secrets, hosts)));
        return new Pair(primary, backup, gateway);
    }

    private static JarBroker node(Path dir, String step, int port, Path tenantsFile, Map<String, String> secrets,
                                  Map<String, String> hosts, String startedMarker) throws Exception {
        DocumentedSteps.Command documented = DocumentedSteps.command(step);
        assertThat(documented.environment().keySet()).as("the settings of the documented step %s", step).containsAll(MACHINE);
        Map<String, String> environment = new LinkedHashMap<>();
        documented.environment().forEach((k, v) -> environment.put(k, localise(v, secrets, hosts)));
        environment.put("JOBGATE_DATA_DIR", dir.resolve("data").toString());
        environment.put("JOBGATE_TENANTS_FILES", tenantsFile.toString());
        environment.put("JOBGATE_BROKER_EMBEDDED_HOST", "127.0.0.1");
        environment.put("JOBGATE_BROKER_EMBEDDED_PORT", Integer.toString(port));
        List<String> command = new ArrayList<>();
        for (String word : documented.command()) {
            command.add(switch (word) {
                case "java" -> Path.of(System.getProperty("java.home"), "bin", "java").toString();
                case "jobgate.jar" -> "target/jobgate.jar";
                default -> word;
            });
        }
        assertThat(command).as("the documented command of %s", step).endsWith("target/jobgate.jar", "broker");
        Files.createDirectories(dir);
        return new JarBroker(dir, environment, command, startedMarker);
    }

    private static String localise(String value, Map<String, String> secrets, Map<String, String> hosts) {
        String v = DocumentedSteps.expand(value, secrets);
        for (var host : hosts.entrySet()) {
            v = v.replace(host.getKey(), host.getValue());
        }
        return v;
    }

    private static String secret() {
        byte[] bytes = new byte[24];
        new java.security.SecureRandom().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    /**
     * Starts the node and waits until it says it serves (active, AMQ221007; a backup: announced to its
     * primary, AMQ221031); answers how long that took.
     */
    public Duration start() throws Exception {
        long begun = System.nanoTime();
        Path log = dir.resolve("log/run-" + (++starts) + ".log");
        Files.createDirectories(log.getParent());
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        // Nothing inherited chooses its settings: only the documented ones.
        pb.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_") || k.startsWith("CAMEL_"));
        pb.environment().putAll(environment);
        process = pb.start();
        Process started = process;
        await("broker node serving").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50)).until(() -> {
            assertThat(started.isAlive()).as("broker node exited:\n%s", Files.readString(log)).isTrue();
            return Files.readString(log).contains(startedMarker);
        });
        return Duration.ofNanos(System.nanoTime() - begun);
    }

    /** Whether its log (this start's) says it is active: a backup once it took over. */
    public boolean active() throws Exception {
        Path log = dir.resolve("log/run-" + starts + ".log");
        return Files.exists(log) && Files.readString(log).contains("AMQ221007");
    }

    /**
     * Whether this (backup) node handed back to its primary and is a backup again: after a failback its log
     * (the same start's: the server restarts inside the JVM) says "restarting as replicating backup" (AMQ221039),
     * then, once it copied the primary's journal again, "backup announced" (AMQ221031).
     */
    public boolean backupAgain() throws Exception {
        Path log = dir.resolve("log/run-" + starts + ".log");
        if (!Files.exists(log)) {
            return false;
        }
        String text = Files.readString(log);
        int restarted = text.lastIndexOf("AMQ221039");
        return restarted >= 0 && text.indexOf("AMQ221031", restarted) >= 0;
    }

    /** The folder of its logs (one run-N.log per start), for a failed test's evidence. */
    public Path logs() {
        return dir.resolve("log");
    }

    /** SIGKILL to the node's JVM: its journal stays as a crash leaves it. */
    public void kill() throws Exception {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Override
    public void close() throws Exception {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
