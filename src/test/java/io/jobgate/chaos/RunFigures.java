package io.jobgate.chaos;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the runs of a packaged gateway under events (the chaos soak, the failover test) read from its
 * database and give it: the jobs' success times and how the rate of successes came back after an event,
 * grouped counts for their reports, and the tenants file of their load.
 */
public final class RunFigures {

    /** How many jobs each tenant of {@link #tenantsFile} runs at once (and so has at a provider at most). */
    public static final int MAX_RUNNING = 8;

    private RunFigures() {
    }

    /**
     * How the rate of successes came back after an event, from the succeeded jobs' finish times: a job that failed
     * fast after the event is no recovery.
     */
    public record Recovery(double before, Duration firstFinish, Duration backAt80, double best) {

        /**
         * @param at     when the event came: the rate before is the {@code window} up to it
         * @param ready  when the gateway (or its standby) was back: first finish and rates are counted from it,
         *               in windows ending at most {@code recover} after it
         */
        public static Recovery of(long[] finished, Instant at, Instant ready, Duration window, Duration recover) {
            double before = count(finished, at.minus(window), at) / (double) window.toSeconds();
            long first = Arrays.stream(finished).filter(t -> t > ready.toEpochMilli()).findFirst().orElse(-1);
            Duration firstFinish = first < 0 ? null : Duration.ofMillis(first - ready.toEpochMilli());
            Duration backAt80 = null;
            double best = 0;
            for (Instant end = ready.plus(window); !end.isAfter(ready.plus(recover)); end = end.plusMillis(250)) {
                double rate = count(finished, end.minus(window), end) / (double) window.toSeconds();
                best = Math.max(best, rate);
                if (backAt80 == null && rate >= 0.8 * before) {
                    backAt80 = Duration.between(ready, end);
                }
            }
            return new Recovery(before, firstFinish, backAt80, best);
        }
    }

    /**
     * Every succeeded job's finish time, epoch milliseconds, in order. Failed jobs are left out: counted, a gateway
     * that fails every job after an event (refunding each, so that no other check minds) would look recovered.
     */
    public static long[] successTimes(Connection db) throws Exception {
        List<Long> times = new ArrayList<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(
                "SELECT finalized_at FROM jobs WHERE status = 'succeeded' ORDER BY finalized_at")) {
            while (rs.next()) {
                times.add(rs.getTimestamp(1).toInstant().toEpochMilli());
            }
        }
        return times.stream().mapToLong(Long::longValue).toArray();
    }

    private static long count(long[] sorted, Instant from, Instant to) {
        return Arrays.stream(sorted).filter(t -> t > from.toEpochMilli() && t <= to.toEpochMilli()).count();
    }

    /** A query of (name, count) rows as a map's text, for a report. */
    public static String rows(Connection db, String sql) throws Exception {
        Map<String, Long> values = new LinkedHashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.put(rs.getString(1), rs.getLong(2));
            }
        }
        return values.toString();
    }

    /** A query of one number. */
    public static long scalar(Connection db, String sql) throws Exception {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * {@code dir/tenants.yaml}: each tenant's key is its id + "-key" (what {@link ChaosLoad} is given), room for
     * the whole run's jobs, {@link #MAX_RUNNING} running at once, credit that never runs out.
     */
    public static Path tenantsFile(Path dir, List<String> ids) throws Exception {
        StringBuilder yaml = new StringBuilder("tenants:\n");
        for (String id : ids) {
            yaml.append("""
                      - id: %s
                        display_name: %s
                        api_key_sha256: %s
                        max_open_jobs: 100000
                        max_running_jobs: %d
                        credit_grants: {initial: 1000000000000}
                    """.formatted(id, id, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest((id + "-key").getBytes(StandardCharsets.UTF_8))), MAX_RUNNING));
        }
        Path file = dir.resolve("tenants.yaml");
        Files.writeString(file, yaml);
        return file;
    }
}
