package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A standalone Artemis of a test's own, made from a broker distribution by {@code .ci/artemis-instance}
 * (configured as CI's broker), run as a process the test may kill and start again on its journal.
 */
public final class StandaloneBroker implements AutoCloseable {

    private final Path instance;
    private final int port;
    /** What its log says once it serves: "active" (AMQ221007), or for a backup "announced" to its primary (AMQ221031). */
    private final String startedMarker;
    private Process process;
    private int starts;

    private StandaloneBroker(Path instance, int port, String startedMarker) {
        this.instance = instance;
        this.port = port;
        this.startedMarker = startedMarker;
    }

    /** A replicated pair (artemis/ha): the primary, and a backup holding a copy of its journal. */
    public record Pair(StandaloneBroker primary, StandaloneBroker backup) implements AutoCloseable {

        /**
         * Both addresses, ha=true (the client learns the pair's topology and follows a failover), and
         * reconnect forever: the URL docs/operating.md gives the gateway for a pair.
         */
        public String url() {
            return "(tcp://127.0.0.1:%d,tcp://127.0.0.1:%d)?ha=true&reconnectAttempts=-1&retryInterval=200&retryIntervalMultiplier=2"
                    .formatted(primary.port, backup.port) + "&maxRetryInterval=2000";
        }

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

    /** Creates a replicated pair's two instances (not started) under {@code dir}. */
    public static Pair createPair(Path artemisHome, Path dir) throws Exception {
        int primaryPort = GatewayTestSupport.freePort();
        int backupPort = GatewayTestSupport.freePort();
        return new Pair(create(artemisHome, dir.resolve("primary"), primaryPort, "jobgate-primary", "primary", backupPort, "AMQ221007"),
                create(artemisHome, dir.resolve("backup"), backupPort, "jobgate-backup", "backup", primaryPort, "AMQ221031"));
    }

    private static StandaloneBroker create(Path artemisHome, Path instance, int port, String name, String role, int peerPort,
                                           String startedMarker) throws Exception {
        Path log = instance.resolveSibling(instance.getFileName() + "-create.log");
        Files.createDirectories(instance.getParent());
        Process create = new ProcessBuilder("bash", ".ci/artemis-instance", artemisHome.toString(), instance.toString(),
                Integer.toString(port), Integer.toString(GatewayTestSupport.freePort()), name, role, Integer.toString(peerPort))
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        assertThat(create.waitFor(120, TimeUnit.SECONDS)).as("artemis create finished").isTrue();
        assertThat(create.exitValue()).as("artemis create: %s", Files.readString(log)).isZero();
        return new StandaloneBroker(instance, port, startedMarker);
    }

    /** Creates the instance (not started) from the distribution at {@code artemisHome}. */
    public static StandaloneBroker create(Path artemisHome, Path instance) throws Exception {
        int port = GatewayTestSupport.freePort();
        Process create = new ProcessBuilder("bash", ".ci/artemis-instance", artemisHome.toString(), instance.toString(),
                Integer.toString(port), Integer.toString(GatewayTestSupport.freePort()), "jobgate-chaos")
                .redirectErrorStream(true).redirectOutput(instance.resolveSibling("artemis-create.log").toFile()).start();
        assertThat(create.waitFor(120, TimeUnit.SECONDS)).as("artemis create finished").isTrue();
        assertThat(create.exitValue()).as("artemis create: %s", Files.readString(instance.resolveSibling("artemis-create.log")))
                .isZero();
        return new StandaloneBroker(instance, port, "AMQ221007");
    }

    public String url() {
        return "tcp://127.0.0.1:" + port;
    }

    /**
     * Starts the broker and waits until it says it serves (active, AMQ221007; a backup: announced to its
     * primary, AMQ221031); answers how long that took.
     */
    public Duration start() throws Exception {
        long begun = System.nanoTime();
        Path log = instance.resolve("log/run-" + (++starts) + ".log");
        Files.createDirectories(log.getParent());
        process = new ProcessBuilder(instance.resolve("bin/artemis").toString(), "run").redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        Process started = process;
        await("Artemis active").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(50)).until(() -> {
            assertThat(started.isAlive()).as("Artemis exited:\n%s", Files.readString(log)).isTrue();
            return Files.readString(log).contains(startedMarker);
        });
        return Duration.ofNanos(System.nanoTime() - begun);
    }

    /** Whether its log (this start's) says it is active: a backup once it took over. */
    public boolean active() throws Exception {
        Path log = instance.resolve("log/run-" + starts + ".log");
        return Files.exists(log) && Files.readString(log).contains("AMQ221007");
    }

    /**
     * Whether this (backup) broker handed back to its primary and is a backup again: after a failback its log
     * (the same start's: the server restarts inside the JVM) says "restarting as replicating backup" (AMQ221039),
     * then, once it copied the primary's journal again, "backup announced" (AMQ221031).
     */
    public boolean backupAgain() throws Exception {
        Path log = instance.resolve("log/run-" + starts + ".log");
        if (!Files.exists(log)) {
            return false;
        }
        String text = Files.readString(log);
        int restarted = text.lastIndexOf("AMQ221039");
        return restarted >= 0 && text.indexOf("AMQ221031", restarted) >= 0;
    }

    /** The folder of its logs (one run-N.log per start), for a failed test's evidence. */
    public Path logs() {
        return instance.resolve("log");
    }

    /** SIGKILL to the broker JVM (and the launcher script): its journal stays as a crash leaves it. */
    public void kill() throws Exception {
        if (process != null && process.isAlive()) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Override
    public void close() throws Exception {
        if (process != null && process.isAlive()) {
            process.descendants().forEach(ProcessHandle::destroy);
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                kill();
            }
        }
    }
}
