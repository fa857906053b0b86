package io.jobgate.infra;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.zonky.test.db.postgres.util.LinuxUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PostgreSQL left running on our data directory by a gateway that died without stopping it.
 * pg_ctl starts the postmaster in a session of its own, so a SIGKILL, the OOM killer or a runtime
 * killing the JVM leaves it behind with its {@code postmaster.pid}; the next start would then wait
 * for a server it can never start. Before starting, {@link #stopIfOrphaned} finds such a server
 * and shuts it down (fast shutdown, then SIGKILL if it does not end in time).
 */
final class OrphanedPostmaster {

    private static final Logger LOG = LoggerFactory.getLogger(OrphanedPostmaster.class);

    /** zonky holds an OS lock on this file for as long as the JVM that started the server lives. */
    static final String OWNER_LOCK = "epg-lock";

    private OrphanedPostmaster() {
    }

    /**
     * @return the pid of the server that was stopped, if one was
     * @throws IllegalStateException if a live process still owns the data directory
     */
    static Optional<Long> stopIfOrphaned(Path dataDir, Duration fastShutdownWait) throws IOException {
        Path pidFile = dataDir.resolve("postmaster.pid");
        List<String> lines;
        try {
            lines = Files.readAllLines(pidFile, StandardCharsets.UTF_8);
        } catch (NoSuchFileException cleanlyStopped) {
            return Optional.empty();
        }
        if (lines.isEmpty() || !lines.get(0).trim().matches("\\d+")) {
            // A torn file from a crash during start-up; PostgreSQL overwrites it.
            return Optional.empty();
        }
        long pid = Long.parseLong(lines.get(0).trim());
        Files.createDirectories(dataDir);
        try (FileChannel channel = FileChannel.open(dataDir.resolve(OWNER_LOCK), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE); FileLock owner = DataDirectoryLock.tryLock(channel)) {
            if (owner == null) {
                // A live gateway (here or in another JVM) runs this server: never take it away.
                throw new IllegalStateException("The embedded PostgreSQL data directory " + dataDir
                        + " is in use by another running gateway (its " + OWNER_LOCK + " is locked)");
            }
            Optional<ProcessHandle> process = ProcessHandle.of(pid).filter(ProcessHandle::isAlive);
            if (process.isEmpty()) {
                // PostgreSQL itself replaces a pid file whose process is gone.
                return Optional.empty();
            }
            if (!isPostmasterOf(process.get(), dataDir)) {
                // The pid was reused by an unrelated process; PostgreSQL would refuse to start
                // ("lock file already exists"), and no server of ours runs under it.
                LOG.warn("postmaster.pid in {} names pid {}, which is not a PostgreSQL of this directory: removing the stale file",
                        dataDir, pid);
                Files.deleteIfExists(pidFile);
                return Optional.empty();
            }
            LOG.warn("PostgreSQL (pid {}) is still running on {}, left by a gateway that ended without stopping it; "
                    + "stopping it before starting again", pid, dataDir);
            long started = System.nanoTime();
            stop(process.get(), dataDir, fastShutdownWait);
            LOG.info("Stopped the orphaned PostgreSQL (pid {}) in {} ms", pid, (System.nanoTime() - started) / 1_000_000);
            return Optional.of(pid);
        }
    }

    /**
     * The postmaster runs the {@code postgres} binary and works in its data directory (it changes
     * into it at start), which is how it is told apart from a process that merely reuses its pid.
     */
    static boolean isPostmasterOf(ProcessHandle process, Path dataDir) {
        List<String> argv = commandLine(process.pid());
        if (argv.isEmpty() || !Path.of(argv.get(0)).getFileName().toString().equals("postgres")) {
            return false;
        }
        Path ours = realPath(dataDir);
        try {
            if (Files.readSymbolicLink(Path.of("/proc", Long.toString(process.pid()), "cwd")).equals(ours)) {
                return true;
            }
        } catch (IOException | UnsupportedOperationException | SecurityException unreadable) {
            // Fall back to the -D argument below.
        }
        int d = argv.indexOf("-D");
        return d >= 0 && d + 1 < argv.size() && realPath(Path.of(argv.get(d + 1))).equals(ours);
    }

    private static List<String> commandLine(long pid) {
        try {
            byte[] raw = Files.readAllBytes(Path.of("/proc", Long.toString(pid), "cmdline"));
            List<String> argv = new ArrayList<>();
            int start = 0;
            for (int i = 0; i < raw.length; i++) {
                if (raw[i] == 0) {
                    argv.add(new String(raw, start, i - start, StandardCharsets.UTF_8));
                    start = i + 1;
                }
            }
            return argv;
        } catch (IOException gone) {
            return List.of();
        }
    }

    private static Path realPath(Path path) {
        try {
            return path.toRealPath();
        } catch (IOException e) {
            return path.toAbsolutePath().normalize();
        }
    }

    /**
     * Fast shutdown with the server's own pg_ctl (rolls back what the dead gateway left open,
     * writes a checkpoint); if it has not ended in time, SIGKILL to it and its backends, which
     * PostgreSQL recovers from at the next start like from a power cut.
     */
    private static void stop(ProcessHandle postmaster, Path dataDir, Duration wait) {
        Path pgCtl = Path.of(commandLine(postmaster.pid()).get(0)).resolveSibling("pg_ctl");
        List<String> command = new ArrayList<>();
        if (LinuxUtils.isUnshareAvailable()) {
            // As zonky runs it: pg_ctl refuses to run as root, unshare -U makes it an ordinary user.
            command.addAll(List.of("unshare", "-U"));
        }
        command.addAll(List.of(pgCtl.toString(), "stop", "-D", dataDir.toString(), "-m", "fast", "-w",
                "-t", Long.toString(Math.max(1, wait.toSeconds()))));
        try {
            Process pgCtlRun = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(pgCtlRun.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!pgCtlRun.waitFor(wait.toSeconds() + 10, TimeUnit.SECONDS)) {
                pgCtlRun.destroyForcibly();
            } else if (pgCtlRun.exitValue() != 0) {
                LOG.warn("pg_ctl stop -m fast failed (exit {}): {}", pgCtlRun.exitValue(), output);
            }
        } catch (IOException e) {
            LOG.warn("Could not run {}: {}", command, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while stopping the orphaned PostgreSQL", e);
        }
        // pg_ctl returns once the pid file is gone, a moment before the process has exited.
        if (!exited(postmaster, Duration.ofSeconds(5))) {
            LOG.warn("PostgreSQL (pid {}) did not stop with a fast shutdown: killing it", postmaster.pid());
            postmaster.descendants().forEach(ProcessHandle::destroyForcibly);
            postmaster.destroyForcibly();
            if (!exited(postmaster, Duration.ofSeconds(10))) {
                throw new IllegalStateException("the orphaned PostgreSQL (pid " + postmaster.pid() + ") did not end");
            }
        }
    }

    /**
     * Polled: a process that is not our child gives no exit notification (ProcessHandle.onExit
     * polls too, from 300 ms up), and one its parent has not reaped yet still looks alive.
     */
    private static boolean exited(ProcessHandle process, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (process.isAlive() && !zombie(process.pid())) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while stopping the orphaned PostgreSQL", e);
            }
        }
        return true;
    }

    private static boolean zombie(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            return stat.substring(stat.lastIndexOf(')') + 1).trim().startsWith("Z");
        } catch (IOException | RuntimeException gone) {
            return true;
        }
    }
}
