package io.jobgate.bench;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.Gateway;
import io.jobgate.common.Digests;
import org.apache.camel.CamelContext;
import org.apache.camel.main.Main;

/**
 * {@code java -jar target/jobgate-bench.jar [--jdbc-url URL] [--db-user U] [--db-password P]
 * [--seconds 10] [--clients 1,16,64] [--warm-up 20] [--samples 50] [--worker-warm-up 45] [--retry-samples 20] [--only admission|relay|worker|drain|mixed|history|restart|peers, or several: admission,drain] [--mixed-jobs 5000] [--mixed-clients 16] [--mixed-warm-up 1000] [--artemis-home DIR]
 * [--drain-jobs 20000] [--drain-tenants 20] [--drain-warm-up N] [--floor-jobs min(5000, drain jobs), 0: none] [--history 1000000]
 * [--peers [db-scheduler,db-scheduler-lock-and-fetch,jobrunr|all] [--peer-jobs 20000] [--peer-warm-up N] [--peer-threads 16] [--peers-dir DIR]]}:
 * admission jobs/s and latency over real HTTP against PostgreSQL, beside pgbench running the same
 * three inserts in one transaction on the same server; then the relay's events/s beside the
 * broker's own ceiling, and the fairness ratio (see {@link RelayBench}); then a backlog drained
 * through the whole path (see {@link DrainBench}), and admission beside a draining backlog ({@code mixed}). {@code --only restart [--restarts 3]} times the
 * packaged gateway's restarts instead ({@link RestartBench}); {@code --only history} prints admission,
 * listing, usage and processing figures fresh and again with a seeded history, as ratios ({@link HistoryBench}).
 * {@code --peers} (or {@code --only peers}) also runs db-scheduler and JobRunr on the same PostgreSQL and
 * prints them beside the run's admission and drain figures ({@link PeerBench}).
 * {@code --only inflight [--latency-seconds 30] [--inflight 2000] [--jobs 3 × inflight] [--tenants 10] [--clients 16] [--warm-up N] [--warm-up-rounds 10]
 * [--java PATH] [--peers jobrunr] [--repeat N]}: calls in flight against a slow provider, the gateway and JobRunr each in a
 * process of its own ({@link InflightBench}). {@code --only sustained [--rates 25,50,100,150,200,250]
 * [--step-seconds 45] [--warm-up-seconds 45] [--latency-seconds 0] [--max-concurrency 64] [--tenants 10] [--peers [jobrunr,db-scheduler]]}: open-loop arrivals at stepped
 * rates and the knee, beside JobRunr's and db-scheduler's given the same arrivals ({@link SustainedBench}, {@link SustainedPeers}). {@code --only fairness [--flood 1500] [--quiet-jobs 12] [--background-rate 50]}:
 * a quiet tenant's jobs behind a noisy tenant's flood while the other tenants keep sending ({@link FloodBench}).
 * {@code --only pool [--rate 20] [--phase-seconds 60] [--latency-seconds 0.5] [--tenants 4] [--warm-up-seconds 30]}: a pool of
 * two members of different public APIs through one member's outage, as a timeline ({@link PoolBench}).
 * {@code --only waiting [--waiters 1000] [--wait-seconds 30]}: reads waiting for their job against as many idle
 * keep-alive connections: the gateway's threads, RSS and heap ({@link WaitingReadsBench}).
 * {@code --only workers [--idle-workers 1000] [--wait-seconds 30] [--idle-seconds 16] [--busy-workers 200] [--jobs 2000] [--warm-up N]
 * [--clients 16] [--tenants 10] [--max-concurrency N] [--statements 12]}: a pull member's external workers, idle on long polls (the gateway's
 * threads, connections in use and statements) and busy on instant renders beside the in-process path ({@link ExternalWorkersBench}).
 * {@code --only scaleout --artemis-home DIR [--workers 1,2,3] [--latency-seconds 10] [--max-calls 400] [--max-concurrency 1000]}:
 * worker instances added to one API instance on a standalone broker, each carrying up to its own calls, sharing
 * the provider's ({@link ScaleOutBench}).
 */
public final class Bench {

    private Bench() {
    }

    static {
        // As the gateway's commands do: one line per log record, before the first logger starts JUL.
        io.jobgate.common.LogSetup.use();
    }

