package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

/**
 * Flat cost as history grows: the same figures on a fresh database and again after seeding a history
 * of finished jobs of the same tenants, printed side by side as ratios. The history is what such
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
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    HistoryBench(DataSource dataSource, int port, List<String> tenantIds, List<String> apiKeys, DrainBench drain,
                 Runnable loadAdapter) {
        this.loadAdapter = loadAdapter;
        this.dataSource = dataSource;
        this.port = port;
        this.tenantIds = tenantIds;
        this.apiKeys = apiKeys;
        this.drain = drain;
    }

    void run(int history, int drainJobs, int samples, int clients) throws Exception {
        Map<String, Double> fresh = figures(drainJobs, samples, clients, true);
        long seeded = System.nanoTime();
        seed(history);
        System.out.printf("%nHistory: %,d finished jobs of %d tenants over 90 days seeded and analysed in %.0f s%n",
                history, tenantIds.size(), (System.nanoTime() - seeded) / 1e9);
        Map<String, Double> aged = figures(drainJobs, samples, clients, false);
        System.out.printf("%nFlat cost as history grows (%,d finished jobs of history; p50 of %d calls each):%n", history, samples);
        System.out.printf("  %-34s %12s %14s %8s%n", "figure", "fresh", "with history", "ratio");
        fresh.forEach((name, value) -> {
            double with = aged.get(name);
            boolean rate = name.endsWith("jobs/s");
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
        figures.put("admission, one client, p50 ms", p50(admit));
        figures.put("GET /v1/jobs?limit=50, p50 ms", p50(timeGets("/v1/jobs?limit=50", samples)));
        figures.put("GET /v1/usage, p50 ms", p50(timeGets("/v1/usage", samples)));
        figures.put("processing, jobs/s", drain.run(drainJobs, warmUp ? Math.min(2000, drainJobs) : 0, clients));
        return figures;
    }

    private double[] timeGets(String path, int samples) throws Exception {
        double[] millis = new double[samples];
        for (int i = -samples; i < samples; i++) {
            String key = apiKeys.get(Math.floorMod(i, apiKeys.size()));
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                    .header("Authorization", "Bearer " + key).GET().build();
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

    private static double p50(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /** Finished jobs spread over 90 days, each with its attempt, debit and (last day only) outbox events. */
    private void seed(int history) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            // No triggers while seeding (foreign keys, the balance and usage queues): their effects are
            // written directly below, so the rollups match the ledger as the live path keeps them.
            s.execute("SET LOCAL session_replication_role = replica");
            try (PreparedStatement jobs = c.prepareStatement("""
                    INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version,
                                      kind, aspect_class, provider, inputs, cost_micros, max_attempts, max_lifetime_seconds,
                                      expires_at, attempts, created_at, updated_at, finalized_at, adapter_revision, result)
                    SELECT (lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
                            || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
                           (?::text[])[1 + g % ?], 'history-' || g, md5(g::text), 'succeeded', 'invoice-clean', 2,
                           'image', 'square', ?, '{}'::jsonb, 40000, 4, 1800, ts + interval '30 minutes', 1,
                           ts, ts + interval '5 seconds', ts + interval '5 seconds', 'history', '{}'::jsonb
                      FROM generate_series(1, ?) g,
                           LATERAL (SELECT now() - interval '1 hour' - (g::double precision / ?) * interval '90 days' AS ts) t""")) {
                jobs.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                jobs.setInt(2, tenantIds.size());
                jobs.setString(3, FakeProvider.NAME);
                jobs.setInt(4, history);
                jobs.setInt(5, history);
                jobs.executeUpdate();
            }
            String where = "WHERE j.adapter_revision = 'history' AND j.tenant_id = ANY (?::text[])";
            String ofHistory = "FROM jobs j " + where;
            List<String> statements = new ArrayList<>(List.of(
                    "INSERT INTO attempts (job_id, tenant_id, attempt, lease_token, worker, adapter, adapter_revision, started_at,"
                            + " ended_at, duration_ms, outcome, http_status, provider_request_id, billed_units, billed_unit)"
                            + " SELECT j.job_id, j.tenant_id, 1, gen_random_uuid(), 'history', j.provider, 'history', j.created_at,"
                            + " j.finalized_at, 5000, 'succeeded', 200, 'req-' || j.idempotency_key, 1, 'image' " + ofHistory,
                    "INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, created_at, units, unit)"
                            + " SELECT j.tenant_id, j.job_id, 'debit', -j.cost_micros, j.created_at, 1, 'image' " + ofHistory,
                    "INSERT INTO outbox (job_id, tenant_id, event_type, available_at, published_at, created_at)"
                            + " SELECT j.job_id, j.tenant_id, e.type, j.created_at, j.created_at + interval '1 second', j.created_at"
                            + " FROM jobs j CROSS JOIN (VALUES ('dispatch'), ('status'), ('status')) e(type) " + where
                            + " AND j.created_at > now() - interval '1 day'",
                    "INSERT INTO usage_daily AS d (tenant_id, day, provider, kind, unit, jobs, units, debited_micros, refunded_micros)"
                            + " SELECT j.tenant_id, (j.created_at AT TIME ZONE 'UTC')::date, j.provider, j.kind, 'image', count(*),"
                            + " count(*), sum(j.cost_micros), 0 " + ofHistory + " GROUP BY 1, 2, 3, 4"
                            + " ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE SET jobs = d.jobs + EXCLUDED.jobs,"
                            + " units = d.units + EXCLUDED.units, debited_micros = d.debited_micros + EXCLUDED.debited_micros",
                    "INSERT INTO billing_daily AS d (tenant_id, day, provider, kind, unit, attempts, units)"
                            + " SELECT j.tenant_id, (j.created_at AT TIME ZONE 'UTC')::date, j.provider, j.kind, 'image', count(*),"
                            + " count(*) " + ofHistory + " GROUP BY 1, 2, 3, 4"
                            + " ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE SET attempts = d.attempts + EXCLUDED.attempts,"
                            + " units = d.units + EXCLUDED.units"));
            for (String sql : statements) {
                try (PreparedStatement p = c.prepareStatement(sql)) {
                    p.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                    p.executeUpdate();
                }
            }
            // The balances the ledger trigger would have kept.
            try (PreparedStatement p = c.prepareStatement("UPDATE tenant_accounts a SET balance_micros = a.balance_micros - h.spent "
                    + "FROM (SELECT tenant_id, sum(cost_micros) AS spent FROM jobs WHERE adapter_revision = 'history' "
                    + "AND tenant_id = ANY (?::text[]) GROUP BY tenant_id) h WHERE a.tenant_id = h.tenant_id")) {
                p.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                p.executeUpdate();
            }
            c.commit();
            c.setAutoCommit(true);
            s.execute("VACUUM ANALYZE");
        }
    }
}
