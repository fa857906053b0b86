package io.jobgate.ops;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

import io.jobgate.Gateway;
import org.apache.camel.main.BaseMainSupport;
import org.apache.camel.main.Main;
import org.apache.camel.main.MainListenerSupport;

/**
 * {@code training-run}: the gateway started on a throwaway data directory (ephemeral ports, embedded
 * parts) and stopped as soon as it is ready. The build runs it under
 * {@code -XX:ArchiveClassesAtExit=target/jobgate.jsa}: the JVM then writes the classes the start
 * loaded, parsed and verified, to a class-data archive that the README's run command maps instead
 * of loading them again (about half the CPU of every later start; docs/operating.md, "Start-up time").
 */
public final class TrainingRun {

    private TrainingRun() {
    }

    public static void main(String[] args) throws Exception {
        Path data = Files.createTempDirectory("jobgate-training-run");
        try {
            Main main = Gateway.gateway();
            main.addOverrideProperty("jobgate.data-dir", data.toString());
            main.addOverrideProperty("camel.server.port", "0");
            main.addOverrideProperty("camel.management.port", "0");
            main.addOverrideProperty("jobgate.broker.embedded-port", "0");
            main.addOverrideProperty("jobgate.simulator.port", "0");
            main.addMainListener(new MainListenerSupport() {
                @Override
                public void afterStart(BaseMainSupport started) {
                    main.completed();
                }
            });
            main.run();
        } catch (Throwable e) {
            // Exit now: the embedded parts already started keep the JVM (and the build that waits on it) alive.
            System.err.println("training-run: the gateway did not start: " + e);
            try {
                deleteTree(data);
            } catch (IOException | RuntimeException ignored) {
                // as below
            }
            System.exit(1);
        } finally {
            try {
                deleteTree(data);
            } catch (IOException | RuntimeException e) {
                // A file the stopping parts still removed: the throwaway directory is the system's to clean.
                // Never a reason to skip the exit below: the parts' threads would keep the build waiting.
                System.err.println("training-run: " + data + " not removed: " + e);
            }
        }
        // Now, not when the last pool thread idles out a minute later: the archive is written at exit.
        System.exit(0);
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }
}