    /** What {@code --help} prints: the steps and their options (the figures they give: docs/benchmarks.md). */
    static final String USAGE = """
            usage: java -jar target/jobgate-bench.jar [--only STEPS] [options]
              Prints figures; asserts nothing about speed. What each step measures and today's figures:
              docs/benchmarks.md.

            in one process (a full run without --only: admission, relay, worker, drain, mixed):
              --only admission       accepts per second at each client count   --clients 1,16,64 --seconds 10
                                                                               --warm-up 20 --samples 50
              --only relay           the outbox relay's rounds                 --relay-events 200 --relay-tenants 50
              --only worker          the worker's path against a fake provider --worker-warm-up 45
              --only drain           a closed drain, admission included        --drain-jobs 20000 --drain-clients 16
                                                                               --drain-tenants 20 --drain-warm-up N
                                                                               --floor-jobs N --dispatch-max-running 100000
              --only mixed           admission and the drain together          --mixed-jobs 5000 --mixed-clients 16 --mixed-warm-up N
              --only history         the drain on a large history              --history 1000000 --samples 50 --retry-samples 20
              --only restart         restarts of the jar as a process          --restarts 3
              --peers [all|NAMES]    JobRunr and db-scheduler beside the drain --peer-jobs 20000 --peer-threads 16
                                                                               --peer-warm-up N --peers-dir DIR
              --jdbc-url URL         a PostgreSQL of yours (default: embedded) --db-user postgres --db-password P

            the gateway as its own process, a slow provider stand-in beside it:
              --only inflight        calls in flight at a provider's latency   --latency-seconds 10 --inflight 2000
                                                                               --jobs N --warm-up N --warm-up-rounds 10
                                                                               --clients N --tenants N --repeat 1
                                                                               [--peers jobrunr]
                                                                               [--peer-unbounded true]: the peer not held
                                                                               to --inflight calls
              --only sustained       open-loop arrivals, rate by rate          --rates 25,50,100,150,200,250
                                                                               --step-seconds 45 --warm-up-seconds 45
                                                                               --statements 12 --max-concurrency N [--peers]
              --only pool            a pool of two through a member's outage   --rate 20 --phase-seconds 60 --latency-seconds 0.5
              --only fairness        a flooding tenant beside quiet ones       --flood 1500 --flood-clients 32
                                                                               --quiet-jobs 12 --background-rate 50
              --only waiting         long-polling readers of job status        --waiters 1000 --wait-seconds 30
              --only workers         a pull member's external workers: idle    --idle-workers 1000 --wait-seconds 30
                                     on long polls, then busy beside the       --idle-seconds 16 --busy-workers 200
                                     in-process path                           --jobs 2000 --warm-up N --clients 16
                                                                               --tenants 10 --max-concurrency N
                                                                               --statements 12
              --only scaleout        workers added as processes                --workers 1,2,3 --max-calls 400
                                                                               --artemis-home DIR
              --java PATH            the JVM the gateway runs on (e.g. a Temurin 25)

              --help                 this text
            """;

