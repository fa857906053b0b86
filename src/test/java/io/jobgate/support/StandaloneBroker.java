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
    /** What its log says once it serves: "active" (AMQ221007). */
    private final String startedMarker;
    private Process process;
    private int starts;

    private StandaloneBroker(Path instance, int port, String startedMarker) {
        this.instance = instance;
        this.port = port;
        this.startedMarker = startedMarker;
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

    /** Starts the broker and waits until it says it serves (active, AMQ221007); answers how long that took. */
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
