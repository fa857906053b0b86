package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code bench --only restart [--restarts 3]}: the packaged gateway on its embedded defaults,
 * started as a process of its own on one data directory, first after a clean stop and then after
 * SIGKILL (its PostgreSQL left running, Artemis's lock file left behind): from process start to
 * {@code /observe/health} 200, each run and the median, beside the gateway's own account of where
 * the time went (its "jobgate ready in" line) and the CPU the gateway's JVM had used by then (from
 * {@code /proc}; steadier than the wall clock on a shared machine). The first start, on a fresh
 * data directory (PostgreSQL's initdb, the schema's migrations, Artemis's journal created), is
 * timed too, and at each ready the memory: the JVM's resident set (and its peak so far), and the
 * embedded PostgreSQL's processes apart, as their proportional set (their shared buffers counted
 * once across the backends, not once per backend).
 */
final class RestartBench {

    private final Path jar;
    private final Path dataDir;
    private final int port;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    RestartBench(Path jar, Path dataDir, int port) {
        this.jar = jar;
        this.dataDir = dataDir;
        this.port = port;
    }

    void run(int restarts) throws Exception {
        System.out.printf("%njobgate restart to ready: java %s-jar %s on embedded defaults, %d cores, data in %s%n",
                classDataArchive().map(a -> "-XX:SharedArchiveFile=" + a + " ").orElse(""), jar.getFileName(),
                Runtime.getRuntime().availableProcessors(), dataDir);
        Process gateway = start("first");
        long fresh = awaitReady(gateway);
        System.out.printf("  on a fresh data directory: %5d ms, CPU %5d ms, %s   %s%n", fresh, cpuMillis(gateway),
                memory(gateway), readyLine("first"));
        List<Long> rss = new ArrayList<>();
        List<Long> clean = new ArrayList<>();
        List<Long> killed = new ArrayList<>();
        List<Long> cleanCpu = new ArrayList<>();
        List<Long> killedCpu = new ArrayList<>();
        for (int i = 1; i <= restarts; i++) {
            gateway.destroy(); // SIGTERM: a clean stop
            gateway.waitFor(60, TimeUnit.SECONDS);
            gateway = start("clean-" + i);
            clean.add(awaitReady(gateway));
            cleanCpu.add(cpuMillis(gateway));
            rss.add(rssMiB(gateway));
            System.out.printf("  after a clean stop: %5d ms, CPU %5d ms, %s   %s%n", clean.get(clean.size() - 1),
                    cleanCpu.get(cleanCpu.size() - 1), memory(gateway), readyLine("clean-" + i));
            gateway.destroyForcibly(); // SIGKILL: nothing is stopped
            gateway.waitFor(60, TimeUnit.SECONDS);
            gateway = start("killed-" + i);
            killed.add(awaitReady(gateway));
            killedCpu.add(cpuMillis(gateway));
            rss.add(rssMiB(gateway));
            System.out.printf("  after SIGKILL:      %5d ms, CPU %5d ms, %s   %s%n", killed.get(killed.size() - 1),
                    killedCpu.get(killedCpu.size() - 1), memory(gateway), readyLine("killed-" + i));
        }
        gateway.destroy();
        gateway.waitFor(60, TimeUnit.SECONDS);
        System.out.printf("%nprocess start to /observe/health 200, median of %d: after a clean stop %d ms, after SIGKILL %d ms "
                + "(runs: %s; %s); the gateway JVM's CPU by then, median: %d ms and %d ms (runs: %s; %s)%n",
                restarts, median(clean), median(killed), clean, killed, median(cleanCpu), median(killedCpu), cleanCpu, killedCpu);
        System.out.printf("on a fresh data directory: %d ms to ready (issue 12's target: under 10 s); the gateway JVM's resident "
                + "set at ready, median of the restarts: %d MiB (target: under 512 MiB; runs: %s)%n", fresh, median(rss), rss);
    }

    /** "JVM 310 MiB (peak 330), PostgreSQL 45 MiB in 9 processes" from /proc; "" where it is not there. */
    private String memory(Process gateway) {
        long rss = rssMiB(gateway);
        if (rss < 0) {
            return "";
        }
        long[] postgres = postgresPssKiB();
        return String.format("JVM %d MiB (peak %d), PostgreSQL %d MiB in %d processes", rss,
                statusKiB(gateway.pid(), "VmHWM") / 1024, postgres[0] / 1024, postgres[1]);
    }

    private static long rssMiB(Process process) {
        long kib = statusKiB(process.pid(), "VmRSS");
        return kib < 0 ? -1 : kib / 1024;
    }