    public static void main(String[] args) throws Exception {
        if (java.util.Arrays.stream(args).anyMatch(a -> a.equals("--help") || a.equals("-h") || a.equals("help"))) {
            System.out.print(USAGE);
            return;
        }
        Map<String, String> opts = options(args);
        String only = opts.getOrDefault("only", "all");
        // --only admission,drain runs those steps of a full run (in a full run's order).
        java.util.Set<String> steps = new java.util.HashSet<>(List.of(only.split(",")));
        java.util.function.Predicate<String> step = name -> steps.contains("all") || steps.contains(name);
        // Before anything starts: --peers fails at once when the peers were not built beside the jar.
        PeerBench peers = null;
        if (opts.containsKey("peers") || steps.contains("peers")) {
            try {
                peers = PeerBench.locate(opts.get("peers"), opts.get("peers-dir"));
            } catch (IllegalStateException | IllegalArgumentException e) {
                System.err.println(e.getMessage());
                System.exit(2);
            }
        }
        int seconds = Integer.parseInt(opts.getOrDefault("seconds", "10"));
        List<Integer> clients = new ArrayList<>();
        for (String c : opts.getOrDefault("clients", "1,16,64").split(",")) {
            clients.add(Integer.parseInt(c.trim()));
        }
        Path dataDir = Files.createTempDirectory("jobgate-bench");
        int port = freePort();
        if (opts.getOrDefault("only", "all").equals("restart")) {
            // The jar this command runs from, as processes of its own: a restart is a new JVM.
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new RestartBench(jar, dataDir, port).run(Integer.parseInt(opts.getOrDefault("restarts", "3"))));
            System.exit(0);
        }
        if (only.equals("sustained")) {
            // Open-loop arrivals against the gateway as its own process (SustainedBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new SustainedBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("pool")) {
            // A pool of two members of different public APIs through one member's outage, as a timeline (PoolBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new PoolBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("fairness")) {
            // A quiet tenant behind a noisy one's flood while the rest keep arriving (FloodBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new FloodBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("waiting")) {
            // GET /v1/jobs/{id}?wait=N against as many idle connections (WaitingReadsBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new WaitingReadsBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("workers")) {
            // A pull member's external workers: idle on long polls, then busy beside the in-process path (ExternalWorkersBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new ExternalWorkersBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("scaleout")) {
            // Worker instances added one at a time to an API instance, every part a process (ScaleOutBench).
            Path jar = gatewayJar();
            inProcesses(dataDir, () -> new ScaleOutBench(jar, dataDir, opts).run());
            System.exit(0);
        }
        if (only.equals("inflight")) {
            // Stand-in, gateway and JobRunr as processes of their own: each one's memory and threads are its own.
            Path jar = gatewayJar();
            boolean withPeers = peers != null;
            inProcesses(dataDir, () -> new InflightBench(jar, dataDir, opts).run(withPeers));
            System.exit(0);
        }
        String apiKey = "bench-" + System.nanoTime();
        String quietKey = "bench-quiet-" + System.nanoTime();
        // Tenants of this run only: earlier runs on the same database cannot skew it.
        String run = Long.toHexString(System.nanoTime() & 0xFFFFFFL);
        Path tenants = dataDir.resolve("bench-tenants.yaml");
        Files.writeString(tenants, """
                tenants:
                  - id: bench-%s
                    api_key_sha256: %s
                    max_open_jobs: 100000000
                    max_queued_bytes: 1000000000000
                    credit_grants: {bench-%d: 1000000000000000}
                  - id: bench-%s-quiet
                    api_key_sha256: %s
                    max_running_jobs: 1
                    credit_grants: {bench-%d: 1000000000000}
                """.formatted(run, Digests.sha256Hex(apiKey), System.nanoTime(), run, Digests.sha256Hex(quietKey), System.nanoTime()));
        boolean history = only.equals("history");
        boolean mixed = step.test("mixed") && !history;
        boolean drain = step.test("drain") || history || mixed; // the drain's tenants and fake provider
        int drainTenants = Integer.parseInt(opts.getOrDefault("drain-tenants", "20"));
        List<String> drainKeys = new ArrayList<>();
        if (drain) {
            StringBuilder yaml = new StringBuilder();
            for (int i = 0; i < drainTenants; i++) {
                String key = "bench-drain-" + i + "-" + System.nanoTime();
                drainKeys.add(key);
                yaml.append("""
                          - id: bench-%s-drain-%02d
                            api_key_sha256: %s
                            max_open_jobs: 100000000
                            max_running_jobs: 64
                            max_queued_bytes: 1000000000000
                            credit_grants: {bench-%d: 1000000000000000}
                        """.formatted(run, i, Digests.sha256Hex(key), System.nanoTime()));
            }
            Files.writeString(tenants, yaml.toString(), java.nio.file.StandardOpenOption.APPEND);
        }
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("camel.server.port", Integer.toString(port));
        settings.put("jobgate.data-dir", dataDir.toString());
        settings.put("jobgate.db.url", opts.getOrDefault("jdbc-url", ""));
        settings.put("jobgate.db.user", opts.getOrDefault("db-user", "postgres"));
        settings.put("jobgate.db.password", opts.getOrDefault("db-password", ""));
        int brokerPort = freePort();
        settings.put("jobgate.broker.url", "");
        settings.put("jobgate.broker.embedded-port", Integer.toString(brokerPort));
        // The gateway-wide window of dispatched, unfinished jobs: open by default, so a held backlog is
        // published at once when released; --dispatch-max-running 64 is the shipped default (the relay then
        // publishes as jobs finish).
        settings.put("jobgate.dispatch.max-running", opts.getOrDefault("dispatch-max-running", "100000"));
        settings.put("jobgate.tenants.files", "config/tenants.yaml," + tenants);
        settings.put("jobgate.admission.max-in-flight", "10000000");
        // Workers start only for the worker section (the others inspect jobs.dispatch themselves).
        settings.put("jobgate.roles", "api,relay,sweeper,reconciler");
        settings.put("jobgate.providers.dirs", "config/providers," + dataDir.resolve("providers"));
        FakeProvider fake = step.test("worker") || drain
                ? new FakeProvider(dataDir.resolve("providers")) : null;
        WorkerBench workerBench = step.test("worker") ? new WorkerBench(fake) : null;
        settings.forEach(System::setProperty);

