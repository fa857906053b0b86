package io.jobgate.bench;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * {@code bench --only pool}: a provider pool through a member's outage, as a timeline (docs/providers.md, "Pools").
 * The gateway runs as a user runs it ({@link GatewayProcesses}) with one pool of two image members of different public
 * APIs: {@code openai} (OpenAI Images, a stand-in answering after {@code --latency-seconds}) and {@code simulator}
 * (the bundled Replicate-shaped predictions API), weights 1 and 1. Pool jobs arrive open-loop at {@code --rate} jobs/s
 * through five phases of {@code --phase-seconds}: both healthy; openai answers {@code 503}; openai healthy again (it
 * takes traffic back after its cooldown and a probe); openai answers {@code 429} with a one-hour {@code Retry-After};
 * openai answers again, but its gate stays closed for the hour. Every 5 s it prints the jobs finished per member, p95
 * accept → final of those, the open jobs and openai's state in the pool; at the end, per phase, and the money: one
 * debit per job, none refunded, no job succeeded twice. An unmeasured warm-up of {@code --warm-up-seconds} at the same
 * rate comes first. Then two checks of their own: jobs whose reply the simulator loses, settled there by lookup
 * ({@link PoolLostReplies}), and a tenant whose rules exclude the simulator, waiting on openai ({@link PoolRuledOutTenant}).
 */
final class PoolBench {

    /** A pool job: the body every tenant of this bench sends. */
    static final String POOL_JOB = AdmissionLoad.BODY.replace("{\"preset_id\"", "{\"pool\": \"images\", \"preset_id\"");

    /** The first phase in which openai's gate is closed for the hour (its 429). */
    private static final int FIRST_GATED_PHASE = 3;

    private static final String[] PHASES = {"both healthy", "openai 503", "openai healthy again", "openai 429, Retry-After 1 h",
            "openai answers, its gate closed"};

    private final Path jar;
    private final Path dir;
    private final String java;
    private final long latencyMillis;
    private final int rate;
    private final int phaseSeconds;
    private final int tenants;
    private final int warmUpSeconds;

    PoolBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.latencyMillis = Math.round(Double.parseDouble(opts.getOrDefault("latency-seconds", "0.5")) * 1000);
        this.rate = Integer.parseInt(opts.getOrDefault("rate", "20"));
        this.phaseSeconds = Integer.parseInt(opts.getOrDefault("phase-seconds", "60"));
        this.tenants = Integer.parseInt(opts.getOrDefault("tenants", "4"));
        this.warmUpSeconds = Integer.parseInt(opts.getOrDefault("warm-up-seconds", "30"));
    }

    void run() throws Exception {
        System.out.printf("%nPool through an outage: pool images = openai (OpenAI Images stand-in, %.1f s) + simulator (Replicate-shaped),"
                        + " weights 1:1; %d jobs/s open-loop, %d tenants; phases of %d s: %s; Java %d, %d cores%n",
                latencyMillis / 1000.0, rate, tenants, phaseSeconds, String.join(" → ", PHASES), Runtime.version().feature(),
                Runtime.getRuntime().availableProcessors());
        Path pools = Files.createDirectories(dir.resolve("pools"));
        // openai's cooldown: 20 s, or a third of a phase when phases are short (CI runs 5 s), so that openai takes traffic
        // back in the third phase and meets the 429 of the fourth: else it cools through both, and its gate never closes.
        int cooldownSeconds = Math.max(1, Math.min(20, phaseSeconds / 3));
        Files.writeString(pools.resolve("images.properties"), """
                # bench --only pool: two image members of different public APIs.
                kind = image
                members = openai, simulator
                weight.openai = 1
                weight.simulator = 1
                max-wait-seconds.openai = 60
                failure-threshold.openai = 5
                failure-window-seconds.openai = 30
                cooldown-seconds.openai = %d
                # The lost replies this bench causes on the simulator are ambiguous failures, which count against it:
                # they must not cool down the member the outage phases need.
                failure-threshold.simulator = 0
                """.formatted(cooldownSeconds));
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, latencyMillis)) {
            PoolRuledOutTenant ruledOut = new PoolRuledOutTenant(parties, POOL_JOB, PHASES.length);
            PoolLostReplies lostReplies = new PoolLostReplies(parties, tenants, POOL_JOB);
            // Each member can carry the whole rate alone (64 calls at once each): what a failover needs of the other member.
            parties.startGateway(tenants, 100_000, 64, Map.of("JOBGATE_POOLS_DIRS", pools.toString(),
                    "JOBGATE_PROVIDER_SIMULATOR_MAX_CONCURRENCY", "64"));
            ExecutorService senders = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "pool-sender");
                t.setDaemon(true);
                return t;
            });
            AtomicLong accepted = new AtomicLong();
            AtomicLong refused = new AtomicLong();
            try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                // Warm-up, unmeasured (its jobs arrive before the first phase): the JIT compiles the path first.
                send(parties, senders, System.currentTimeMillis(), warmUpSeconds, new AtomicLong(), new AtomicLong());
                SustainedBench.waitForOpen(db, parties, 0, 120);
                long start = System.currentTimeMillis();
                Thread timeline = new Thread(() -> timeline(parties, start), "pool-timeline");
                timeline.setDaemon(true);
                timeline.start();
                // Beside the arrivals: the tenant that may not use the simulator, through every phase; and while both
                // members are healthy, the jobs whose reply the simulator loses (a handful: 10 at 20 jobs/s).
                Thread ruledOutArrivals = background("pool-ruled-out", () -> ruledOut.run(start, phaseSeconds));
                Thread lostReplyArrivals = background("pool-lost-replies", () -> lostReplies.send(start, phaseSeconds, Math.max(3, rate / 2)));
                for (int phase = 0; phase < PHASES.length; phase++) {
                    fault(parties, phase);
                    System.out.printf("  -- phase %d at %3d s: %s%n", phase + 1, (System.currentTimeMillis() - start) / 1000, PHASES[phase]);
                    send(parties, senders, start + phase * phaseSeconds * 1000L, phaseSeconds, accepted, refused);
                }
                lostReplyArrivals.join();
                ruledOutArrivals.join(); // it reads its last phase's jobs at that phase's end
                timeline.interrupt();
                SustainedBench.waitForOpen(db, parties, 0, 300);
                summary(db, parties, start, accepted.get(), refused.get());
                lostReplies.check(db);
                ruledOut.finish(db, PHASES, FIRST_GATED_PHASE);
            } finally {
                senders.shutdownNow();
            }
        }
    }

    private static Thread background(String name, Runnable work) {
        Thread t = new Thread(work, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The stand-in's answers in {@code phase}. */
    private static void fault(GatewayProcesses parties, int phase) throws Exception {
        String query = switch (phase) {
            case 1 -> "status=503";
            case 3 -> "status=429&retry-after=3600";
            default -> "status=0";
        };
        parties.http.send(HttpRequest.newBuilder(URI.create(parties.providerUrl + "/fault?" + query)).build(),
                HttpResponse.BodyHandlers.discarding());
    }

    /** One phase's arrivals, each at its planned time from {@code from}. */
    private void send(GatewayProcesses parties, ExecutorService senders, long from, int seconds, AtomicLong accepted, AtomicLong refused)
            throws InterruptedException {
        int count = rate * seconds;
        for (int k = 0; k < count; k++) {
            long wait = from + Math.round(k * 1000.0 / rate) - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait); // the arrivals' clock
            }
            int tenant = k % tenants;
            senders.execute(() -> {
                try {
                    HttpRequest.Builder post = parties.jobPost(POOL_JOB);
                    parties.postHeaders(tenant).forEach(post::header);
                    HttpResponse<String> r = parties.http.send(post.build(), HttpResponse.BodyHandlers.ofString());
                    (r.statusCode() == 202 ? accepted : refused).incrementAndGet();
                } catch (Exception e) {
                    refused.incrementAndGet();
                }
            });
        }
        long rest = from + seconds * 1000L - System.currentTimeMillis();
        if (rest > 0) {
            Thread.sleep(rest);
        }
    }

    /** Every 5 s: finished per member, p95 accept → final of those, open jobs, openai's state in the pool. */
    private void timeline(GatewayProcesses parties, long start) {
        System.out.println("     t  finished openai  simulator  failed  p95 accept→final  open  openai in the pool");
        try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            long from = start;
            while (!Thread.currentThread().isInterrupted()) {
                long to = from + 5000;
                long wait = to - System.currentTimeMillis();
                if (wait > 0) {
                    Thread.sleep(wait);
                }
                Tally t = tally(db, parties, "finalized_at", from, to);
                System.out.printf("  %4d s  %15d  %9d  %6d  %13.0f ms  %4d  %s%n", (to - start) / 1000, t.on("openai"), t.on("simulator"),
                        t.failed, p95(t.latencies), SustainedBench.open(db, parties), memberState(db));
                from = to;
            }
        } catch (InterruptedException stopped) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            System.out.println("  timeline stopped: " + e);
        }
    }

    /** openai's state as placement sees it: its gate, its cooldown and probe (the table GET /v1/admin/pools reads). */
    static String memberState(Connection db) throws Exception {
        StringBuilder state = new StringBuilder();
        try (ResultSet rs = db.createStatement().executeQuery("SELECT greatest(0, extract(epoch FROM closed_until - now()))::bigint"
                + " FROM provider_gates WHERE provider = 'openai' AND closed_until > now()")) {
            if (rs.next()) {
                state.append("gate closed ").append(rs.getLong(1)).append(" s more; ");
            }
        }
        try (ResultSet rs = db.createStatement().executeQuery("SELECT failures, greatest(0, extract(epoch FROM cooling_until - now()))::bigint,"
                + " probe_job_id IS NOT NULL, cooling_until IS NOT NULL FROM pool_members WHERE pool = 'images' AND member = 'openai'")) {
            if (rs.next()) {
                long coolingFor = rs.getLong(2);
                boolean cooling = rs.getBoolean(4);
                state.append(!cooling ? "healthy, " + rs.getInt(1) + " failures in its window"
                        : coolingFor > 0 ? "cooling " + coolingFor + " s more" : rs.getBoolean(3) ? "probing" : "probe open");
            } else {
                state.append("healthy");
            }
        }
        return state.toString();
    }

    private void summary(Connection db, GatewayProcesses parties, long start, long accepted, long refused) throws Exception {
        System.out.printf("%n  per phase (jobs by their arrival):%n  phase                              jobs  on openai  on simulator  moved  p95 accept→final  failed%n");
        for (int phase = 0; phase < PHASES.length; phase++) {
            long from = start + phase * phaseSeconds * 1000L;
            long to = from + phaseSeconds * 1000L;
            Tally t = tally(db, parties, "created_at", from, to);
            System.out.printf("  %-32s %6d  %9d  %12d  %5d  %13.0f ms  %6d%n", PHASES[phase], t.jobs, t.on("openai"),
                    t.on("simulator"), t.moved, p95(t.latencies), t.failed);
        }
        try (PreparedStatement s = db.prepareStatement("""
                SELECT count(*), count(*) FILTER (WHERE status = 'succeeded'),
                       (SELECT count(*) FROM ledger l WHERE l.tenant_id LIKE ? AND l.entry_type = 'debit' AND l.job_id IS NOT NULL),
                       (SELECT count(*) FROM ledger l WHERE l.tenant_id LIKE ? AND l.entry_type = 'refund'),
                       (SELECT count(*) FROM (SELECT a.job_id FROM attempts a JOIN jobs k ON k.job_id = a.job_id
                         WHERE k.tenant_id LIKE ? AND a.outcome = 'succeeded' GROUP BY a.job_id HAVING count(*) > 1) twice),
                       (SELECT count(DISTINCT cost_micros) FROM jobs c WHERE c.tenant_id LIKE ?)
                  FROM jobs WHERE tenant_id LIKE ?""")) {
            for (int i = 1; i <= 5; i++) {
                s.setString(i, parties.tenantPattern());
            }
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                boolean exact = rs.getLong(1) == rs.getLong(2) && rs.getLong(3) == rs.getLong(1) && rs.getLong(4) == 0 && rs.getLong(5) == 0;
                System.out.printf("%n  accepted %d, refused %d after the warm-up; jobs %d (the warm-up's included), succeeded %d; debits %d (one a job: %s), refunds %d,"
                                + " jobs that succeeded twice %d; prices charged: %d (the pool's dearest member's, whoever served)%n",
                        accepted, refused, rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(3) == rs.getLong(1) ? "yes" : "NO",
                        rs.getLong(4), rs.getLong(5), rs.getLong(6));
                if (!exact) {
                    // Not a figure but a broken promise (a job lost, failed, charged or rendered twice): the run fails.
                    throw new IllegalStateException("the pool run broke a promise: every job must succeed once, debited once, never refunded");
                }
            }
        }
    }

    /** This run's jobs whose {@code column} falls in [from, to): succeeded per member, the others, accept → final, moved. */
    private static final class Tally {
        final Map<String, Long> byMember = new TreeMap<>();
        final List<Double> latencies = new ArrayList<>();
        long jobs;
        long failed;
        /** Jobs whose attempts ran on more than one member. */
        long moved;

        long on(String member) {
            return byMember.getOrDefault(member, 0L);
        }
    }

    private static Tally tally(Connection db, GatewayProcesses parties, String column, long from, long to) throws Exception {
        Tally t = new Tally();
        try (PreparedStatement s = db.prepareStatement("SELECT j.provider, j.status, extract(epoch FROM j.finalized_at - j.created_at) * 1000,"
                + " (SELECT count(DISTINCT a.adapter) FROM attempts a WHERE a.job_id = j.job_id), j.correlation_id FROM jobs j"
                + " WHERE j.tenant_id LIKE ? AND j." + column + " >= ? AND j." + column + " < ?")) {
            s.setString(1, parties.tenantPattern());
            s.setTimestamp(2, new java.sql.Timestamp(from));
            s.setTimestamp(3, new java.sql.Timestamp(to));
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    t.jobs++;
                    if ("succeeded".equals(rs.getString(2))) {
                        t.byMember.merge(rs.getString(1), 1L, Long::sum);
                    } else {
                        t.failed++;
                    }
                    if (!PoolLostReplies.isOne(rs.getString(5))) {
                        t.latencies.add(rs.getDouble(3)); // a lost reply's wait for its lookup is not the pool's
                    }
                    if (rs.getLong(4) > 1) {
                        t.moved++;
                    }
                }
            }
        }
        return t;
    }

    private static double p95(List<Double> values) {
        if (values.isEmpty()) {
            return 0;
        }
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        return sorted.get((int) Math.min(sorted.size() - 1, Math.ceil(sorted.size() * 0.95) - 1));
    }
}
