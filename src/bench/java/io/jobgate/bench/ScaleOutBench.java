package io.jobgate.bench;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.infra.EmbeddedS3Server;

/**
 * {@code bench --only scaleout --artemis-home DIR [--workers 1,2,3] [--latency-seconds 10] [--max-calls 400]
 * [--max-concurrency 1000] [--tenants 10] [--clients 16]}: worker instances added one at a time to one API
 * instance, as a deployment past one machine runs them, every part a process of its own on this machine:
 * a PostgreSQL server, a standalone Artemis (made by {@code .ci/artemis-instance} from the distribution in
 * {@code --artemis-home}), an S3 API server, the stand-in of OpenAI's Images API answering after
 * {@code --latency-seconds} ({@link SlowProvider}), the API instance (roles api, relay, sweeper,
 * reconciler) and 1, 2, 3 worker instances (role worker), each carrying at most {@code --max-calls} calls
 * ({@code jobgate.worker.max-calls}, what a deployment sets from an instance's memory), all of them sharing
 * the provider's {@code --max-concurrency}.
 *
 * <p>Per step, after a warm-up round of short calls on the step's new instance: three waves of jobs for
 * the calls the step may hold (the smaller of instances × max-calls and max-concurrency), and printed:
 * the most calls in flight at the stand-in and per instance (from the attempts' start and end times), the
 * rate against the ideal (calls allowed / latency), and whether the provider's max-concurrency held
 * across the instances. On two cores the instances share the machine: the figure is how the work spreads
 * and what bounds hold, not more CPU.
 */
final class ScaleOutBench {

    private final Path jar;
    private final Path dir;
    private final Map<String, String> opts;
    private final String java;
    private final long latencyMillis;
    private final List<Integer> steps = new ArrayList<>();
    private final int maxCalls;
    private final int maxConcurrency;
    private final int tenants;

    ScaleOutBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.opts = opts;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.latencyMillis = Math.round(Double.parseDouble(opts.getOrDefault("latency-seconds", "10")) * 1000);
        for (String n : opts.getOrDefault("workers", "1,2,3").split(",")) {
            steps.add(Integer.parseInt(n.trim()));
        }
        this.maxCalls = Integer.parseInt(opts.getOrDefault("max-calls", "400"));
        this.maxConcurrency = Integer.parseInt(opts.getOrDefault("max-concurrency", "1000"));
        this.tenants = Integer.parseInt(opts.getOrDefault("tenants", "10"));
    }

    /** One step's figures. */
    record Step(int workers, int allowed, int jobs, double seconds, int succeeded, int mostAtProvider, List<Integer> mostPerInstance,
                long dropped, long attempts) {
    }

    void run() throws Exception {
        String artemisHome = RelayBench.artemisHome(opts.get("artemis-home"));
        if (artemisHome == null || !new File(artemisHome, "bin/artemis").canExecute()) {
            throw new IllegalStateException("--only scaleout needs an Artemis distribution: --artemis-home DIR or ARTEMIS_HOME "
                    + "(mvn dependency:copy -Dartifact=org.apache.activemq:apache-artemis:2.40.0:tar.gz:bin, then unpack it)");
        }
        System.out.printf("%nScale-out: worker instances added to one API instance; the stand-in answers after %.1f s; each worker "
                        + "carries at most %d calls (jobgate.worker.max-calls), the provider allows %d (max-concurrency, all "
                        + "instances); %d cores%n", latencyMillis / 1000.0, maxCalls, maxConcurrency,
                Runtime.getRuntime().availableProcessors());
        List<Process> workers = new ArrayList<>();
        List<Step> figures = new ArrayList<>();
        Process broker = null;
        Process api = null;
        EmbeddedS3Server s3 = EmbeddedS3Server.start(dir.resolve("s3"), Bench.freePort());
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, latencyMillis)) {
            int brokerPort = Bench.freePort();
            broker = startBroker(artemisHome, brokerPort);
            Map<String, String> shared = new LinkedHashMap<>();
            shared.put("JOBGATE_BROKER_URL", "tcp://127.0.0.1:" + brokerPort);
            shared.put("JOBGATE_BROKER_USER", "jobgate");
            shared.put("JOBGATE_BROKER_PASSWORD", "jobgate");
            shared.put("JOBGATE_S3_ENDPOINT", s3.endpoint());
            shared.put("JOBGATE_S3_ACCESS_KEY", s3.accessKey());
            shared.put("JOBGATE_S3_SECRET_KEY", s3.secretKey());
            parties.writeTenants(tenants, maxConcurrency);
            parties.port = Bench.freePort();
            Map<String, String> apiEnv = new LinkedHashMap<>(shared);
            apiEnv.put("JOBGATE_ROLES", "api,relay,sweeper,reconciler");
            api = parties.startInstance("api", parties.port, maxConcurrency, apiEnv);
            Map<String, String> optsForSend = new LinkedHashMap<>(opts);
            optsForSend.put("latency-seconds", Double.toString(latencyMillis / 1000.0));
            InflightBench sender = new InflightBench(jar, dir, optsForSend);
            for (int n : steps) {
                while (workers.size() < n) {
                    Map<String, String> workerEnv = new LinkedHashMap<>(shared);
                    workerEnv.put("JOBGATE_ROLES", "worker");
                    workerEnv.put("JOBGATE_WORKER_MAX_CALLS", Integer.toString(maxCalls));
                    workers.add(parties.startInstance("worker-" + (workers.size() + 1), Bench.freePort(), maxConcurrency, workerEnv));
                }
                int allowed = Math.min(n * maxCalls, maxConcurrency);
                // Unmeasured: short calls until every instance has compiled its hot paths.
                parties.get(parties.providerUrl + "/latency?ms=" + InflightBench.WARM_UP_LATENCY_MS);
                runRound(parties, sender, 2 * allowed, true);
                parties.get(parties.providerUrl + "/latency?ms=" + latencyMillis);
                Thread.sleep(1000); // the warm-up's last rows apart from the measured jobs' created_at
                figures.add(measure(parties, sender, n, allowed));
                print(figures.get(figures.size() - 1));
            }
        } finally {
            for (Process w : workers) {
                stop(w);
            }
            if (api != null) {
                stop(api);
            }
            if (broker != null) {
                stop(broker);
            }
            s3.stop();
        }
        printTable(figures);
    }

    private Step measure(GatewayProcesses parties, InflightBench sender, int workers, int allowed) throws Exception {
        parties.get(parties.providerUrl + "/reset");
        int jobs = 3 * allowed;
        long first = runRound(parties, sender, jobs, false);
        try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            long[] done = sender.waitForFinal(db, parties, first, jobs, jobs);
            String ofRun = " FROM attempts a JOIN jobs j ON j.job_id = a.job_id WHERE j.tenant_id LIKE '" + parties.tenantPattern()
                    + "' AND j.created_at >= to_timestamp(" + first / 1000.0 + ")";
            // Calls at once, from the attempts' own times: +1 at each start, -1 at each end, summed in time order.
            String overlap = "SELECT worker, max(at_once) FROM (SELECT worker, sum(d) OVER (PARTITION BY worker ORDER BY t, d) AS at_once FROM ("
                    + "SELECT a.worker, a.started_at AS t, 1 AS d" + ofRun + " UNION ALL SELECT a.worker, a.ended_at, -1" + ofRun
                    + ") e) s GROUP BY worker ORDER BY worker";
            List<Integer> perInstance = new ArrayList<>();
            try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(overlap)) {
                while (rs.next()) {
                    perInstance.add(rs.getInt(2));
                }
            }
            String stats = parties.get(parties.providerUrl + "/stats").body();
            Matcher m = Pattern.compile("\"most\"\\s*:\\s*(\\d+)").matcher(stats);
            if (!m.find()) {
                throw new IllegalStateException("the stand-in's /stats has no most: " + stats);
            }
            int mostAtProvider = Integer.parseInt(m.group(1));
            long dropped = count(db, "SELECT count(*)" + ofRun + " AND a.outcome = 'lease_lost' AND a.http_status = 200");
            long attempts = count(db, "SELECT count(*)" + ofRun);
            return new Step(workers, allowed, jobs, (done[1] - first) / 1000.0, (int) done[0], mostAtProvider, perInstance,
                    dropped, attempts);
        }
    }

    /** Posts {@code jobs} jobs; a warm-up round also waits for them. @return when the first was posted */
    private long runRound(GatewayProcesses parties, InflightBench sender, int jobs, boolean waitHere) throws Exception {
        long first = System.currentTimeMillis();
        sender.send(parties, jobs, new AtomicLong());
        if (waitHere) {
            try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                sender.waitForFinal(db, parties, first, jobs, Long.MAX_VALUE);
            }
        }
        return first;
    }

    private Process startBroker(String artemisHome, int port) throws Exception {
        Path instance = dir.resolve("artemis");
        Process create = new ProcessBuilder(".ci/artemis-instance", artemisHome, instance.toString(), Integer.toString(port),
                Integer.toString(Bench.freePort()), "jobgate-bench").redirectErrorStream(true)
                .redirectOutput(dir.resolve("artemis-create.log").toFile()).start();
        if (!create.waitFor(120, TimeUnit.SECONDS) || create.exitValue() != 0) {
            throw new IllegalStateException(".ci/artemis-instance failed: " + Files.readString(dir.resolve("artemis-create.log")));
        }
        Path log = dir.resolve("artemis.log");
        Process broker = new ProcessBuilder(instance.resolve("bin/artemis").toString(), "run").redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!Files.readString(log).contains("AMQ221007")) { // "Server is now active"
            if (!broker.isAlive() || System.nanoTime() > until) {
                throw new IllegalStateException("Artemis did not start: " + Files.readString(log));
            }
            Thread.sleep(200); // another process starting: nothing to wait on but its log
        }
        return broker;
    }

    private static void stop(Process p) throws InterruptedException {
        p.destroy();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
    }

    private static long count(Connection db, String sql) throws Exception {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void print(Step s) {
        System.out.printf("  %d worker instance(s): %,d jobs, %d calls allowed, most at the provider %d, per instance %s, %.1f s, "
                        + "%.1f jobs/s = %.2f× the ideal %.1f; %d succeeded, %d attempts, %d answered calls dropped%n", s.workers(), s.jobs(),
                s.allowed(), s.mostAtProvider(), s.mostPerInstance(), s.seconds(), s.jobs() / s.seconds(),
                s.jobs() / s.seconds() / (s.allowed() * 1000.0 / latencyMillis), s.allowed() * 1000.0 / latencyMillis, s.succeeded(),
                s.attempts(), s.dropped());
    }

    private void printTable(List<Step> figures) {
        System.out.printf("%n| worker instances | calls allowed (min of instances × %d, %d) | most in flight at the provider | most per "
                + "instance | jobs | seconds | jobs/s | × ideal | succeeded | answers dropped |%n", maxCalls, maxConcurrency);
        System.out.println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for (Step s : figures) {
            double ideal = s.allowed() * 1000.0 / latencyMillis;
            System.out.printf("| %d | %d | %d%s | %s | %,d | %.1f | %.1f | %.2f | %d | %d |%n", s.workers(), s.allowed(), s.mostAtProvider(),
                    s.mostAtProvider() > maxConcurrency ? " (above max-concurrency!)" : "", s.mostPerInstance(), s.jobs(), s.seconds(),
                    s.jobs() / s.seconds(), s.jobs() / s.seconds() / ideal, s.succeeded(), s.dropped());
        }
    }
}