        Main gateway;
        try {
            gateway = Gateway.startInBackground(Duration.ofSeconds(120));
        } catch (IllegalStateException e) {
            // Exits: the parts that did start (the embedded broker's threads) would keep the JVM alive.
            System.err.println("bench: " + e.getMessage());
            System.exit(1);
            return;
        }
        try {
            javax.sql.DataSource ds = gateway.getCamelContext().getRegistry().lookupByNameAndType("dataSource",
                    javax.sql.DataSource.class);
            PgBench pgbench = PgBench.locate(ds);
            if (workerBench != null) {
                // First, on an empty dispatch queue.
                workerBench.run(gateway.getCamelContext(), new AdmissionLoad(port, quietKey, WorkerBench.BODY),
                        Integer.parseInt(opts.getOrDefault("samples", "50")),
                        Integer.parseInt(opts.getOrDefault("worker-warm-up", "45")),
                        Integer.parseInt(opts.getOrDefault("retry-samples", "20")));
            }
            AdmissionLoad.Result bestAdmission = null;
            int bestClients = 0;
            if (step.test("admission")) {
                Map<Integer, AdmissionLoad.Result> byClients = admission(pgbench, port, apiKey, seconds, clients, opts);
                for (var e : byClients.entrySet()) {
                    if (bestAdmission == null || e.getValue().perSecond() > bestAdmission.perSecond()) {
                        bestAdmission = e.getValue();
                        bestClients = e.getKey();
                    }
                }
            }
            Double drained = null;
            List<DrainFloor.Figures> floor = List.of();
            if (step.test("relay")) {
                new RelayBench(gateway.getCamelContext(), run, new AdmissionLoad(port, quietKey), brokerPort,
                        RelayBench.artemisHome(opts.get("artemis-home")))
                        .run(Integer.parseInt(opts.getOrDefault("relay-tenants", "50")),
                                Integer.parseInt(opts.getOrDefault("relay-events", "200")),
                                Integer.parseInt(opts.getOrDefault("samples", "50")));
            }
            if (drain) {
                List<AdmissionLoad> loads = new ArrayList<>();
                drainKeys.forEach(k -> loads.add(new AdmissionLoad(port, k, FakeProvider.BODY)));
                DrainBench drainBench = new DrainBench(gateway.getCamelContext(), fake, loads, "bench-" + run + "-drain-");
                int clientsOfDrain = Integer.parseInt(opts.getOrDefault("drain-clients", "16"));
                if (history) {
                    List<String> ids = new ArrayList<>();
                    for (int i = 0; i < drainTenants; i++) {
                        ids.add(String.format("bench-%s-drain-%02d", run, i));
                    }
                    CamelContext camel = gateway.getCamelContext();
                    new HistoryBench(ds, port, ids, drainKeys, drainBench, () -> {
                        try {
                            fake.loadAdapter(camel);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }, () -> camel.createProducerTemplate().sendBody(io.jobgate.relay.RelayWakeup.QUEUE, null)).run(
                            Integer.parseInt(opts.getOrDefault("history", "1000000")),
                            Integer.parseInt(opts.getOrDefault("drain-jobs", "1500")),
                            Integer.parseInt(opts.getOrDefault("samples", "50")), clientsOfDrain);
                } else if (step.test("drain")) {
                    int jobs = Integer.parseInt(opts.getOrDefault("drain-jobs", "20000"));
                    drained = drainBench.run(jobs, Integer.parseInt(opts.getOrDefault("drain-warm-up", Integer.toString(Math.min(2000, jobs / 10)))),
                            clientsOfDrain);
                    int floorJobs = Integer.parseInt(opts.getOrDefault("floor-jobs", Integer.toString(Math.min(5000, jobs))));
                    if (floorJobs > 0) {
                        // The same parts without jobgate's work: what the drain could reach at best (DrainFloor).
                        floor = new DrainFloor(gateway.getCamelContext(), fake.baseUrl(),
                                Integer.parseInt(gateway.getCamelContext().resolvePropertyPlaceholders("{{jobgate.worker.concurrency}}")))
                                .run(floorJobs, Math.min(1000, floorJobs / 5));
                    }
                }
                if (mixed) {
                    drainBench.mixed(Integer.parseInt(opts.getOrDefault("mixed-jobs", "5000")), clientsOfDrain, loads.get(0),
                            Integer.parseInt(opts.getOrDefault("mixed-clients", "16")), seconds,
                            Integer.parseInt(opts.getOrDefault("mixed-warm-up", step.test("drain") ? "0" : "1000")));
                }
            }
            if (peers != null) {
                com.zaxxer.hikari.HikariDataSource hikari = (com.zaxxer.hikari.HikariDataSource) ds;
                int peerJobs = Integer.parseInt(opts.getOrDefault("peer-jobs", "20000"));
                List<PeerBench.Figures> figures = peers.run(hikari.getJdbcUrl(), hikari.getUsername(), hikari.getPassword(),
                        peerJobs, Integer.parseInt(opts.getOrDefault("peer-warm-up", Integer.toString(Math.min(2000, peerJobs / 10)))),
                        Integer.parseInt(opts.getOrDefault("peer-threads", "16")));
                PeerBench.printRatios(figures, bestAdmission == null ? null : bestAdmission.perSecond(),
                        Integer.toString(bestClients), drained, floor);
            }
            pgbench.cleanUp();
            try (var c = ds.getConnection(); var st = c.createStatement()) {
                // The run's jobs never meet a worker: end them so they hold no capacity afterwards.
                st.execute("UPDATE jobs SET status = 'cancelled', finalized_at = now(), dispatched_at = NULL "
                        + "WHERE tenant_id LIKE 'bench-" + run + "%' AND finalized_at IS NULL");
                st.execute("DELETE FROM outbox WHERE tenant_id LIKE 'bench-" + run + "%' AND published_at IS NULL");
                // A tenant's counters are its row plus its release rows (V24): both start again from zero.
                st.execute("UPDATE tenant_accounts SET open_jobs = 0, queued_bytes = 0, running_jobs = 0 "
                        + "WHERE tenant_id LIKE 'bench-" + run + "%'");
                st.execute("UPDATE tenant_releases SET open_jobs = 0, queued_bytes = 0, running_jobs = 0 "
                        + "WHERE tenant_id LIKE 'bench-" + run + "%'");
                // Row 1 holds the counts, the release shards (2..17) start again from zero.
                st.execute("UPDATE gateway_capacity SET in_flight = CASE WHEN id = 1 THEN "
                        + "(SELECT count(*) FROM jobs WHERE finalized_at IS NULL) ELSE 0 END");
                st.execute("UPDATE dispatch_window SET running = CASE WHEN id = 1 THEN (SELECT count(*) FROM jobs "
                        + "WHERE dispatched_at IS NOT NULL AND finalized_at IS NULL) ELSE 0 END");
            }
        } finally {
            gateway.stop();
            if (fake != null) {
                fake.stop();
            }
            deleteTree(dataDir);
        }
        System.exit(0);
    }

