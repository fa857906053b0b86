package io.jobgate.bench;

import java.net.URI;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;

import io.jobgate.common.Digests;

/**
 * {@code bench --only workers}: what external workers of a pull member cost the gateway (docs/workers.md; issue 66:
 * "1,000 idle workers long-polling cost the gateway less than 64 threads and no database connection while idle;
 * 200 busy workers on instant renders reach at least the rate of the in-process path on the same machine"). The
 * gateway runs as a user runs it ({@link GatewayProcesses}) with a pull member of this run declared as a user declares
 * one: a provider file (its worker key's SHA-256, {@code max-concurrency}) and its adapter route, in folders of the run
 * named by {@code jobgate.providers.dirs} and {@code camel.main.routes-include-pattern}.
 *
 * <p><b>Idle</b>: first the gateway at rest for {@code --idle-seconds}, then {@code --idle-workers} workers each
 * long-polling ({@code POST /v1/workers/{member}/leases}, {@code wait_seconds} {@code --wait-seconds}) on a connection
 * of its own and asking again whenever answered, with no task anywhere; once the gateway holds them all (its gauge
 * {@code jobgate_worker_lease_waits}), the same window again. Sampled every 100 ms in each window: the gateway's live
 * threads ({@code /proc/<pid>/status}) and its PostgreSQL connections in use ({@code pg_stat_activity}, state not
 * idle, the bench's own left out); over each window, the statements PostgreSQL ran for it (pg_stat_statements) and
 * how many were the long polls' periodic check. The cost of the held polls is the difference between the windows.
 *
 * <p><b>Busy</b>: {@code --busy-workers} workers (a thread and a kept-alive connection each) lease one task at a time
 * with {@code wait_seconds}, "render" at once (a PNG of exactly the size asked, as the stand-in's) and complete the
 * task with the output as the complete's body (one call; docs/workers.md), while {@code --clients} clients admit {@code --jobs} jobs of {@code --tenants} tenants naming the
 * pull member, closed-loop; the rate is end to end: jobs over first POST to last {@code finalized_at}. Then the
 * workers stop and the same number of jobs goes through the in-process path on the same gateway: the OpenAI adapter
 * against the stand-in answering at once, as {@code sustained} runs it. Each path gets {@code --warm-up} unmeasured jobs
 * first; both providers allow {@code --max-concurrency} (the busy workers' number by default) tasks or calls at once.
 * Nothing is asserted about speed (the targets are printed beside the figures); a job that did not succeed, a refused
 * call or a poll answered with a task while none existed fails the run.
 */
final class ExternalWorkersBench {

    /** The pull member this bench declares. */
    static final String MEMBER = "benchbox";

    private static final Pattern JOB_ID = Pattern.compile("\"job_id\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern TASK_ID = Pattern.compile("\"task_id\"\\s*:\\s*\"([^\"]+)\"");
    static final Pattern OUTPUT_URL = Pattern.compile("\"output_url\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern LEASE_TOKEN = Pattern.compile("\"lease_token\"\\s*:\\s*\"([^\"]+)\"");
    private static final Pattern WIDTH = Pattern.compile("\"width\"\\s*:\\s*(\\d+)");
    private static final Pattern HEIGHT = Pattern.compile("\"height\"\\s*:\\s*(\\d+)");
    private static final Pattern WAITS = Pattern.compile("(?m)^jobgate_worker_lease_waits(?:\\{[^}]*})?\\s+([0-9.eE+-]+)");
    /** Polls answered with a task as it was written here (no lease call of their own). */
    private static final Pattern HANDED = Pattern.compile("(?m)^jobgate_worker_lease_waits_ended_total\\{[^}]*ended=\"handed\"[^}]*}\\s+([0-9.eE+-]+)");
    /** The long polls' periodic check ({@code WorkerTasks.leasableAmong}), as pg_stat_statements normalizes it. */
    private static final String CHECK_STATEMENT = "%FROM worker_tasks WHERE provider = ANY(%";

    private final Path jar;
    private final Path dir;
    private final String java;
    private final int idleWorkers;
    private final int waitSeconds;
    private final int idleSeconds;
    private final int busyWorkers;
    private final int jobs;
    private final int warmUp;
    private final int clients;
    private final int tenants;
    private final int maxConcurrency;
    /** How many of each measured run's costliest statements to print. */
    private final int statements;
    private final String workerKey = "bench-worker-" + UUID.randomUUID();
    private final Map<String, byte[]> pngs = new ConcurrentHashMap<>();

    ExternalWorkersBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.idleWorkers = Integer.parseInt(opts.getOrDefault("idle-workers", "1000"));
        this.waitSeconds = Integer.parseInt(opts.getOrDefault("wait-seconds", "30"));
        this.idleSeconds = Integer.parseInt(opts.getOrDefault("idle-seconds", "16"));
        this.busyWorkers = Integer.parseInt(opts.getOrDefault("busy-workers", "200"));
        this.jobs = Integer.parseInt(opts.getOrDefault("jobs", "2000"));
        this.warmUp = Integer.parseInt(opts.getOrDefault("warm-up", Integer.toString(Math.min(1000, jobs / 2))));
        this.clients = Integer.parseInt(opts.getOrDefault("clients", "16"));
        this.tenants = Integer.parseInt(opts.getOrDefault("tenants", "10"));
        this.maxConcurrency = Integer.parseInt(opts.getOrDefault("max-concurrency", Integer.toString(Math.max(1, busyWorkers))));
        this.statements = Integer.parseInt(opts.getOrDefault("statements", "12"));
    }

    /** One window of the idle phase: what the gateway used meanwhile. */
    private record Window(String what, int threadsMin, int threadsMax, int samples, int samplesWithActive, int samplesWithCheck,
                          int activeMax, int connectionsMax, String activeExample, double seconds, long statements, long checks,
                          Map<String, Long> topStatements, Map<String, Integer> threadsByName) {
    }

    /** One path's measured run. */
    private record Run(String path, int jobs, long succeeded, double seconds, double p50, double p95, double jvmMillisPerJob,
                       double pgMillisPerJob, double otherMillisPerJob, int threadsMax, Admitted admitted) {
        double perSecond() {
            return jobs / seconds;
        }
    }

    void run() throws Exception {
        System.out.printf("%nExternal workers: pull member %s; idle: %d workers long-polling (wait_seconds %d), %d s windows; busy: %d "
                        + "workers on instant renders, %d jobs (after %d of warm-up) admitted by %d clients of %d tenants, beside the "
                        + "in-process path (the OpenAI adapter, stand-in answering at once); max-concurrency %d; Java %d, %d cores%n",
                MEMBER, idleWorkers, waitSeconds, idleSeconds, busyWorkers, jobs, warmUp, clients, tenants, maxConcurrency,
                Runtime.version().feature(), Runtime.getRuntime().availableProcessors());
        Path providers = Files.createDirectories(dir.resolve("workers-config/providers"));
        Path routes = Files.createDirectories(dir.resolve("workers-config/routes"));
        Files.writeString(providers.resolve(MEMBER + ".properties"), """
                # bench --only workers: a pull member (docs/workers.md) whose tasks the bench's workers lease.
                jobgate.provider.%1$s.kinds = image
                jobgate.provider.%1$s.revision = %1$s-1
                jobgate.provider.%1$s.operations = submit,lookup,cancel
                jobgate.provider.%1$s.worker-key-sha256 = %2$s
                jobgate.provider.%1$s.max-concurrency = %3$d
                jobgate.provider.%1$s.call-deadline-ms = 2000
                jobgate.provider.%1$s.price.image-micros = 5000
                jobgate.provider.%1$s.size.square = 1024x1024
                jobgate.provider.%1$s.size.landscape = 1536x1024
                jobgate.provider.%1$s.size.portrait = 1024x1536
                """.formatted(MEMBER, Digests.sha256Hex(workerKey), maxConcurrency));
        Files.writeString(routes.resolve(MEMBER + ".camel.yaml"), """
                # bench --only workers: the pull member's adapter, as docs/workers.md declares one.
                - route:
                    id: provider-%1$s
                    routeConfigurationId: provider-adapter
                    from:
                      uri: direct:provider-%1$s
                      steps:
                        - bean: {ref: pullAdapter, method: adapt}
                """.formatted(MEMBER));
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JOBGATE_PROVIDERS_DIRS", "config/providers," + providers);
        env.put("CAMEL_MAIN_ROUTES_INCLUDE_PATTERN", shippedRoutes() + ",file:" + routes + "/*.camel.yaml");
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, 0);
             Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            parties.startGateway(tenants, 100_000, maxConcurrency, env);
            long pid = parties.gatewayPid();
            try (Statement s = db.createStatement()) {
                s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            }
            List<Window> windows = idle(parties, db, pid);
            List<Run> runs = busy(parties, db, pid);
            print(windows, runs);
        }
    }

    /** The shipped route folders ({@code camel.main.routes-include-pattern} of the settings file), which the member's is added to. */
    private static String shippedRoutes() throws IOException {
        Properties settings = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/application.properties"))) {
            settings.load(r);
        }
        return settings.getProperty("camel.main.routes-include-pattern", "file:routes/*.camel.yaml,file:routes/providers/*.camel.yaml");
    }

    // --- idle ---------------------------------------------------------------------------------------------------

    private List<Window> idle(GatewayProcesses parties, Connection db, long pid) throws Exception {
        List<Window> windows = new ArrayList<>();
        Thread.sleep(2000); // the start's last work (first relay and sweeper rounds) done
        windows.add(window("at rest, no worker", db, pid));

        AtomicLong answered = new AtomicLong();
        AtomicLong withTasks = new AtomicLong();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        List<KeptAliveClient> connections = new ArrayList<>();
        List<Thread> pollers = new ArrayList<>();
        long opened = System.nanoTime();
        for (int i = 0; i < idleWorkers; i++) {
            KeptAliveClient http = new KeptAliveClient("127.0.0.1", parties.port, (waitSeconds + 30) * 1000);
            connections.add(http);
            byte[] body = ("{\"worker_id\": \"idle-" + i + "\", \"max\": 1, \"wait_seconds\": " + waitSeconds + "}")
                    .getBytes(StandardCharsets.UTF_8);
            // A small stack: a thousand threads of the bench's that only wait on their socket.
            Thread t = new Thread(null, () -> {
                while (true) {
                    try {
                        KeptAliveClient.Answer a = http.post("/v1/workers/" + MEMBER + "/leases", workerHeaders(), body);
                        answered.incrementAndGet();
                        if (a.status() != 200) {
                            errors.add(a.status() + " " + a.body());
                            return;
                        }
                        if (TASK_ID.matcher(a.body()).find()) {
                            withTasks.incrementAndGet();
                        }
                    } catch (IOException stopped) {
                        return; // aborted at the window's end (or a broken connection: counted below)
                    }
                }
            }, "idle-worker-" + i, 256 * 1024);
            t.setDaemon(true);
            t.start();
            pollers.add(t);
        }
        long held = awaitWaits(parties, idleWorkers, 60);
        double heldAfter = (System.nanoTime() - opened) / 1e9;
        // The window straddles the moment the first polls' wait runs out: the workers answered then ask again, as
        // idle workers do all along.
        long untilWindow = opened + TimeUnit.SECONDS.toNanos(waitSeconds) - TimeUnit.SECONDS.toNanos(idleSeconds) / 2 - System.nanoTime();
        if (untilWindow > 0) {
            TimeUnit.NANOSECONDS.sleep(untilWindow);
        }
        long answeredBefore = answered.get();
        windows.add(window(idleWorkers + " workers long-polling", db, pid));
        long answeredInWindow = answered.get() - answeredBefore;
        long stillHeld = waits(parties);
        for (KeptAliveClient c : connections) {
            c.abort();
        }
        for (Thread t : pollers) {
            t.join(10_000);
        }
        System.out.printf("  %d polls held %.1f s after the first was sent (gauge jobgate_worker_lease_waits: %d then, %d at the window's end); "
                        + "%d answered in the window (their wait_seconds ran out: asked again), %d polls answered in all%n",
                idleWorkers, heldAfter, held, stillHeld, answeredInWindow, answered.get());
        if (!errors.isEmpty() || withTasks.get() > 0 || held < idleWorkers) {
            throw new IllegalStateException("the idle polls: " + errors.size() + " refused (first: " + errors.peek() + "), "
                    + withTasks.get() + " answered with a task while none existed, " + held + " of " + idleWorkers + " held");
        }
        Thread.sleep(1000); // the server's side of the closed connections goes
        return windows;
    }

    private Map<String, String> workerHeaders() {
        return Map.of("Authorization", "Bearer " + workerKey, "Content-Type", "application/json");
    }

    /** Waits until the gateway holds {@code count} polls (or {@code seconds} pass); returns how many it holds. */
    private static long awaitWaits(GatewayProcesses parties, int count, int seconds) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        long now = waits(parties);
        while (now < count && System.nanoTime() < until) {
            Thread.sleep(200); // the gateway's gauge: nothing to wait on but its metrics
            now = waits(parties);
        }
        return now;
    }

    /** The gateway's gauge {@code jobgate_worker_lease_waits} ({@code /observe/metrics}, loopback). */
    private static long waits(GatewayProcesses parties) throws Exception {
        Matcher m = WAITS.matcher(parties.get("http://127.0.0.1:" + parties.port + "/observe/metrics").body());
        return m.find() ? (long) Double.parseDouble(m.group(1)) : -1;
    }

    /** The gateway's counter of polls answered with a task as it was written ({@code ended="handed"}); 0 before the first. */
    private static long handed(GatewayProcesses parties) throws Exception {
        Matcher m = HANDED.matcher(parties.get("http://127.0.0.1:" + parties.port + "/observe/metrics").body());
        return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
    }

    /** {@link #idleSeconds} of samples every 100 ms: threads, connections in use; the statements run meanwhile. */
    private Window window(String what, Connection db, long pid) throws Exception {
        GatewayProcesses.resetStatements(db);
        int threadsMin = Integer.MAX_VALUE;
        int threadsMax = 0;
        int samples = 0;
        int withActive = 0;
        int activeMax = 0;
        int connectionsMax = 0;
        String example = "";
        long start = System.nanoTime();
        long end = start + TimeUnit.SECONDS.toNanos(idleSeconds);
        int withCheck = 0;
        try (PreparedStatement activity = db.prepareStatement("SELECT count(*) FILTER (WHERE state <> 'idle'), count(*), "
                + "max(left(regexp_replace(query, '\\s+', ' ', 'g'), 120)) FILTER (WHERE state <> 'idle'), "
                + "count(*) FILTER (WHERE state <> 'idle' AND query LIKE '%worker_tasks%') FROM pg_stat_activity "
                + "WHERE backend_type = 'client backend' AND datname = current_database() AND pid <> pg_backend_pid()")) {
            for (long next = start; next < end; next += TimeUnit.MILLISECONDS.toNanos(100)) {
                long sleep = next - System.nanoTime();
                if (sleep > 0) {
                    TimeUnit.NANOSECONDS.sleep(sleep); // the sampling clock
                }
                int threads = threads(pid);
                threadsMin = Math.min(threadsMin, threads);
                threadsMax = Math.max(threadsMax, threads);
                try (ResultSet rs = activity.executeQuery()) {
                    rs.next();
                    int active = rs.getInt(1);
                    connectionsMax = Math.max(connectionsMax, rs.getInt(2));
                    if (active > 0) {
                        withActive++;
                        if (example.isEmpty()) {
                            example = rs.getString(3);
                        }
                    }
                    activeMax = Math.max(activeMax, active);
                    withCheck += rs.getInt(4) > 0 ? 1 : 0;
                }
                samples++;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long statements = 0;
        long checks = 0;
        Map<String, Long> top = new LinkedHashMap<>();
        try (Statement s = db.createStatement();
             ResultSet rs = s.executeQuery("SELECT calls, query LIKE '" + CHECK_STATEMENT + "', regexp_replace(left(query, 110), '\\s+', ' ', 'g') "
                     + "FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY calls DESC")) {
            while (rs.next()) {
                statements += rs.getLong(1);
                checks += rs.getBoolean(2) ? rs.getLong(1) : 0;
                if (top.size() < 6) {
                    top.put(rs.getString(3), rs.getLong(1));
                }
            }
        }
        return new Window(what, threadsMin, threadsMax, samples, withActive, withCheck, activeMax, connectionsMax, example, seconds, statements,
                checks, top, threadsByName(pid));
    }

    /** The gateway's threads by name, numbers left out ({@code jcmd Thread.print}): which pools a window's threads are in. */
    private Map<String, Integer> threadsByName(long pid) throws Exception {
        Process p = new ProcessBuilder(Path.of(java).resolveSibling("jcmd").toString(), Long.toString(pid), "Thread.print")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        Map<String, Integer> byName = new java.util.TreeMap<>();
        Matcher m = Pattern.compile("(?m)^\"([^\"]*)\"").matcher(out);
        while (m.find()) {
            byName.merge(m.group(1).replaceAll("\\d+", "#"), 1, Integer::sum);
        }
        return byName;
    }

    private static int threads(long pid) throws IOException {
        for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (l.startsWith("Threads:")) {
                return Integer.parseInt(l.substring(8).trim());
            }
        }
        return -1;
    }

    // --- busy ---------------------------------------------------------------------------------------------------

    private List<Run> busy(GatewayProcesses parties, Connection db, long pid) throws Exception {
        List<Run> runs = new ArrayList<>();
        String pullJob = AdmissionLoad.BODY.replace("{\"preset_id\"", "{\"provider\": \"" + MEMBER + "\", \"preset_id\"");
        Workers workers = new Workers(parties.port);
        workers.start();
        try {
            if (warmUp > 0) {
                measure(parties, db, pid, "warm-up", pullJob, warmUp, workers);
            }
            parties.startRecording(); // -Djobgate.bench.jfr=FILE: the gateway's profile of the external workers' measured run
            runs.add(measure(parties, db, pid, busyWorkers + " external workers (" + MEMBER + ")", pullJob, jobs, workers));
            parties.stopRecording();
        } finally {
            workers.stop();
        }
        System.out.printf("  the workers in all: %d lease calls, %d answered with no task, %d tasks completed, %d refused calls%s%n",
                workers.leaseCalls.get(), workers.empty.get(), workers.completed.get(), workers.errors.size(),
                workers.errors.isEmpty() ? "" : " (first: " + workers.errors.peek() + ")");
        if (!workers.errors.isEmpty()) {
            throw new IllegalStateException("the workers' calls were refused " + workers.errors.size() + " times; first: " + workers.errors.peek());
        }
        Thread.sleep(1000); // the closed polls gone
        if (warmUp > 0) {
            measure(parties, db, pid, "warm-up", GatewayProcesses.IMAGE_JOB, warmUp, null);
        }
        runs.add(measure(parties, db, pid, "in-process (openai adapter, stand-in)", GatewayProcesses.IMAGE_JOB, jobs, null));
        return runs;
    }

    /** Admits {@code count} jobs of {@code body} closed-loop and waits for them all to be final; the figures of the run. */
    private Run measure(GatewayProcesses parties, Connection db, long pid, String path, String body, int count, Workers workers)
            throws Exception {
        System.out.printf("  %s: %d jobs%n", path, count);
        long cpuBefore = GatewayProcesses.cpuMillis(pid);
        long pgBefore = parties.postgresCpuMillis();
        // The other side of the path, on the same cores: the bench's workers (this process) or the stand-in.
        long otherBefore = workers != null ? GatewayProcesses.cpuMillis(ProcessHandle.current().pid()) : GatewayProcesses.cpuMillis(parties.providerPid());
        AtomicInteger threadsMax = new AtomicInteger();
        Thread sampler = new Thread(() -> {
            try {
                while (!Thread.currentThread().isInterrupted()) {
                    threadsMax.accumulateAndGet(threads(pid), Math::max);
                    Thread.sleep(200);
                }
            } catch (InterruptedException | IOException | RuntimeException done) {
                // the run ended
            }
        }, "workers-threads");
        sampler.setDaemon(true);
        sampler.start();
        boolean measured = !path.equals("warm-up");
        long leasesBefore = workers == null ? 0 : workers.leaseCalls.get();
        long emptyBefore = workers == null ? 0 : workers.empty.get();
        long handedBefore = workers == null ? 0 : handed(parties);
        if (measured) {
            GatewayProcesses.resetStatements(db); // the statements printed are the measured run's
        }
        long first = System.currentTimeMillis();
        Admitted admitted = admit(parties, body, count);
        List<String> ids = admitted.ids();
        long[] done = waitForFinal(db, ids);
        sampler.interrupt();
        long cpu = GatewayProcesses.cpuMillis(pid) - cpuBefore;
        long pg = parties.postgresCpuMillis() - pgBefore;
        long other = (workers != null ? GatewayProcesses.cpuMillis(ProcessHandle.current().pid()) : GatewayProcesses.cpuMillis(parties.providerPid()))
                - otherBefore;
        double seconds = (done[1] - first) / 1000.0;
        double[] toFinal = accepToFinal(db, ids);
        Run run = new Run(path, count, done[0], seconds, toFinal[0], toFinal[1], cpu / (double) count, pg / (double) count,
                other / (double) count, threadsMax.get(), admitted);
        System.out.printf("    %.1f s, %.1f jobs/s, %d succeeded; accept -> final p50 %.2f s, p95 %.2f s; all accepted after %.1f s "
                        + "(POST p99 %.0f ms, %d answered 429/503)%n", seconds, run.perSecond(), done[0], toFinal[0], toFinal[1],
                admitted.lastAcceptedSeconds(), admitted.p99Millis(), admitted.refused());
        if (workers != null) {
            System.out.printf("    the workers' lease calls: %.2f a job, %.2f of them answered with no task (another worker took it first), "
                            + "%.2f answered with a task as it was written (no lease of their own)%n",
                    (workers.leaseCalls.get() - leasesBefore) / (double) count, (workers.empty.get() - emptyBefore) / (double) count,
                    (handed(parties) - handedBefore) / (double) count);
        }
        if (measured) {
            GatewayProcesses.printStatements(db, count, statements);
        }
        if (done[0] != count) {
            throw new IllegalStateException((count - done[0]) + " of " + count + " jobs did not succeed (" + path + "); logs in " + dir);
        }
        return run;
    }

    /** How admission went: when the last job was accepted (s after the first POST), POST p99 (ms), 429/503 answers. */
    private record Admitted(List<String> ids, double lastAcceptedSeconds, double p99Millis, long refused) {
    }

    /** {@code count} jobs posted by {@link #clients} clients on kept-alive connections, a 429/503 retried after its Retry-After. */
    private Admitted admit(GatewayProcesses parties, String body, int count) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        AtomicInteger next = new AtomicInteger();
        AtomicLong refused = new AtomicLong();
        AtomicLong lastAccepted = new AtomicLong();
        ConcurrentLinkedQueue<Long> postMillis = new ConcurrentLinkedQueue<>();
        long first = System.nanoTime();
        ConcurrentLinkedQueue<String> ids = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        Thread[] senders = new Thread[clients];
        for (int c = 0; c < clients; c++) {
            senders[c] = new Thread(() -> {
                try (KeptAliveClient http = new KeptAliveClient("127.0.0.1", parties.port, 60_000)) {
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        Map<String, String> headers = parties.postHeaders(i);
                        try {
                            for (int tries = 0; ; tries++) {
                                long sent = System.nanoTime();
                                KeptAliveClient.Answer r = http.post("/v1/jobs", headers, bytes);
                                postMillis.add((System.nanoTime() - sent) / 1_000_000);
                                Matcher id = JOB_ID.matcher(r.body());
                                if (r.status() == 202 && id.find()) {
                                    ids.add(id.group(1));
                                    lastAccepted.accumulateAndGet(System.nanoTime() - first, Math::max);
                                    break;
                                }
                                refused.incrementAndGet();
                                if ((r.status() != 429 && r.status() != 503) || tries >= 100) {
                                    throw new IllegalStateException("admission answered " + r.status() + ": " + r.body());
                                }
                                Thread.sleep(TimeUnit.SECONDS.toMillis(Math.max(1, Long.parseLong(r.headers().getOrDefault("retry-after", "1")))));
                            }
                        } catch (Exception e) {
                            errors.add(e.toString());
                        }
                    }
                }
            }, "workers-admission-" + c);
            senders[c].start();
        }
        for (Thread t : senders) {
            t.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException(errors.size() + " jobs not accepted, first: " + errors.peek());
        }
        double[] sorted = postMillis.stream().mapToDouble(Long::doubleValue).sorted().toArray();
        return new Admitted(new ArrayList<>(ids), lastAccepted.get() / 1e9, SustainedBench.percentile(sorted, 0, 0.99), refused.get());
    }

    /**
     * Waits until every job of {@code ids} is final; @return {@code [succeeded, epoch ms of the last finalized_at]}. The
     * database is asked twice a second, for the run's open jobs by their ids.
     */
    private long[] waitForFinal(Connection db, List<String> ids) throws Exception {
        long lastProgress = System.nanoTime();
        long lastOpen = -1;
        try (PreparedStatement open = db.prepareStatement("SELECT count(*) FROM jobs WHERE job_id = ANY(?) AND finalized_at IS NULL")) {
            Array array = db.createArrayOf("uuid", ids.stream().map(UUID::fromString).toArray());
            open.setArray(1, array);
            while (true) {
                long n;
                try (ResultSet rs = open.executeQuery()) {
                    rs.next();
                    n = rs.getLong(1);
                }
                if (n == 0) {
                    break;
                }
                if (n != lastOpen) {
                    lastOpen = n;
                    lastProgress = System.nanoTime();
                }
                if (System.nanoTime() - lastProgress > TimeUnit.SECONDS.toNanos(120)) {
                    throw new IllegalStateException("stalled: " + lastOpen + " of " + ids.size() + " jobs not final; logs in " + dir);
                }
                Thread.sleep(500); // another process's progress: nothing to wait on but the database
            }
            try (PreparedStatement s = db.prepareStatement("SELECT count(*) FILTER (WHERE status = 'succeeded'), "
                    + "(extract(epoch FROM max(finalized_at)) * 1000)::bigint FROM jobs WHERE job_id = ANY(?)")) {
                s.setArray(1, array);
                try (ResultSet rs = s.executeQuery()) {
                    rs.next();
                    return new long[] {rs.getLong(1), rs.getLong(2)};
                }
            }
        }
    }

    /** accept -> final p50 and p95 of the jobs, in seconds (created_at to finalized_at). */
    private static double[] accepToFinal(Connection db, List<String> ids) throws Exception {
        try (PreparedStatement s = db.prepareStatement("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), "
                + "percentile_cont(0.95) WITHIN GROUP (ORDER BY d) FROM (SELECT extract(epoch FROM finalized_at - created_at) AS d "
                + "FROM jobs WHERE job_id = ANY(?)) t")) {
            s.setArray(1, db.createArrayOf("uuid", ids.stream().map(UUID::fromString).toArray()));
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return new double[] {rs.getDouble(1), rs.getDouble(2)};
            }
        }
    }

    /** A PNG of exactly {@code width} x {@code height}, black, as the stand-in answers (made once per size). */
    private byte[] png(int width, int height) {
        return pngs.computeIfAbsent(width + "x" + height, k -> {
            try {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                ImageIO.write(new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB), "png", out);
                return out.toByteArray();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    /** The busy workers: each a thread on its own kept-alive connection, one task at a time. */
    private final class Workers {
        final int port;
        final List<Thread> threads = new ArrayList<>();
        final List<KeptAliveClient> connections = new java.util.concurrent.CopyOnWriteArrayList<>();
        final AtomicLong leaseCalls = new AtomicLong();
        final AtomicLong empty = new AtomicLong();
        final AtomicLong completed = new AtomicLong();
        final ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        volatile boolean stopping;

        Workers(int port) {
            this.port = port;
        }

        void start() {
            png(1024, 1536); // the portrait size the jobs ask for, made before the clock runs
            for (int i = 0; i < busyWorkers; i++) {
                KeptAliveClient http = new KeptAliveClient("127.0.0.1", port, (waitSeconds + 30) * 1000);
                connections.add(http);
                byte[] poll = ("{\"worker_id\": \"busy-" + i + "\", \"max\": 1, \"wait_seconds\": " + waitSeconds + "}")
                        .getBytes(StandardCharsets.UTF_8);
                Thread t = new Thread(null, () -> work(http, poll), "busy-worker-" + i, 256 * 1024);
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }

        private void work(KeptAliveClient http, byte[] poll) {
            Map<String, String> json = workerHeaders();
            while (!stopping) {
                try {
                    KeptAliveClient.Answer leased = http.post("/v1/workers/" + MEMBER + "/leases", json, poll);
                    leaseCalls.incrementAndGet();
                    if (leased.status() != 200) {
                        errors.add("lease " + leased.status() + " " + leased.body());
                        Thread.sleep(100); // a refused lease: not in a loop as fast as the gateway answers
                        continue;
                    }
                    Matcher task = TASK_ID.matcher(leased.body());
                    if (!task.find()) {
                        empty.incrementAndGet();
                        continue;
                    }
                    Matcher token = LEASE_TOKEN.matcher(leased.body());
                    Matcher width = WIDTH.matcher(leased.body());
                    Matcher height = HEIGHT.matcher(leased.body());
                    if (!token.find() || !width.find() || !height.find()) {
                        errors.add("a lease without token or size: " + leased.body());
                        continue;
                    }
                    String path = "/v1/workers/tasks/" + task.group(1);
                    byte[] output = png(Integer.parseInt(width.group(1)), Integer.parseInt(height.group(1)));
                    // The output as the complete's own body (header Lease-Token): one call, as a worker of small outputs
                    // sends them; a large one goes to the lease's output_url first.
                    if (!OUTPUT_URL.matcher(leased.body()).find()) {
                        errors.add("a lease without output_url: " + leased.body());
                        continue;
                    }
                    Map<String, String> carrying = new LinkedHashMap<>(json);
                    carrying.put("Content-Type", "image/png");
                    carrying.put("Lease-Token", token.group(1));
                    KeptAliveClient.Answer completeAnswer = http.post(path + "/complete", carrying, output);
                    if (completeAnswer.status() != 200) {
                        errors.add("complete " + completeAnswer.status() + " " + completeAnswer.body());
                        continue;
                    }
                    completed.incrementAndGet();
                } catch (IOException e) {
                    if (!stopping) {
                        errors.add(e.toString());
                    }
                    return;
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        void stop() throws InterruptedException {
            stopping = true;
            connections.forEach(KeptAliveClient::abort); // their long polls end now, not at their wait_seconds
            for (Thread t : threads) {
                t.join(10_000);
            }
        }
    }

    // --- the table ----------------------------------------------------------------------------------------------

    private void print(List<Window> windows, List<Run> runs) {
        System.out.printf("%n| idle, %d s windows, sampled every 100 ms | gateway threads min-max | samples with a DB connection in use "
                + "(the polls' check's) | most in use at once (open) | statements/s (the polls' check) |%n| --- | --- | --- | --- | --- |%n", idleSeconds);
        for (Window w : windows) {
            System.out.printf("| %s | %d-%d | %d of %d (%d) | %d (%d) | %.1f (%.1f) |%n", w.what(), w.threadsMin(), w.threadsMax(),
                    w.samplesWithActive(), w.samples(), w.samplesWithCheck(), w.activeMax(), w.connectionsMax(),
                    w.statements() / w.seconds(), w.checks() / w.seconds());
        }
        Window rest = windows.get(0);
        Window held = windows.get(1);
        Map<String, Integer> grew = new java.util.TreeMap<>();
        held.threadsByName().forEach((name, n) -> grew.put(name, n - rest.threadsByName().getOrDefault(name, 0)));
        rest.threadsByName().forEach((name, n) -> grew.putIfAbsent(name, -n));
        grew.values().removeIf(n -> n == 0);
        int broker = grew.entrySet().stream().filter(e -> e.getKey().contains("activemq")).mapToInt(Map.Entry::getValue).sum();
        int threadCost = held.threadsMax() - rest.threadsMax();
        System.out.printf("%n  %d held polls: %+d gateway threads (most against most; target under 64), %+d outside the embedded broker's "
                        + "pools, which grow and shrink on their own; by name, at each window's end (jcmd Thread.print): %s%n",
                idleWorkers, threadCost, threadCost - broker, grew);
        System.out.printf("  DB connections in use while they were held: %d of %d samples, %d of them the polls' periodic check (at rest %d of "
                        + "%d: the gateway's own rounds); target none held by the polls; statements %+.1f/s over rest, the check %.1f/s "
                        + "(one per jobgate.workers.lease-waits-period-ms while anyone waits)%n",
                held.samplesWithActive(), held.samples(), held.samplesWithCheck(), rest.samplesWithActive(), rest.samples(),
                held.statements() / held.seconds() - rest.statements() / rest.seconds(), held.checks() / held.seconds());
        for (Window w : windows) {
            if (!w.activeExample().isEmpty()) {
                System.out.printf("  a connection in use %s: %s%n", w.what(), w.activeExample());
            }
            System.out.printf("  statements %s, most called: %s%n", w.what(), w.topStatements().entrySet().stream()
                    .map(e -> String.format("%.1f/s %s", e.getValue() / w.seconds(), e.getKey())).toList());
        }
        System.out.printf("%n| busy path | jobs | s | jobs/s | all accepted after s | accept -> final p50 / p95 s | gateway JVM ms/job | "
                + "PG ms/job | workers' or stand-in's ms/job | gateway threads max |%n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |%n");
        for (Run r : runs) {
            System.out.printf("| %s | %d | %.1f | %.1f | %.1f | %.2f / %.2f | %.2f | %.2f | %.2f | %d |%n", r.path(), r.jobs(), r.seconds(),
                    r.perSecond(), r.admitted().lastAcceptedSeconds(), r.p50(), r.p95(), r.jvmMillisPerJob(), r.pgMillisPerJob(),
                    r.otherMillisPerJob(), r.threadsMax());
        }
        if (runs.size() == 2) {
            System.out.printf("%n  external workers / in-process: %.2fx (target at least 1.0x)%n", runs.get(0).perSecond() / runs.get(1).perSecond());
        }
    }
}
