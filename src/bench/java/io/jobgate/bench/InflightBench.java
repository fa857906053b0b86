package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;


/**
 * {@code bench --only inflight}: how many calls one gateway keeps in flight against a slow provider,
 * at what rate, in how much memory, and what the API answers meanwhile, beside JobRunr doing the same
 * calls. Each party runs as its own process, as a user would run it, so its memory and threads are its
 * own: a stand-in of OpenAI's Images API answering after {@code --latency-seconds} ({@link SlowProvider}),
 * the gateway ({@code java -jar jobgate.jar} on embedded defaults, the database on a PostgreSQL this
 * command starts), and JobRunr ({@code target/bench-peers}) on the same PostgreSQL and stand-in.
 *
 * <p>The gateway gets only the settings a user raises after reading docs/settings.md: the OpenAI
 * provider's {@code max-concurrency} (= {@code --inflight}) and base URL, and tenants whose
 * {@code max_running_jobs} allows it. {@code --jobs} image jobs (default 3 × in-flight) are posted by
 * {@code --clients} HTTP clients over {@code --tenants} tenants; a 429 is retried after its Retry-After.
 * The rate is end to end, as JobRunr's: jobs over the time from the first POST to the last job final,
 * against the ideal in-flight / latency.
 */
final class InflightBench {

    private static final Pattern JOB_ID = Pattern.compile("\"job_id\"\\s*:\\s*\"([^\"]+)\"");

    private final Path jar;
    private final Path dir;
    private final String java;
    private final long latencyMillis;
    private final int inflight;
    private final int jobs;
    private final int tenants;
    private final int clients;

    InflightBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.latencyMillis = Math.round(Double.parseDouble(opts.getOrDefault("latency-seconds", "30")) * 1000);
        this.inflight = Integer.parseInt(opts.getOrDefault("inflight", "2000"));
        this.jobs = Integer.parseInt(opts.getOrDefault("jobs", Integer.toString(3 * inflight)));
        this.tenants = Integer.parseInt(opts.getOrDefault("tenants", "10"));
        this.clients = Integer.parseInt(opts.getOrDefault("clients", "16"));
        this.warmUp = Integer.parseInt(opts.getOrDefault("warm-up", Integer.toString(inflight)));
    }

    /**
     * Jobs run first, unmeasured, against the stand-in answering after {@link #WARM_UP_LATENCY_MS}: a gateway
     * (or JobRunr) that has run for a while, its code compiled by the JIT, as users meet it after its first
     * minutes. The same for both parties; {@code --warm-up 0} measures a fresh JVM.
     */
    private final int warmUp;
    static final long WARM_UP_LATENCY_MS = 200;

    /** One party's figures. */
    record Figures(String name, int mostInFlight, double seconds, int succeeded, long droppedAnswers, int maxThreads,
                   long maxRssMib, double apiP50, double apiP99, long apiSamples, double cpuMsPerJob, double pgCpuMsPerJob,
                   String note) {
        double rate(int jobs) {
            return jobs / seconds;
        }
    }

    void run(boolean withJobRunr) throws Exception {
        double ideal = inflight * 1000.0 / latencyMillis;
        System.out.printf("%nCalls in flight: %,d image jobs over %d tenants from %d HTTP clients against a stand-in of OpenAI's "
                        + "Images API answering after %.1f s; target %,d calls in flight (ideal rate %.1f jobs/s); %s, %d cores%n",
                jobs, tenants, clients, latencyMillis / 1000.0, inflight, ideal, javaVersion(), Runtime.getRuntime().availableProcessors());
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, latencyMillis)) {
            List<Figures> all = new ArrayList<>(List.of(gateway(parties)));
            parties.stopGateway();
            if (withJobRunr) {
                all.add(jobRunr(parties));
            }
            print(all, ideal);
        }
    }

    private Figures gateway(GatewayProcesses parties) throws Exception {
        // Only what a user raises: the provider's max-concurrency and the tenants' caps.
        parties.startGateway(tenants, inflight, inflight, Map.of());
        String providerUrl = parties.providerUrl;
        if (warmUp > 0) {
            parties.get(providerUrl + "/latency?ms=" + WARM_UP_LATENCY_MS);
            long warmStart = System.currentTimeMillis();
            send(parties, warmUp, new AtomicLong());
            try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                waitForFinal(db, parties.tenantPattern(), warmStart, warmUp);
            }
            System.out.printf("  jobgate: %,d warm-up jobs (calls of %d ms) in %.1f s, unmeasured%n", warmUp, WARM_UP_LATENCY_MS,
                    (System.currentTimeMillis() - warmStart) / 1000.0);
            parties.get(providerUrl + "/latency?ms=" + latencyMillis);
            Thread.sleep(1000); // the last warm-up's rows written after its finalized_at: apart from the measured jobs' created_at
        }
        parties.get(providerUrl + "/reset");
        Sampler sampler = new Sampler(parties, parties.gatewayPid());
        ApiProbe probe = new ApiProbe(parties, sampler);
        sampler.start();
        long cpuBefore = GatewayProcesses.cpuMillis(parties.gatewayPid());
        long pgBefore = parties.postgresCpuMillis();
        long first = System.currentTimeMillis();
        AtomicLong refused = new AtomicLong();
        probe.start();
        send(parties, jobs, refused);
        long lastAccepted = System.currentTimeMillis();
        try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            long[] done = waitForFinal(db, parties.tenantPattern(), first, jobs);
            double cpu = (GatewayProcesses.cpuMillis(parties.gatewayPid()) - cpuBefore) / (double) jobs;
            double pgCpu = (parties.postgresCpuMillis() - pgBefore) / (double) jobs;
            sampler.interrupt();
            probe.interrupt();
            String ofRun = "FROM attempts a JOIN jobs j ON j.job_id = a.job_id WHERE j.tenant_id LIKE '" + parties.tenantPattern()
                    + "' AND j.created_at >= to_timestamp(" + first / 1000.0 + ")";
            long dropped = count(db, "SELECT count(*) " + ofRun + " AND a.outcome = 'lease_lost' AND a.http_status = 200");
            long attempts = count(db, "SELECT count(*) " + ofRun);
            double seconds = (done[1] - first) / 1000.0;
            double[] api = probe.percentiles();
            return new Figures("jobgate (" + javaVersion() + ")", sampler.mostHeld, seconds, (int) done[0], dropped,
                    sampler.maxThreads, sampler.maxRssKib / 1024, api[0], api[1], probe.samples(), cpu, pgCpu,
                    String.format("admitted in %.1f s (%d answered 429 and retried), %d attempts for %d jobs, %d dispatches found the "
                                    + "provider full, the stand-in: %s", (lastAccepted - first) / 1000.0, refused.get(), attempts, jobs,
                            parties.logLines("gateway", "at its concurrency limit"), parties.get(providerUrl + "/stats").body()));
        }
    }

    /** Sends {@code count} jobs from {@link #clients} threads, each retried after a 429/503's Retry-After. */
    private void send(GatewayProcesses parties, int count, AtomicLong refused) throws Exception {
        Thread[] senders = new Thread[clients];
        AtomicInteger next = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        for (int c = 0; c < clients; c++) {
            senders[c] = new Thread(() -> {
                for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                    try {
                        post(parties, i, refused);
                    } catch (Exception e) {
                        errors.add(e.toString());
                    }
                }
            }, "inflight-sender-" + c);
            senders[c].start();
        }
        for (Thread t : senders) {
            t.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException(errors.size() + " jobs not accepted, first: " + errors.peek());
        }
    }

    /** {@code [succeeded, epoch ms of the last finalized_at]} once the {@code expected} jobs created since {@code since} are final. */
    private long[] waitForFinal(Connection db, String tenantPattern, long since, int expected) throws Exception {
        long lastProgress = System.nanoTime();
        long lastFinal = -1;
        while (true) {
            try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*) FILTER (WHERE finalized_at IS NOT NULL), "
                    + "count(*) FILTER (WHERE status = 'succeeded'), (extract(epoch FROM max(finalized_at)) * 1000)::bigint "
                    + "FROM jobs WHERE tenant_id LIKE '" + tenantPattern + "' AND created_at >= to_timestamp(" + since / 1000.0 + ")")) {
                rs.next();
                long finals = rs.getLong(1);
                if (finals == expected) {
                    return new long[] {rs.getLong(2), rs.getLong(3)};
                }
                if (finals != lastFinal) {
                    lastFinal = finals;
                    lastProgress = System.nanoTime();
                } else if (System.nanoTime() - lastProgress > TimeUnit.MILLISECONDS.toNanos(3 * latencyMillis + 120_000)) {
                    throw new IllegalStateException("stalled: " + finals + " of " + expected + " jobs final; logs in " + dir);
                }
            }
            Thread.sleep(100); // another process's progress: nothing to wait on but the database
        }
    }

    private static void post(GatewayProcesses parties, int i, AtomicLong refused) throws Exception {
        HttpRequest request = parties.post(i);
        for (int tries = 0; tries < 100; tries++) {
            HttpResponse<String> r = parties.http.send(request, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 202 && JOB_ID.matcher(r.body()).find()) {
                return;
            }
            if (r.statusCode() != 429 && r.statusCode() != 503) {
                throw new IllegalStateException("admission answered " + r.statusCode() + ": " + r.body());
            }
            refused.incrementAndGet();
            long wait = r.headers().firstValue("Retry-After").map(Long::parseLong).orElse(1L);
            Thread.sleep(TimeUnit.SECONDS.toMillis(Math.max(1, wait))); // what the Retry-After asks of a client
        }
        throw new IllegalStateException("admission refused 100 times");
    }

    private Figures jobRunr(GatewayProcesses parties) throws Exception {
        String jdbcUrl = parties.jdbcUrl();
        String providerUrl = parties.providerUrl;
        Path peers = PeerBench.defaultDir();
        if (!Files.isDirectory(peers.resolve("classes"))) {
            throw new IllegalStateException("JobRunr's runner is built into " + peers + " by `mvn package`");
        }
        parties.get(providerUrl + "/reset");
        // The same user and no password: the URL carries them (zonky's form).
        Matcher user = Pattern.compile("user=([^&]+)").matcher(jdbcUrl);
        String bare = jdbcUrl.replaceAll("\\?.*$", "");
        Process peer = parties.start("jobrunr", List.of("-cp", peers.resolve("classes") + ":" + peers.resolve("lib") + "/*",
                "io.jobgate.benchpeers.JobRunrSlowCallsPeer", bare, user.find() ? user.group(1) : "postgres", "",
                "jobgate_peer_jobrunr_inflight", providerUrl, Integer.toString(jobs), Integer.toString(inflight),
                Long.toString(Math.max(600, jobs / Math.max(1, inflight) * latencyMillis / 1000 * 4)),
                Integer.toString(warmUp), Long.toString(WARM_UP_LATENCY_MS), Long.toString(latencyMillis)), Map.of());
        while (parties.logLines("jobrunr", "WARMED-UP") == 0 && peer.isAlive()) {
            Thread.sleep(50); // its warm-up is its own process's: its log says when it is over
        }
        Sampler sampler = new Sampler(parties, -1);
        sampler.start();
        long pgBefore = parties.postgresCpuMillis();
        if (!peer.waitFor(2, TimeUnit.HOURS) || peer.exitValue() != 0) {
            throw new IllegalStateException("JobRunr's run failed; see " + dir.resolve("jobrunr.log"));
        }
        sampler.interrupt();
        double pgCpu = (parties.postgresCpuMillis() - pgBefore) / (double) jobs;
        String result = Files.readAllLines(dir.resolve("jobrunr.log")).stream().filter(l -> l.startsWith("RESULT "))
                .findFirst().orElseThrow(() -> new IllegalStateException("JobRunr printed no result; see " + dir.resolve("jobrunr.log")));
        Map<String, String> f = new LinkedHashMap<>();
        for (String kv : result.substring(7).split(" ")) {
            f.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        return new Figures(f.get("name") + " (" + f.get("threads-type") + " threads, " + javaVersion() + ")", sampler.mostHeld,
                Double.parseDouble(f.get("seconds")), jobs, 0, Integer.parseInt(f.get("max-threads")),
                Long.parseLong(f.get("max-rss-mib")), Double.NaN, Double.NaN, 0,
                Double.parseDouble(f.get("cpu-ms")) / jobs, pgCpu,
                String.format("enqueued in %s s, %s failed calls retried by JobRunr", f.get("enqueue-seconds"), f.get("failed-calls")));
    }

    private void print(List<Figures> all, double ideal) {
        System.out.printf("%n  %-44s %10s %9s %8s %10s %9s %8s %9s %20s %16s%n", "", "in flight", "seconds", "jobs/s", "× ideal",
                "succeeded", "threads", "RSS MiB", "API p50/p99 ms", "CPU ms/job (PG)");
        for (Figures f : all) {
            System.out.printf("  %-44s %,10d %9.1f %8.1f %10.2f %,9d %8d %9d %20s %16s%n", f.name(), f.mostInFlight(), f.seconds(),
                    f.rate(jobs), f.rate(jobs) / ideal, f.succeeded(), f.maxThreads(), f.maxRssMib(),
                    Double.isNaN(f.apiP99()) ? "n/a" : String.format("%.1f / %.1f (%d)", f.apiP50(), f.apiP99(), f.apiSamples()),
                    String.format("%.1f (%.1f)", f.cpuMsPerJob(), f.pgCpuMsPerJob()));
        }
        for (Figures f : all) {
            System.out.printf("  %s: %s%s%n", f.name(), f.note(), f.name().startsWith("jobgate")
                    ? String.format("; answered calls dropped (lease_lost with HTTP 200): %d", f.droppedAnswers()) : "");
        }
        System.out.println("  in flight: the most calls the stand-in held at once; seconds: first POST (JobRunr: first enqueue) to the "
                + "last job final; threads and RSS: the most seen in the process (sampled every 200 ms); API: a tenant's GET /v1/jobs "
                + "while at least 90 % of the target was in flight (count)");
    }

    private static long count(Connection db, String sql) throws Exception {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String javaVersion() {
        return "Java " + Runtime.version().feature();
    }

    /** The stand-in's calls held (the most seen), and a process's threads and resident set, every 200 ms. */
    private final class Sampler extends Thread {
        private final long pid;
        private final GatewayProcesses parties;
        volatile int mostHeld;
        volatile int heldNow;
        volatile int maxThreads;
        volatile long maxRssKib;

        Sampler(GatewayProcesses parties, long pid) {
            super("inflight-sampler");
            setDaemon(true);
            this.pid = pid;
            this.parties = parties;
        }

        @Override
        public void run() {
            Pattern most = Pattern.compile("\"most\": (\\d+)");
            Pattern holding = Pattern.compile("\"holding\": (\\d+)");
            while (!isInterrupted()) {
                try {
                    String stats = parties.get(parties.providerUrl + "/stats").body();
                    Matcher m = most.matcher(stats);
                    if (m.find()) {
                        mostHeld = Math.max(mostHeld, Integer.parseInt(m.group(1)));
                    }
                    Matcher h = holding.matcher(stats);
                    if (h.find()) {
                        heldNow = Integer.parseInt(h.group(1));
                    }
                    if (pid > 0) {
                        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                            if (line.startsWith("VmRSS:")) {
                                maxRssKib = Math.max(maxRssKib, Long.parseLong(line.replaceAll("\\D", "")));
                            } else if (line.startsWith("Threads:")) {
                                maxThreads = Math.max(maxThreads, Integer.parseInt(line.replaceAll("\\D", "")));
                            }
                        }
                    }
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // a sample missed (the process ending): the next one counts
                }
            }
        }
    }

    /** A tenant listing its jobs, 20 times a second, timed while at least 90 % of the target is in flight. */
    private final class ApiProbe extends Thread {
        private final HttpRequest list;
        private final HttpClient http;
        private final Sampler sampler;
        private final List<Double> millis = new ArrayList<>();

        ApiProbe(GatewayProcesses parties, Sampler sampler) {
            super("inflight-api-probe");
            setDaemon(true);
            this.http = parties.http;
            this.list = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + parties.port + "/v1/jobs?limit=20"))
                    .header("Authorization", "Bearer " + parties.keys.get(0)).timeout(Duration.ofSeconds(30)).build();
            this.sampler = sampler;
        }

        @Override
        public void run() {
            while (!isInterrupted()) {
                try {
                    long t0 = System.nanoTime();
                    HttpResponse<Void> r = http.send(list, HttpResponse.BodyHandlers.discarding());
                    double ms = (System.nanoTime() - t0) / 1e6;
                    if (r.statusCode() == 200 && sampler.heldNow >= 0.9 * inflight) {
                        synchronized (millis) {
                            millis.add(ms);
                        }
                    }
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // counted as missing; the figures say how many were taken
                }
            }
        }

        long samples() {
            synchronized (millis) {
                return millis.size();
            }
        }

        double[] percentiles() {
            synchronized (millis) {
                if (millis.isEmpty()) {
                    return new double[] {Double.NaN, Double.NaN};
                }
                double[] sorted = millis.stream().mapToDouble(Double::doubleValue).toArray();
                Arrays.sort(sorted);
                return new double[] {sorted[sorted.length / 2], sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * 0.99) - 1)]};
            }
        }
    }
}