    /** A "Name:   123 kB" line of /proc/PID/status, in KiB; -1 where it is not there. */
    private static long statusKiB(long pid, String name) {
        try {
            return Files.readAllLines(Path.of("/proc", Long.toString(pid), "status")).stream()
                    .filter(l -> l.startsWith(name + ":")).map(l -> Long.parseLong(l.replaceAll("[^0-9]", "")))
                    .findFirst().orElse(-1L);
        } catch (java.io.IOException | RuntimeException notLinux) {
            return -1;
        }
    }

    /**
     * The embedded PostgreSQL's proportional set size, summed over its processes (those whose command
     * line names this data directory's server, and the postmaster's children), and their count.
     */
    private long[] postgresPssKiB() {
        String serverDir = dataDir.resolve("postgres").toString();
        java.util.Set<Long> postmasters = new java.util.HashSet<>();
        ProcessHandle.allProcesses().filter(p -> p.info().commandLine().map(c -> c.contains(serverDir)).orElse(false))
                .forEach(p -> postmasters.add(p.pid()));
        long pss = 0;
        long count = 0;
        for (ProcessHandle p : ProcessHandle.allProcesses().toList()) {
            boolean ours = postmasters.contains(p.pid())
                    || p.parent().map(parent -> postmasters.contains(parent.pid())).orElse(false);
            if (!ours) {
                continue;
            }
            try {
                pss += Files.readAllLines(Path.of("/proc", Long.toString(p.pid()), "smaps_rollup")).stream()
                        .filter(l -> l.startsWith("Pss:")).mapToLong(l -> Long.parseLong(l.replaceAll("[^0-9]", ""))).sum();
                count++;
            } catch (java.io.IOException | RuntimeException gone) {
                // the process ended meanwhile, or no /proc
            }
        }
        return new long[] {pss, count};
    }

    private Process start(String name) throws Exception {
        List<String> command = new ArrayList<>(List.of(System.getProperty("java.home") + "/bin/java"));
        classDataArchive().ifPresent(archive -> command.add("-XX:SharedArchiveFile=" + archive));
        command.addAll(List.of("-jar", jar.toString()));
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(dataDir.resolve(name + ".log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_") || k.startsWith("CAMEL_"));
        pb.environment().put("CAMEL_SERVER_PORT", Integer.toString(port));
        pb.environment().put("JOBGATE_DATA_DIR", dataDir.toString());
        pb.environment().put("JOBGATE_BROKER_EMBEDDED_PORT", "0");
        pb.environment().put("JOBGATE_SIMULATOR_PORT", "0");
        return pb.start();
    }

    /** The build's class-data archive beside the jar, which the README's run command maps: started the same way. */
    private java.util.Optional<Path> classDataArchive() {
        Path archive = jar.resolveSibling("jobgate.jsa");
        return Files.isReadable(archive) ? java.util.Optional.of(archive) : java.util.Optional.empty();
    }

    /** Milliseconds from now (just after the process started) to the first health 200. */
    private long awaitReady(Process gateway) throws Exception {
        long started = System.nanoTime();
        HttpRequest health = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/observe/health"))
                .timeout(Duration.ofSeconds(2)).build();
        while (System.nanoTime() - started < TimeUnit.SECONDS.toNanos(120)) {
            if (!gateway.isAlive()) {
                throw new IllegalStateException("the gateway exited; see the logs in " + dataDir);
            }
            try {
                if (http.send(health, HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return (System.nanoTime() - started) / 1_000_000;
                }
            } catch (java.io.IOException notListening) {
                // not yet
            }
            Thread.sleep(50); // polling a process from outside: nothing to wait on instead
        }
        throw new IllegalStateException("the gateway was not ready within 120 s; see the logs in " + dataDir);
    }

    /** CPU (user and system) the process has used so far, in ms; -1 where /proc is not there. */
    private static long cpuMillis(Process process) {
        return GatewayProcesses.cpuMillis(process.pid());
    }

    private String readyLine(String name) throws Exception {
        return Files.readAllLines(dataDir.resolve(name + ".log")).stream().filter(l -> l.contains("jobgate ready in"))
                .map(l -> l.substring(l.indexOf("jobgate ready in") + "jobgate ".length())).findFirst().orElse("");
    }

    private static long median(List<Long> runs) {
        List<Long> sorted = runs.stream().sorted().toList();
        return sorted.isEmpty() ? 0 : sorted.get(sorted.size() / 2);
    }
}
