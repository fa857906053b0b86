package io.jobgate.bench;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench --only fairness [--flood 1500] [--flood-clients 32] [--quiet-jobs 12] [--background-rate 50]}:
 * a quiet tenant's few jobs sent just behind a noisy tenant's flood, while the other tenants' traffic keeps
 * arriving on the clock (open-loop, as {@link SustainedBench} sends it). The gateway runs as a user runs it
 * ({@link GatewayProcesses}: embedded defaults, the OpenAI adapter against a stand-in answering after
 * {@code --latency-seconds}, 0 by default).
 *
 * <p>Timeline: the background tenants send {@code --background-rate} jobs/s, each at its planned time
 * whatever the answers, from the start until the flood is worked off; at 5 s the noisy tenant sends
 * {@code --flood} jobs as a batch import does, over {@code --flood-clients} connections as fast as they are
 * answered; once all are accepted, the quiet tenant sends {@code --quiet-jobs}, one every 250 ms on the clock. Printed: accept → final (planned send to {@code finalized_at})
 * p50/p95/max of each party, and the quiet tenant's p95 against the noisy tenant's median: a fair gateway
 * keeps it at most a tenth of it and under a second (issue 36), whatever the flood's size.
 */
final class FloodBench {

    private static final Pattern JOB_ID = Pattern.compile("\"job_id\"\\s*:\\s*\"([^\"]+)\"");
    private static final long FLOOD_AT_MILLIS = 5_000;
    private static final long QUIET_EVERY_MILLIS = 250;

    private final Path jar;
    private final Path dir;
    private final String java;
    private final long latencyMillis;
    private final int flood;
    private final int quietJobs;
    private final int backgroundRate;
    private final int floodClients;
    private final int tenants;
    private final int maxConcurrency;

    FloodBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.latencyMillis = Math.round(Double.parseDouble(opts.getOrDefault("latency-seconds", "0")) * 1000);
        this.flood = Integer.parseInt(opts.getOrDefault("flood", "1500"));
        this.quietJobs = Integer.parseInt(opts.getOrDefault("quiet-jobs", "12"));
        this.backgroundRate = Integer.parseInt(opts.getOrDefault("background-rate", "50"));
        this.floodClients = Integer.parseInt(opts.getOrDefault("flood-clients", "32"));
        this.tenants = Math.max(3, Integer.parseInt(opts.getOrDefault("tenants", "10")));
        this.maxConcurrency = Integer.parseInt(opts.getOrDefault("max-concurrency", "64"));
    }

    /** Who sent a job: the noisy tenant (0), the quiet one (1), or the background's (2 and up). */
    private enum Party { NOISY, QUIET, BACKGROUND }

    private record Sent(Party party, long plannedMillis) {
    }

    void run() throws Exception {
        System.out.printf("%nFairness, open-loop: %d tenants; tenants 2-%d send %d jobs/s throughout; at %d s tenant 0 floods %d jobs "
                        + "over %d connections, then tenant 1 sends %d, one every %d ms; the OpenAI adapter against a stand-in answering after %.1f s "
                        + "(max-concurrency %d); Java %d, %d cores%n", tenants, tenants - 1, backgroundRate, FLOOD_AT_MILLIS / 1000,
                flood, floodClients, quietJobs, QUIET_EVERY_MILLIS, latencyMillis / 1000.0, maxConcurrency, Runtime.version().feature(),
                Runtime.getRuntime().availableProcessors());
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, latencyMillis)) {
            parties.startGateway(tenants, 100_000, maxConcurrency, Map.of());
            Map<String, Sent> sent = new ConcurrentHashMap<>();
            AtomicLong refused = new AtomicLong();
            AtomicLong failed = new AtomicLong();
            ExecutorService senders = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "fairness-sender");
                t.setDaemon(true);
                return t;
            });
            try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                // Unmeasured: the JIT compiles the path first (as SustainedBench's warm-up).
                warmUp(parties, senders);
                SustainedBench.waitForOpen(db, parties, 0, 120);
                long start = System.currentTimeMillis() + 100;
                // The flood: a batch import, as a tenant's backend sends one: --flood-clients connections, each
                // sending its next job when the last was answered, from 5 s on. The quiet tenant's jobs follow,
                // open-loop, once the whole flood is accepted ("behind" it); the background never stops.
                AtomicLong floodAcceptedAt = new AtomicLong();
                Thread floodRun = new Thread(() -> {
                    try {
                        Thread.sleep(Math.max(0, start + FLOOD_AT_MILLIS - System.currentTimeMillis()));
                        java.util.concurrent.atomic.AtomicInteger next = new java.util.concurrent.atomic.AtomicInteger();
                        List<Thread> clients = new ArrayList<>();
                        for (int c = 0; c < floodClients; c++) {
                            Thread client = new Thread(() -> {
                                while (next.getAndIncrement() < flood) {
                                    send(parties, 0, Party.NOISY, System.currentTimeMillis(), sent, refused, failed);
                                }
                            }, "fairness-flood");
                            client.start();
                            clients.add(client);
                        }
                        for (Thread client : clients) {
                            client.join();
                        }
                        floodAcceptedAt.set(System.currentTimeMillis());
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "fairness-flood-start");
                floodRun.setDaemon(true);
                floodRun.start();
                long nextBackground = start;
                int background = 0;
                int quiet = 0;
                long lastLook = 0;
                while (true) {
                    long now = System.currentTimeMillis();
                    long floodAt = floodAcceptedAt.get();
                    long nextQuiet = floodAt == 0 || quiet == quietJobs ? Long.MAX_VALUE : floodAt + quiet * QUIET_EVERY_MILLIS;
                    if (quiet == quietJobs && now - lastLook >= 500) {
                        lastLook = now; // twice a second: the bench's own queries are not the load measured
                        if (openOf(db, parties, 0) == 0 && openOf(db, parties, 1) == 0) {
                            break;
                        }
                    }
                    long next = Math.min(nextBackground, nextQuiet);
                    if (next > now) {
                        Thread.sleep(Math.min(next - now, 50)); // the arrivals' clock (and a look at the flood's end)
                        continue;
                    }
                    int tenant;
                    Party party;
                    if (nextQuiet <= nextBackground) {
                        quiet++;
                        tenant = 1;
                        party = Party.QUIET;
                    } else {
                        tenant = 2 + background++ % (tenants - 2);
                        party = Party.BACKGROUND;
                        nextBackground = start + Math.round(background * 1000.0 / backgroundRate);
                    }
                    senders.execute(() -> send(parties, tenant, party, next, sent, refused, failed));
                }
                floodRun.join();
                SustainedBench.waitForOpen(db, parties, 0, 300);
                print(db, parties, sent, refused.get(), failed.get());
            } finally {
                senders.shutdownNow();
            }
        }
    }

    /** One POST of an image job, its answer booked. */
    private static void send(GatewayProcesses parties, int tenant, Party party, long plannedMillis, Map<String, Sent> sent,
                             AtomicLong refused, AtomicLong failed) {
        try {
            HttpResponse<String> r = parties.http.send(parties.post(tenant), HttpResponse.BodyHandlers.ofString());
            Matcher id = JOB_ID.matcher(r.body());
            if (r.statusCode() == 202 && id.find()) {
                sent.put(id.group(1), new Sent(party, plannedMillis));
            } else if (r.statusCode() == 429 || r.statusCode() == 503) {
                refused.incrementAndGet();
            } else {
                failed.incrementAndGet();
            }
        } catch (Exception e) {
            failed.incrementAndGet();
        }
    }

    private void warmUp(GatewayProcesses parties, ExecutorService senders) throws Exception {
        int jobs = 20 * 20;
        long start = System.currentTimeMillis();
        for (int k = 0; k < jobs; k++) {
            long wait = start + k * 50L - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait); // 20 jobs/s, on the clock
            }
            int tenant = 2 + k % (tenants - 2);
            senders.execute(() -> {
                try {
                    parties.http.send(parties.post(tenant), HttpResponse.BodyHandlers.discarding());
                } catch (Exception ignored) {
                    // the warm-up's answers are not measured
                }
            });
        }
    }

    private void print(Connection db, GatewayProcesses parties, Map<String, Sent> sent, long refused, long failed) throws Exception {
        Map<Party, List<Double>> latencies = new ConcurrentHashMap<>();
        Map<Party, Long> neverFinal = new ConcurrentHashMap<>();
        Map<Party, Long> notSucceeded = new ConcurrentHashMap<>();
        try (PreparedStatement s = db.prepareStatement("SELECT job_id::text, (extract(epoch FROM finalized_at) * 1000)::bigint, status "
                + "FROM jobs WHERE tenant_id LIKE ?")) {
            s.setString(1, parties.tenantPattern());
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Sent job = sent.get(rs.getString(1));
                    if (job == null) {
                        continue; // the warm-up's
                    }
                    long finalAt = rs.getLong(2);
                    if (rs.wasNull()) {
                        neverFinal.merge(job.party(), 1L, Long::sum);
                    } else {
                        latencies.computeIfAbsent(job.party(), p -> new ArrayList<>()).add((double) (finalAt - job.plannedMillis()));
                    }
                    if (!"succeeded".equals(rs.getString(3))) {
                        notSucceeded.merge(job.party(), 1L, Long::sum);
                    }
                }
            }
        }
        System.out.printf("%n  %-22s %6s %13s %9s %9s %9s%n", "tenant", "jobs", "not succeeded", "p50", "p95", "max");
        double[][] figures = new double[Party.values().length][];
        for (Party party : Party.values()) {
            double[] sorted = latencies.getOrDefault(party, List.of()).stream().mapToDouble(Double::doubleValue).sorted().toArray();
            long never = neverFinal.getOrDefault(party, 0L);
            figures[party.ordinal()] = new double[] {SustainedBench.percentile(sorted, never, 0.50), SustainedBench.percentile(sorted, never, 0.95),
                    SustainedBench.percentile(sorted, never, 1.0)};
            String name = switch (party) {
                case NOISY -> "noisy (the flood)";
                case QUIET -> "quiet (behind it)";
                case BACKGROUND -> "background (the rest)";
            };
            System.out.printf("  %-22s %6d %13d %8ss %8ss %8ss%n", name, sorted.length + never, notSucceeded.getOrDefault(party, 0L),
                    SustainedBench.seconds(figures[party.ordinal()][0]), SustainedBench.seconds(figures[party.ordinal()][1]), SustainedBench.seconds(figures[party.ordinal()][2]));
        }
        stages(db, parties, sent);
        if (refused > 0 || failed > 0) {
            System.out.printf("  refused (429/503): %d, failed sends: %d%n", refused, failed);
        }
        double quietP95 = figures[Party.QUIET.ordinal()][1];
        double noisyMedian = figures[Party.NOISY.ordinal()][0];
        System.out.printf("  quiet p95 / noisy median: %.3f (wanted: at most 0.10, and the quiet p95 under 1 s: %s)%n",
                quietP95 / noisyMedian, quietP95 <= 0.10 * noisyMedian && quietP95 < 1000 ? "met" : "NOT met");
        System.out.println("  accept -> final: from the planned send to the job's finalized_at; a job never final counts as the slowest.");
    }

    /**
     * Where each party's time went, medians and p95 of its jobs' stages: accepted (planned send to the job's
     * row), relayed (to the dispatch event's publication), started (to the first attempt's start) and final.
     */
    private static void stages(Connection db, GatewayProcesses parties, Map<String, Sent> sent) throws Exception {
        Map<Party, List<double[]>> byParty = new ConcurrentHashMap<>();
        try (PreparedStatement s = db.prepareStatement("SELECT j.job_id::text, extract(epoch FROM j.created_at) * 1000, "
                + "(SELECT extract(epoch FROM min(o.published_at)) * 1000 FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch'), "
                + "(SELECT extract(epoch FROM min(a.started_at)) * 1000 FROM attempts a WHERE a.job_id = j.job_id), "
                + "extract(epoch FROM j.finalized_at) * 1000 FROM jobs j WHERE j.tenant_id LIKE ? AND j.finalized_at IS NOT NULL")) {
            s.setString(1, parties.tenantPattern());
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Sent job = sent.get(rs.getString(1));
                    if (job == null || rs.getObject(3) == null || rs.getObject(4) == null) {
                        continue; // the warm-up's, or an event the retention already removed
                    }
                    double created = rs.getDouble(2);
                    double published = rs.getDouble(3);
                    double started = rs.getDouble(4);
                    byParty.computeIfAbsent(job.party(), p -> new ArrayList<>()).add(new double[] {created - job.plannedMillis(),
                            published - created, started - published, rs.getDouble(5) - started});
                }
            }
        }
        System.out.printf("%n  %-22s %19s %19s %19s %19s%n", "stages p50 / p95 (s)", "send -> accepted", "-> relayed",
                "-> attempt started", "-> final");
        for (Party party : Party.values()) {
            List<double[]> rows = byParty.getOrDefault(party, List.of());
            StringBuilder line = new StringBuilder(String.format("  %-22s", party.name().toLowerCase(Locale.ROOT)));
            for (int stage = 0; stage < 4; stage++) {
                int st = stage;
                double[] sorted = rows.stream().mapToDouble(r -> r[st]).sorted().toArray();
                line.append(String.format(" %19s", SustainedBench.seconds(SustainedBench.percentile(sorted, 0, 0.5)) + " / "
                        + SustainedBench.seconds(SustainedBench.percentile(sorted, 0, 0.95))));
            }
            System.out.println(line);
        }
    }

    private static long openOf(Connection db, GatewayProcesses parties, int tenant) throws Exception {
        try (PreparedStatement s = db.prepareStatement("SELECT count(*) FROM jobs WHERE tenant_id = ? AND finalized_at IS NULL")) {
            s.setString(1, parties.tenantPattern().replace("%", String.format("%02d", tenant)));
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

}
