package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The packaged gateway ({@code target/jobgate.jar}) as a process of its own, for the *IT tests. */
public final class PackagedGateway {

    private PackagedGateway() {
    }

    /**
     * Configured by environment only: nothing inherited chooses its parts or roles (the test run's
     * own {@code JOBGATE_*} and {@code CAMEL_*} variables are left out). The embedded broker stays
     * in-VM and the simulator takes a free port: a port picked here and bound later could be taken
     * meanwhile (the embedded PostgreSQL once took one on CI). Started as the README's run command
     * starts it: its heap capped, mapping the build's class-data archive.
     */
    public static ProcessBuilder builder(Path dataDir, int port, Path log, String... jvmOptions) {
        List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java",
                "-Xmx512m", "-XX:+ExitOnOutOfMemoryError", "-XX:SharedArchiveFile=target/jobgate.jsa"));
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-jar", "target/jobgate.jar"));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_") || k.startsWith("CAMEL_"));
        pb.environment().put("CAMEL_SERVER_PORT", Integer.toString(port));
        pb.environment().put("JOBGATE_DATA_DIR", dataDir.toString());
        pb.environment().put("JOBGATE_BROKER_EMBEDDED_PORT", "0");
        pb.environment().put("JOBGATE_SIMULATOR_PORT", "0");
        return pb;
    }

    /** Until its health answers 200; fails at once, with its log, if the process exits. */
    public static void awaitHealthy(Process gateway, ApiClient api, Path log, Duration atMost) {
        await().atMost(atMost).pollInterval(Duration.ofMillis(50)).until(() -> {
            assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log)).isTrue();
            try {
                return api.get(null, "/observe/health").status() == 200;
            } catch (AssertionError notYet) {
                return false;
            }
        });
    }
}
