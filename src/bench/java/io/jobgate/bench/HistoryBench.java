package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

/**
 * Flat cost as history grows: the same figures on a fresh database and again after seeding a history
 * of finished jobs of the same tenants, printed side by side as ratios. The operator console's pages are among them
 * (p99 of their calls: issue 67 asks for under 200 ms with a million finished jobs). The history is what such
 * traffic leaves behind with retention on: per job an attempt and a debit (kept forever, with their
 * usage rollups), and the published outbox events of the last day only (older ones are removed by
 * retention). Seeded by SQL with triggers off (their effects written directly), then VACUUM ANALYZE.
 */
final class HistoryBench {

    private final DataSource dataSource;
    private final int port;
    private final List<String> tenantIds;
    private final List<String> apiKeys;
    private final DrainBench drain;
    private final Runnable loadAdapter;
    private final Runnable wakeRelay;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    HistoryBench(DataSource dataSource, int port, List<String> tenantIds, List<String> apiKeys, DrainBench drain,
                 Runnable loadAdapter, Runnable wakeRelay) {
        this.loadAdapter = loadAdapter;
        this.wakeRelay = wakeRelay;
        this.dataSource = dataSource;
        this.port = port;
        this.tenantIds = tenantIds;
        this.apiKeys = apiKeys;
        this.drain = drain;
    }

