package io.jobgate.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench --only sustained --peers}: JobRunr and db-scheduler given the gateway's open-loop
 * arrivals ({@code io.jobgate.benchpeers.SustainedPeer} from {@code target/bench-peers}, each in a JVM
 * of its own, after the gateway stopped), on the same PostgreSQL and stand-in, with the same warm-up,
 * rates and step length, as many workers as the provider's {@code max-concurrency}. Their steps come
 * back as the gateway's columns; PostgreSQL's CPU is read at the edges of each step the peer prints.
 */
final class SustainedPeers {

    static final List<String> NAMES = List.of("jobrunr", "db-scheduler");

    /** One step of one peer, in the gateway's columns (latencies in ms; a job never done: infinite). */
    record Row(int rate, long accepted, long failed, double finishedPerSecond, long backlog, double p50, double p95, double p99,
               double enqueueP99, double cpuMillisPerJob, double pgMillisPerJob) {
    }

    /** A peer's name and version, and its steps. */
    record Party(String name, List<Row> steps) {
    }

    private SustainedPeers() {
    }

    /** The peers named by {@code --peers} ({@code true}: both). */
    static List<String> named(String option) {
        if (option == null) {
            return List.of();
        }
        if (option.isBlank() || option.equals("true") || option.equals("all")) {
            return NAMES;
        }
        List<String> names = new ArrayList<>();
        for (String n : option.split(",")) {
            if (!NAMES.contains(n.trim())) {
                throw new IllegalArgumentException("sustained runs the peers " + NAMES + ", not " + n);
            }
            names.add(n.trim());
        }
        return names;
    }

    static Party run(GatewayProcesses parties, String peer, int[] rates, int stepSeconds, int warmUpSeconds, int workers)
            throws Exception {
        Path peers = PeerBench.defaultDir();
        parties.get(parties.providerUrl + "/reset");
        String jdbcUrl = parties.jdbcUrl();
        Matcher user = Pattern.compile("user=([^&]+)").matcher(jdbcUrl);
        StringBuilder rateList = new StringBuilder();
        for (int r : rates) {
            rateList.append(rateList.length() == 0 ? "" : ",").append(r);
        }
        String log = "sustained-" + peer;
        Process process = parties.start(log, List.of("-cp", peers.resolve("classes") + ":" + peers.resolve("lib") + "/*",
                "io.jobgate.benchpeers.SustainedPeer", peer, jdbcUrl.replaceAll("\\?.*$", ""), user.find() ? user.group(1) : "postgres", "",
                "jobgate_peer_sustained_" + peer.replace('-', '_'), parties.providerUrl, rateList.toString(),
                Integer.toString(stepSeconds), Integer.toString(warmUpSeconds), Integer.toString(workers)), Map.of());
        // PostgreSQL's CPU at the edges of each step, as the peer's log says them.
        Map<Integer, Long> pgAtStart = new LinkedHashMap<>();
        Map<Integer, Long> pgAtEnd = new LinkedHashMap<>();
        while (process.isAlive()) {
            int started = (int) parties.logLines(log, "STEP-START ");
            int ended = (int) parties.logLines(log, "STEP-END ");
            if (started > pgAtStart.size()) {
                pgAtStart.put(started - 1, parties.postgresCpuMillis());
            }
            if (ended > pgAtEnd.size()) {
                pgAtEnd.put(ended - 1, parties.postgresCpuMillis());
            }
            process.waitFor(100, TimeUnit.MILLISECONDS);
        }
        List<String> lines = Files.readAllLines(parties.dir.resolve(log + ".log"));
        if (process.exitValue() != 0) {
            throw new IllegalStateException(peer + "'s sustained run failed; see " + parties.dir.resolve(log + ".log"));
        }
        String name = lines.stream().filter(l -> l.startsWith("NAME ")).map(l -> l.substring(5)).findFirst().orElse(peer);
        List<Row> rows = new ArrayList<>();
        for (String line : lines) {
            if (!line.startsWith("STEP ")) {
                continue;
            }
            Map<String, String> f = new LinkedHashMap<>();
            String[] parts = line.split(" ");
            int index = Integer.parseInt(parts[1]);
            for (int k = 2; k < parts.length; k++) {
                f.put(parts[k].substring(0, parts[k].indexOf('=')), parts[k].substring(parts[k].indexOf('=') + 1));
            }
            double seconds = Double.parseDouble(f.get("seconds"));
            long finished = Long.parseLong(f.get("finished"));
            long pg = pgAtEnd.getOrDefault(index, 0L) - pgAtStart.getOrDefault(index, 0L);
            rows.add(new Row(Integer.parseInt(f.get("rate")), Long.parseLong(f.get("accepted")), Long.parseLong(f.get("failed")),
                    finished / seconds, Long.parseLong(f.get("backlog")), millis(f.get("p50")), millis(f.get("p95")), millis(f.get("p99")),
                    millis(f.get("enqueue-p99")), Long.parseLong(f.get("cpu-ms")) / (double) Math.max(1, finished),
                    pg / (double) Math.max(1, finished)));
        }
        return new Party(name, rows);
    }

    private static double millis(String value) {
        return value.equals("never") ? Double.POSITIVE_INFINITY : value.equals("n/a") ? Double.NaN : Double.parseDouble(value);
    }
}