    /** Prints the admission table; returns each client count's result. */
    private static Map<Integer, AdmissionLoad.Result> admission(PgBench pgbench, int port, String apiKey, int seconds,
                                                                List<Integer> clients, Map<String, String> opts) throws Exception {
        Map<Integer, AdmissionLoad.Result> results = new LinkedHashMap<>();
        AdmissionLoad load = new AdmissionLoad(port, apiKey);
        WrkLoad wrk = WrkLoad.locate(port, apiKey, AdmissionLoad.BODY);
        // Warm the JIT before measuring: on two cores C2 competes with the workload for a minute or
        // more (Camel, Vert.x, Artemis, pgJDBC, Jackson). Load in 10 s steps until compiling settles.
        int warmUpMax = Integer.parseInt(opts.getOrDefault("warm-up", "120"));
        var jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        int warmUp = 0;
        while (warmUp < warmUpMax) {
            long compiled = jit.getTotalCompilationTime();
            if (wrk != null) {
                wrk.run(16, Duration.ofSeconds(10));
            } else {
                load.run(16, Duration.ofSeconds(1), Duration.ofSeconds(9));
            }
            warmUp += 10;
            if (jit.getTotalCompilationTime() - compiled < 500) { // under 5% of the step spent compiling
                break;
            }
        }
        System.out.printf("%njobgate admission benchmark: %s, %d cores, %d s per step after %d s of warm-up; "
                        + "load from %s%n", pgbench.serverDescription(), Runtime.getRuntime().availableProcessors(),
                seconds, warmUp, wrk != null ? "wrk" : "the JDK HTTP client (install wrk for a lighter load generator)");
        System.out.println("Each job: HTTP POST /v1/jobs -> auth, preset + input validation, pricing, one transaction "
                + "(job + outbox + ledger debit + tenant and global reservations) -> 202.");
        System.out.println("pgbench: the same job, outbox and ledger inserts in one transaction, plain tables, same server.");
        System.out.println("CPU ms/job: the gateway JVM's process CPU time (and PostgreSQL's, when it runs here) over the "
                + "step, per admitted job.");
        System.out.printf("%n%8s %12s %9s %9s %14s %8s %11s %9s%n", "clients", "jobs/s", "p50 ms", "p99 ms", "pgbench tps",
                "ratio", "JVM CPU ms", "PG CPU ms");
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        for (int c : clients) {
            long cpu = os.getProcessCpuTime();
            Long pgTicks = pgbench.serverCpuTicks();
            AdmissionLoad.Result r = wrk != null ? wrk.run(c, Duration.ofSeconds(seconds))
                    : load.run(c, Duration.ofSeconds(2), Duration.ofSeconds(seconds));
            double jvmMs = (os.getProcessCpuTime() - cpu) / 1e6 / Math.max(1, r.requests());
            Long pgTicksAfter = pgbench.serverCpuTicks();
            results.put(c, r);
            Double tps = pgbench.run(c, seconds);
            System.out.printf("%8d %12.0f %9.2f %9.2f %14s %8s %11.3f %9s%n", c, r.perSecond(), r.p50Millis(), r.p99Millis(),
                    tps == null ? "n/a" : String.format("%.0f", tps),
                    tps == null ? "n/a" : String.format("%.2f", r.perSecond() / tps), jvmMs,
                    pgTicks == null || pgTicksAfter == null ? "n/a"
                            : String.format("%.3f", (pgTicksAfter - pgTicks) * 10.0 / Math.max(1, r.requests())));
            if (r.errors() > 0) {
                System.out.printf("%8s %d requests were not 202: %s%n", "", r.errors(), r.firstError());
            }
        }
        return results;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--peers") && (i + 1 == args.length || args[i + 1].startsWith("--"))) {
                opts.put("peers", PeerBench.DEFAULT_PEERS); // a flag, or followed by the peers' names
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                opts.put(args[i].substring(2), args[++i]);
            } else {
                System.err.println("unexpected argument " + args[i] + "; java -jar target/jobgate-bench.jar --help lists the options");
                System.exit(2);
            }
        }
        return opts;
    }

    /**
     * The run's data directory (its objects, broker journal and, without --jdbc-url, its PostgreSQL), gone
     * with the run: a 20,000-job drain leaves about a gigabyte there.
     */
    /** The gateway's jar, as the bench jar's manifest names it ({@code Class-Path: jobgate.jar}, beside it). */
    static Path gatewayJar() throws Exception {
        return Path.of(io.jobgate.App.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** This bench's own classes: its jar, or the class folder of a test run. */
    static Path benchClasses() throws Exception {
        return Path.of(Bench.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /** A bench of processes of their own: their logs stay in {@code dataDir} when it fails (its message names it). */
    private static void inProcesses(Path dataDir, ProcessBench bench) throws Exception {
        bench.run();
        deleteTree(dataDir);
    }

    @FunctionalInterface
    private interface ProcessBench {
        void run() throws Exception;
    }

    private static void deleteTree(Path root) {
        try (java.util.stream.Stream<Path> paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            System.err.println("bench: could not delete " + root + ": " + e.getMessage());
        }
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