    void run(int history, int drainJobs, int samples, int clients) throws Exception {
        // A whole round first, its figures dropped: measured first on a cold JIT, the fresh figures came
        // out slower than those with history (admission 11.8 vs 2.5 ms), hiding what history costs.
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); // for each call's database time
        }
        figures(drainJobs, samples, clients, true);
        Map<String, Double> fresh = figures(drainJobs, samples, clients, false);
        long seeded = System.nanoTime();
        HistorySeed.seed(dataSource, tenantIds, FakeProvider.NAME, history, Duration.ofDays(1));
        System.out.printf("%nHistory: %,d finished jobs of %d tenants over 90 days seeded and analysed in %.0f s%n",
                history, tenantIds.size(), (System.nanoTime() - seeded) / 1e9);
        Map<String, Double> aged = figures(drainJobs, samples, clients, false);
        System.out.printf("%nFlat cost as history grows (%,d finished jobs of history; p50 of %d calls each):%n", history, samples);
        System.out.printf("  %-34s %12s %14s %8s%n", "figure", "fresh", "with history", "ratio");
        fresh.forEach((name, value) -> {
            double with = aged.get(name);
            boolean rate = name.endsWith("/s");
            System.out.printf("  %-34s %12.2f %14.2f %8.2f%s%n", name, value, with, rate ? value / with : with / value,
                    rate ? "  (fresh / with history)" : "");
        });
        System.out.println("  ratio: how many times slower with history (1.0 is flat)");
    }

    private Map<String, Double> figures(int drainJobs, int samples, int clients, boolean warmUp) throws Exception {
        Map<String, Double> figures = new LinkedHashMap<>();
        loadAdapter.run();
        AdmissionLoad one = new AdmissionLoad(port, apiKeys.get(0), FakeProvider.BODY);
        List<String> timed = new ArrayList<>();
        for (int i = 0; i < samples; i++) {
            timed.add(one.postOne()); // warm
        }
        double[] admit = new double[samples];
        resetStatements();
        for (int i = 0; i < samples; i++) {
            long t = System.nanoTime();
            timed.add(one.postOne());
            admit[i] = (System.nanoTime() - t) / 1e6;
        }
        // Cancelled, so the drain below counts only its own jobs.
        for (String job : timed) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/jobs/" + job + "/cancel"))
                    .header("Authorization", "Bearer " + apiKeys.get(0)).POST(HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("cancel answered " + r.statusCode() + ": " + r.body());
            }
        }
        double admitDb = statementMillis() / samples;
        figures.put("admission, one client, p50 ms", p50(admit));
        figures.put("GET /v1/jobs?limit=50, p50 ms", p50(timeGets("/v1/jobs?limit=50", samples)));
        double listingDb = statementMillis() / samples;
        figures.put("GET /v1/usage, p50 ms", p50(timeGets("/v1/usage", samples)));
        double usageDb = statementMillis() / samples;
        // The database's share of each call (every statement run meanwhile, background work included):
        // what history can make grow, less blurred by the host's load than the calls' wall time.
        figures.put("admission, DB ms per call", admitDb);
        figures.put("listing, DB ms per call", listingDb);
        figures.put("usage, DB ms per call", usageDb);
        // The operator console over the same history (docs/console.md): its jobs page, filtered and found by key, and a
        // job's page (the oldest job: its story read from every table), with the admin key.
        String oldest = oldestJob();
        String key = keyOf(timed.get(0));
        figures.put("console jobs page, p99 ms", p99(timeConsole("/console/jobs", samples)));
        figures.put("console failed jobs, p99 ms", p99(timeConsole("/console/jobs?status=failed", samples)));
        figures.put("console tenant + status, p99 ms", p99(timeConsole("/console/jobs?tenant=" + tenantIds.get(0) + "&status=succeeded", samples)));
        figures.put("console find by key, p99 ms", p99(timeConsole("/console/jobs?find=" + key, samples)));
        figures.put("console a job's page, p99 ms", p99(timeConsole("/console/jobs/" + oldest, samples)));
        figures.put("relay, status events/s", relayRate(timed, RELAY_EVENTS));
        figures.put("processing, jobs/s", drain.run(drainJobs, warmUp ? Math.min(2000, drainJobs) : 0, clients));
        return figures;
    }

    static final int RELAY_EVENTS = 5_000;

    /**
     * The relay alone: about {@code events} status events of the given (cancelled) jobs made due at
     * once, the relay woken, timed until all are published to the status topic. No worker is involved.
     */
    private double relayRate(List<String> jobs, int events) throws Exception {
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.PreparedStatement insert = c.prepareStatement("""
                INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, created_at)
                SELECT j.job_id, j.tenant_id, 'status', jsonb_build_object('status', 'cancelled', 'attempt', 0), now(), now()
                  FROM jobs j CROSS JOIN generate_series(1, ?) g WHERE j.job_id = ANY (?)""")) {
            insert.setInt(1, (events + jobs.size() - 1) / jobs.size());
            insert.setArray(2, c.createArrayOf("uuid", jobs.stream().map(java.util.UUID::fromString).toArray()));
            int inserted = insert.executeUpdate();
            long t0 = System.nanoTime();
            wakeRelay.run();
            try (java.sql.Statement s = c.createStatement()) {
                while (true) {
                    try (java.sql.ResultSet rs = s.executeQuery(
                            "SELECT count(*) FROM outbox WHERE published_at IS NULL AND event_type = 'status'")) {
                        rs.next();
                        if (rs.getLong(1) == 0) {
                            break;
                        }
                    }
                    Thread.sleep(5); // progress poll of a run of about a second, not a measured wait
                }
            }
            return inserted / ((System.nanoTime() - t0) / 1e9);
        }
    }

    private void resetStatements() throws java.sql.SQLException {
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement s = c.createStatement()) {
            s.execute("SELECT pg_stat_statements_reset()");
        }
    }

    /** The execution time of every statement of this database since the last reset, then resets. */
    private double statementMillis() throws java.sql.SQLException {
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement s = c.createStatement()) {
            double millis;
            try (java.sql.ResultSet rs = s.executeQuery("SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements "
                    + "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                    + "AND query NOT LIKE '%pg_stat_statements%'")) {
                rs.next();
                millis = rs.getDouble(1);
            }
            s.execute("SELECT pg_stat_statements_reset()");
            return millis;
        }
    }

    private double[] timeGets(String path, int samples) throws Exception {
        return timeGets(path, samples, i -> "Bearer " + apiKeys.get(Math.floorMod(i, apiKeys.size())));
    }

    /** {@code samples} timed GETs after as many untimed, call {@code i} with the Authorization {@code authorization} gives it. */
    private double[] timeGets(String path, int samples, java.util.function.IntFunction<String> authorization) throws Exception {
        double[] millis = new double[samples];
        for (int i = -samples; i < samples; i++) {
            if (i == 0) {
                resetStatements(); // the warm half's statements are not counted
            }
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .header("Authorization", authorization.apply(i)).GET().build();
            long t = System.nanoTime();
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException(path + " answered " + r.statusCode() + ": " + r.body());
            }
            if (i >= 0) {
                millis[i] = (System.nanoTime() - t) / 1e6;
            }
        }
        return millis;
    }

    /** The oldest job of the database: on a seeded history, one of the history's. */
    private String oldestJob() throws java.sql.SQLException {
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement s = c.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT job_id FROM jobs ORDER BY job_id LIMIT 1")) {
            rs.next();
            return rs.getString(1);
        }
    }

    private String keyOf(String job) throws java.sql.SQLException {
        try (java.sql.Connection c = dataSource.getConnection();
             java.sql.PreparedStatement s = c.prepareStatement("SELECT idempotency_key FROM jobs WHERE job_id = ?::uuid")) {
            s.setString(1, job);
            try (java.sql.ResultSet rs = s.executeQuery()) {
                rs.next();
                return java.net.URLEncoder.encode(rs.getString(1), java.nio.charset.StandardCharsets.UTF_8);
            }
        }
    }

    /** A console page's times, with the admin key (the shipped demo key: the bench's gateway is on this machine). */
    private double[] timeConsole(String path, int samples) throws Exception {
        String basic = "Basic " + java.util.Base64.getEncoder().encodeToString("bench:dev-admin-key".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return timeGets(path, samples, i -> basic);
    }

    /** The 99th percentile (of fewer than 100 calls, the slowest). */
    private static double p99(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * 0.99) - 1)];
    }

    private static double p50(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
