package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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

    private static final Pattern ANSWERED = Pattern.compile("\"answered\"\\s*:\\s*(\\d+)");
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
        this.warmUpRound = Integer.parseInt(opts.getOrDefault("warm-up", Integer.toString(Math.max(400, inflight))));
        this.warmUpRounds = Math.max(1, Integer.parseInt(opts.getOrDefault("warm-up-rounds", Integer.toString(MAX_WARM_UP_ROUNDS))));
        this.peerUnbounded = opts.containsKey("peer-unbounded");
        this.repeat = Integer.parseInt(opts.getOrDefault("repeat", "1"));
    }

    /** {@code --peer-unbounded}: JobRunr also without the provider's limit (its workers do not bound its calls). */
    private final boolean peerUnbounded;

    /**
     * Jobs run first, unmeasured, against the stand-in answering after {@link #WARM_UP_LATENCY_MS}: a gateway
     * (or JobRunr) that has run for a while, its code compiled by the JIT, as users meet it after its first
     * minutes. Rounds of {@code --warm-up} jobs run until the gateway's JIT spent less than
     * {@link #QUIET_JIT} of a round compiling (its {@code TotalCompilationTime}, read over Jolokia), at most
     * {@link #MAX_WARM_UP_ROUNDS} ({@code --warm-up-rounds}: fewer, for a run that checks the command, not the figures), each
     * followed by a pause until the compilers are done: a single round of 400
     * jobs left the C2 compiler busy through the measured run's first seconds (several seconds of compilations
     * over 100 ms each in a flight recording), so the figure was the JIT's as much as the gateway's. JobRunr runs as many warm-up jobs as the gateway needed;
     * {@code --warm-up 0} measures fresh JVMs.
     */
    private final int warmUpRound;
    private final int warmUpRounds;
    private int warmedUpJobs;
    static final long WARM_UP_LATENCY_MS = 200;
    static final double QUIET_JIT = 0.05;
    static final int MAX_WARM_UP_ROUNDS = 10;

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
                        + "Images API answering after %.1f s; target %,d calls in flight (ideal rate %.1f jobs/s); %s, %d cores%s%n",
                jobs, tenants, clients, latencyMillis / 1000.0, inflight, ideal, javaVersion(), Runtime.getRuntime().availableProcessors(),
                repeat > 1 ? String.format("; %d rounds, the parties taking turns", repeat) : "");
        List<Figures> all = new ArrayList<>();
        for (int round = 1; round <= repeat; round++) {
            if (repeat > 1) {
                System.out.printf("%n  round %d of %d%n", round, repeat);
            }
            // Each round on a PostgreSQL and a stand-in of its own: no round inherits another's history or connections.
            roundDir = repeat > 1 ? Files.createDirectories(dir.resolve("round-" + round)) : dir;
            try (GatewayProcesses parties = new GatewayProcesses(jar, roundDir, java, latencyMillis)) {
                warmedUpJobs = 0;
                List<Figures> ofRound = new ArrayList<>(List.of(gateway(parties)));
                parties.stopGateway();
                if (withJobRunr) {
                    // Held to the provider's limit (the in-flight target), as a team must hold a real provider's;
                    // --peer-unbounded also runs it as it comes, past the target.
                    ofRound.add(jobRunr(parties, true));
                    if (peerUnbounded) {
                        ofRound.add(jobRunr(parties, false));
                    }
                }
                print(ofRound, ideal);
                all.addAll(ofRound);
            }
        }
        if (repeat > 1) {
            printRounds(all, ideal);
        }
    }

    /**
     * {@code --repeat N}: the whole comparison N times, the parties taking turns, each round on a fresh database and
     * stand-in. One run of each says little when the difference is a second or two in 95: over the runs of 2026-12-05 the
     * gateway's runs spread over about 2 s and JobRunr's over 8 s (its poll, every 5 s, meets the jobs early or late).
     */
    private final int repeat;
    /** The folder of this round's logs and database (the bench's own with one round). */
    private Path roundDir;

    /** Per party over the rounds: each round's seconds, the median, the fastest and slowest, and the rounds each led. */
    private void printRounds(List<Figures> all, double ideal) {
        Map<String, List<Figures>> byParty = new LinkedHashMap<>();
        for (Figures f : all) {
            byParty.computeIfAbsent(f.name(), k -> new ArrayList<>()).add(f);
        }
        System.out.printf("%n  over %d rounds (seconds, first POST or enqueue to the last job final):%n", repeat);
        System.out.printf("  %-60s %-28s %8s %8s %8s %12s%n", "", "each round", "median", "fastest", "slowest", "× ideal (median)");
        for (Map.Entry<String, List<Figures>> party : byParty.entrySet()) {
            List<Double> seconds = party.getValue().stream().map(Figures::seconds).toList();
            List<Double> sorted = seconds.stream().sorted().toList();
            double median = sorted.size() % 2 == 1 ? sorted.get(sorted.size() / 2)
                    : (sorted.get(sorted.size() / 2 - 1) + sorted.get(sorted.size() / 2)) / 2;
            System.out.printf("  %-60s %-28s %8.1f %8.1f %8.1f %12.2f%n", party.getKey(),
                    String.join(" ", seconds.stream().map(s -> String.format("%.1f", s)).toList()), median, sorted.get(0),
                    sorted.get(sorted.size() - 1), jobs / median / ideal);
        }
        List<List<Figures>> parties = new ArrayList<>(byParty.values());
        if (parties.size() >= 2) {
            int ahead = 0;
            for (int r = 0; r < repeat; r++) {
                ahead += parties.get(0).get(r).seconds() < parties.get(1).get(r).seconds() ? 1 : 0;
            }
            System.out.printf("  the gateway ahead of %s in %d of %d rounds%n", new ArrayList<>(byParty.keySet()).get(1), ahead, repeat);
        }
    }

    private Figures gateway(GatewayProcesses parties) throws Exception {
        // Only what a user raises: the provider's max-concurrency and the tenants' caps.
        parties.startGateway(tenants, inflight, inflight, Map.of());
        String providerUrl = parties.providerUrl;
        if (warmUpRound > 0) {
            parties.get(providerUrl + "/latency?ms=" + WARM_UP_LATENCY_MS);
            // The tenant's listing the measured run times runs through the warm-up too, untimed, as a gateway in use
            // serves it: first met in the measured run, its query and list paths threw the JIT's compiled HTTP and
            // JSON code back to the interpreter (a hundred deoptimizations in its first second) and kept the C2
            // compiler busy (15 % of the machine) through the first wave of calls.
            ApiProbe warmUpProbe = new ApiProbe(parties, null);
            warmUpProbe.start();
            for (int round = 1; ; round++) {
                long compiledBefore = compilationMillis(parties);
                long roundStart = System.currentTimeMillis();
                long answeredBefore = answered(parties);
                send(parties, warmUpRound, new AtomicLong());
                try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                    waitForFinal(db, parties, roundStart, warmUpRound, answeredBefore + warmUpRound);
                }
                long roundMillis = System.currentTimeMillis() - roundStart;
                double compiling = (compilationMillis(parties) - compiledBefore) / (double) roundMillis;
                warmedUpJobs += warmUpRound;
                double settled = jitSettled(parties);
                System.out.printf("  jobgate: warm-up round %d, %,d jobs (calls of %d ms) in %.1f s, unmeasured; its compilers' time "
                                + "%.0f %% of it, then %.1f s until they were done%n", round, warmUpRound, WARM_UP_LATENCY_MS,
                        roundMillis / 1000.0, 100 * compiling, settled);
                if (compiling < QUIET_JIT || round >= warmUpRounds) {
                    break;
                }
            }
            warmUpProbe.interrupt();
            warmUpProbe.join();
            parties.get(providerUrl + "/latency?ms=" + latencyMillis);
            Thread.sleep(1000); // the last warm-up's rows written after its finalized_at: apart from the measured jobs' created_at
        }
        parties.get(providerUrl + "/reset");
        try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            GatewayProcesses.resetStatements(db); // the statements printed are the measured run's
        }
        Sampler sampler = new Sampler(parties, parties.gatewayPid());
        ApiProbe probe = new ApiProbe(parties, sampler);
        parties.startRecording();
        sampler.start();
        long cpuBefore = GatewayProcesses.cpuMillis(parties.gatewayPid());
        long pgBefore = parties.postgresCpuMillis();
        long first = System.currentTimeMillis();
        AtomicLong refused = new AtomicLong();
        probe.start();
        send(parties, jobs, refused);
        long lastAccepted = System.currentTimeMillis();
        try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
            long[] done = waitForFinal(db, parties, first, jobs, jobs);
            double cpu = (GatewayProcesses.cpuMillis(parties.gatewayPid()) - cpuBefore) / (double) jobs;
            double pgCpu = (parties.postgresCpuMillis() - pgBefore) / (double) jobs;
            sampler.interrupt();
            probe.interrupt();
            parties.stopRecording();
            String ofRun = "FROM attempts a JOIN jobs j ON j.job_id = a.job_id WHERE j.tenant_id LIKE '" + parties.tenantPattern()
                    + "' AND j.created_at >= to_timestamp(" + first / 1000.0 + ")";
            long dropped = count(db, "SELECT count(*) " + ofRun + " AND a.outcome = 'lease_lost' AND a.http_status = 200");
            long attempts = count(db, "SELECT count(*) " + ofRun);
            double seconds = (done[1] - first) / 1000.0;
            double[] api = probe.percentiles();
            printTimeline(parties, db, first, done[1], sampler);
            GatewayProcesses.printStatements(db, jobs, 12);
            return new Figures("jobgate (" + javaVersion() + ")", sampler.mostHeld, seconds, (int) done[0], dropped,
                    sampler.maxThreads, sampler.maxRssKib / 1024, api[0], api[1], probe.samples(), cpu, pgCpu,
                    String.format("admitted in %.1f s (%d answered 429 and retried), %d attempts for %d jobs, %d dispatches found the "
                                    + "provider full, the stand-in: %s", (lastAccepted - first) / 1000.0, refused.get(), attempts, jobs,
                            parties.logLines("gateway", "at its concurrency limit"), parties.get(providerUrl + "/stats").body()));
        }
    }

    /**
     * Sends {@code count} jobs from {@link #clients} threads, each on its own kept-alive connection
     * ({@link KeptAliveClient}: the clients share the gateway's two cores), each job retried after a 429/503's
     * Retry-After.
     */
    void send(GatewayProcesses parties, int count, AtomicLong refused) throws Exception {
        Thread[] senders = new Thread[clients];
        AtomicInteger next = new AtomicInteger();
        ConcurrentLinkedQueue<String> errors = new ConcurrentLinkedQueue<>();
        for (int c = 0; c < clients; c++) {
            senders[c] = new Thread(() -> {
                try (KeptAliveClient http = new KeptAliveClient("127.0.0.1", parties.port, 60_000)) {
                    for (int i = next.getAndIncrement(); i < count; i = next.getAndIncrement()) {
                        try {
                            post(http, parties, i, refused);
                        } catch (Exception e) {
                            errors.add(e.toString());
                        }
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

    /**
     * {@code [succeeded, epoch ms of the last finalized_at]} once the {@code expected} jobs created since {@code since} are final.
     * While it waits it counts only the run's open jobs, through the index that holds open jobs alone: counting
     * every job of the run ten times a second read the whole table each time, and that poll was a third of the
     * database's time in a run of 6,000 jobs, taken from the gateway it measured.
     */
    /**
     * Waits until every job of the round is final; @return succeeded and the last finalized_at. The
     * database is asked only once the stand-in answered {@code answeredTarget} calls in all (its
     * {@code /stats}), or every few seconds: counting a run's open jobs costs PostgreSQL 10 ms, and
     * asked ten times a second through a run it took a tenth of a core from the gateway it measured.
     */
    long[] waitForFinal(Connection db, GatewayProcesses parties, long since, int expected, long answeredTarget) throws Exception {
        String ofRun = " FROM jobs WHERE tenant_id LIKE '" + parties.tenantPattern() + "' AND created_at >= to_timestamp(" + since / 1000.0 + ")";
        long lastProgress = System.nanoTime();
        long lastDbPoll = 0;
        long lastOpen = -1;
        long lastAnswered = -1;
        while (true) {
            long answered = answered(parties);
            if (answered != lastAnswered) {
                lastAnswered = answered;
                lastProgress = System.nanoTime();
            }
            if (answered >= answeredTarget || System.nanoTime() - lastDbPoll > TimeUnit.SECONDS.toNanos(5)) {
                lastDbPoll = System.nanoTime();
                long open = count(db, "SELECT count(*)" + ofRun + " AND finalized_at IS NULL");
                if (open == 0) {
                    try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("SELECT count(*), count(*) FILTER (WHERE status = "
                            + "'succeeded'), (extract(epoch FROM max(finalized_at)) * 1000)::bigint" + ofRun)) {
                        rs.next();
                        if (rs.getLong(1) != expected) {
                            throw new IllegalStateException(rs.getLong(1) + " jobs of " + expected + " in the database; logs in " + roundDir);
                        }
                        return new long[] {rs.getLong(2), rs.getLong(3)};
                    }
                }
                if (open != lastOpen) {
                    lastOpen = open;
                    lastProgress = System.nanoTime();
                }
            }
            if (System.nanoTime() - lastProgress > TimeUnit.MILLISECONDS.toNanos(3 * latencyMillis + 120_000)) {
                throw new IllegalStateException("stalled: " + lastOpen + " of " + expected + " jobs not final; logs in " + roundDir);
            }
            Thread.sleep(100); // another process's progress: nothing to wait on but its answers
        }
    }

    /** How many calls the stand-in answered since its last reset. */
    private static long answered(GatewayProcesses parties) throws Exception {
        Matcher m = ANSWERED.matcher(parties.get(parties.providerUrl + "/stats").body());
        if (!m.find()) {
            throw new IllegalStateException("the stand-in's /stats has no answered count");
        }
        return Long.parseLong(m.group(1));
    }

    private static void post(KeptAliveClient http, GatewayProcesses parties, int i, AtomicLong refused) throws Exception {
        byte[] body = GatewayProcesses.IMAGE_JOB.getBytes(StandardCharsets.UTF_8);
        Map<String, String> headers = parties.postHeaders(i); // one idempotency key for all its tries
        for (int tries = 0; tries < 100; tries++) {
            KeptAliveClient.Answer r = http.post("/v1/jobs", headers, body);
            if (r.status() == 202 && JOB_ID.matcher(r.body()).find()) {
                return;
            }
            if (r.status() != 429 && r.status() != 503) {
                throw new IllegalStateException("admission answered " + r.status() + ": " + r.body());
            }
            refused.incrementAndGet();
            long wait = Long.parseLong(r.headers().getOrDefault("retry-after", "1"));
            Thread.sleep(TimeUnit.SECONDS.toMillis(Math.max(1, wait))); // what the Retry-After asks of a client
        }
        throw new IllegalStateException("admission refused 100 times");
    }

    private Figures jobRunr(GatewayProcesses parties, boolean providerLimit) throws Exception {
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
        List<String> args = new ArrayList<>();
        if (providerLimit) {
            args.add("-Dpeer.max-calls=" + inflight);
        }
        args.addAll(List.of("-cp", peers.resolve("classes") + ":" + peers.resolve("lib") + "/*",
                "io.jobgate.benchpeers.JobRunrSlowCallsPeer", bare, user.find() ? user.group(1) : "postgres", "",
                providerLimit ? "jobgate_peer_jobrunr_inflight_limited" : "jobgate_peer_jobrunr_inflight", providerUrl, Integer.toString(jobs), Integer.toString(inflight),
                Long.toString(Math.max(600, jobs / Math.max(1, inflight) * latencyMillis / 1000 * 4)),
                Integer.toString(warmedUpJobs), Long.toString(WARM_UP_LATENCY_MS), Long.toString(latencyMillis)));
        Process peer = parties.start("jobrunr", args, Map.of());
        while (parties.logLines("jobrunr", "WARMED-UP") == 0 && peer.isAlive()) {
            Thread.sleep(50); // its warm-up is its own process's: its log says when it is over
        }
        Sampler sampler = new Sampler(parties, -1);
        sampler.start();
        long pgBefore = parties.postgresCpuMillis();
        if (!peer.waitFor(2, TimeUnit.HOURS) || peer.exitValue() != 0) {
            throw new IllegalStateException("JobRunr's run failed; see " + roundDir.resolve("jobrunr.log"));
        }
        sampler.interrupt();
        double pgCpu = (parties.postgresCpuMillis() - pgBefore) / (double) jobs;
        String result = Files.readAllLines(roundDir.resolve("jobrunr.log")).stream().filter(l -> l.startsWith("RESULT "))
                .findFirst().orElseThrow(() -> new IllegalStateException("JobRunr printed no result; see " + roundDir.resolve("jobrunr.log")));
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

    /**
     * Where the run's time went: per bucket (a tenth of the latency, at least a second) the jobs admitted, the calls
     * the stand-in started and answered, and the jobs made final; then how soon the slots filled, how full they
     * stayed, and how long the last answers took to be finished. The ideal rate needs every slot held from the
     * first POST to the last final.
     */
    private void printTimeline(GatewayProcesses parties, Connection db, long first, long lastFinal, Sampler sampler) throws Exception {
        String[] lines = parties.get(parties.providerUrl + "/timeline").body().split("\n");
        long resetAt = Long.parseLong(lines[0].substring(lines[0].indexOf('=') + 1));
        long bucketMs = Math.max(1000, latencyMillis / 10);
        int buckets = (int) ((lastFinal - first) / bucketMs) + 1;
        long[] admitted = new long[buckets];
        long[] started = new long[buckets];
        long[] answered = new long[buckets];
        long[] finals = new long[buckets];
        long heldNow = 0;
        double heldSlotMillis = 0;
        long fullAt = -1;
        long allAt = -1;
        long lastAnswer = first;
        long previous = first;
        List<Long> refills = new ArrayList<>();
        boolean refilled = false;
        for (int i = 1; i < lines.length; i++) {
            String[] f = lines[i].split(",");
            long at = resetAt + Long.parseLong(f[0]) * SlowProvider.BUCKET_MS;
            heldSlotMillis += heldNow * (double) Math.max(0, at - previous);
            previous = Math.max(previous, at);
            heldNow += Long.parseLong(f[1]) - Long.parseLong(f[2]);
            if (fullAt < 0 && heldNow >= 0.95 * inflight) {
                fullAt = at;
            }
            if (allAt < 0 && heldNow >= inflight) {
                allAt = at; // the first wave's last call: the run's last chain of calls starts here
            }
            if (heldNow >= inflight && !refilled) {
                // Every slot held again: the last such moment of a wave (a tenth of the latency before its first
                // answers to the next wave's) is its last call's start.
                int wave = (int) ((at - first + latencyMillis / 10) / latencyMillis);
                if (wave >= refills.size()) {
                    refills.add(at);
                } else {
                    refills.set(wave, at);
                }
            }
            refilled = heldNow >= inflight;
            if (Long.parseLong(f[2]) > 0) {
                lastAnswer = at;
            }
            int b = (int) Math.min(buckets - 1, Math.max(0, (at - first) / bucketMs));
            started[b] += Long.parseLong(f[1]);
            answered[b] += Long.parseLong(f[2]);
        }
        String ofRun = " FROM jobs WHERE tenant_id LIKE '" + parties.tenantPattern() + "' AND created_at >= to_timestamp(" + first / 1000.0 + ")";
        String fine = System.getenv("JOBGATE_BENCH_TIMELINE");
        if (fine != null && !fine.isBlank()) {
            writeFineTimeline(Path.of(fine), lines, resetAt, db, ofRun, first);
        }
        for (String[] column : List.of(new String[] {"created_at", "a"}, new String[] {"finalized_at", "f"})) {
            try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("SELECT floor((extract(epoch FROM " + column[0]
                    + ") * 1000 - " + first + ") / " + bucketMs + ")::int, count(*)" + ofRun + " AND " + column[0] + " IS NOT NULL GROUP BY 1")) {
                while (rs.next()) {
                    int b = Math.min(buckets - 1, Math.max(0, rs.getInt(1)));
                    (column[1].equals("a") ? admitted : finals)[b] += rs.getLong(2);
                }
            }
        }
        System.out.printf("%n  jobgate, per %.0f s from the first POST:   admitted  calls started  answered  final  calls held at its end"
                + "   CPU: gateway  PostgreSQL  clients  stand-in  machine busy%n", bucketMs / 1000.0);
        long held = 0;
        List<long[]> cpu;
        synchronized (sampler.cpu) {
            cpu = new ArrayList<>(sampler.cpu);
        }
        for (int b = 0; b < buckets; b++) {
            held += started[b] - answered[b];
            long[] from = sampleAt(cpu, first + b * bucketMs);
            long[] to = sampleAt(cpu, first + (b + 1) * bucketMs);
            String load = "";
            if (from != null && to != null && to[0] > from[0]) {
                double wall = to[0] - from[0];
                load = String.format("%14.0f %% %10.0f %% %7.0f %% %8.0f %% %12.0f %%", 100 * (to[1] - from[1]) / wall,
                        100 * (to[2] - from[2]) / wall, 100 * (to[5] - from[5]) / wall, 100 * (to[6] - from[6]) / wall,
                        100.0 * (to[3] - from[3]) / Math.max(1, to[4] - from[4]));
            }
            System.out.printf("  %6.0f s %38d %14d %9d %6d %8d %s%n", b * bucketMs / 1000.0, admitted[b], started[b], answered[b], finals[b],
                    held, load);
        }
        double seconds = (lastFinal - first) / 1000.0;
        System.out.printf("  95 %% of the slots held %.1f s after the first POST, all %s; slots held %.1f %% of the run (%.1f s of %.1f s at the "
                        + "target); the last answer %.1f s before the last job final%n", (fullAt - first) / 1000.0,
                allAt < 0 ? "never" : String.format("%.1f s", (allAt - first) / 1000.0),
                100 * heldSlotMillis / (inflight * (double) (lastFinal - first)), heldSlotMillis / inflight / 1000.0, seconds,
                (lastFinal - lastAnswer) / 1000.0);
        // A wave's calls end one latency after they started, and the next wave's start as their slots free: each
        // wave's last start later than the one before by more than the latency is the hand-over's cost.
        StringBuilder waves = new StringBuilder();
        for (int i = 0; i < refills.size(); i++) {
            waves.append(String.format("%s%.2f s", i == 0 ? "" : ", ", (refills.get(i) - first) / 1000.0));
            if (i > 0) {
                waves.append(String.format(" (%+.2f)", (refills.get(i) - refills.get(i - 1) - latencyMillis) / 1000.0));
            }
        }
        System.out.printf("  every slot held again at %s: a wave's last call, and (+) what its hand-over added to the latency%n", waves);
    }

    /**
     * The run at the stand-in's resolution, for a closer look at a hand-over ({@code JOBGATE_BENCH_TIMELINE}: a CSV
     * file): per 100 ms from the first POST, the calls started and answered and the jobs made final.
     */
    private static void writeFineTimeline(Path file, String[] lines, long resetAt, Connection db, String ofRun, long first)
            throws Exception {
        TreeMap<Long, long[]> rows = new TreeMap<>();
        for (int i = 1; i < lines.length; i++) {
            String[] f = lines[i].split(",");
            long at = (resetAt + Long.parseLong(f[0]) * SlowProvider.BUCKET_MS - first) / SlowProvider.BUCKET_MS;
            long[] row = rows.computeIfAbsent(at, k -> new long[3]);
            row[0] += Long.parseLong(f[1]);
            row[1] += Long.parseLong(f[2]);
        }
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("SELECT floor((extract(epoch FROM finalized_at) * 1000 - "
                + first + ") / " + SlowProvider.BUCKET_MS + ")::bigint, count(*)" + ofRun + " AND finalized_at IS NOT NULL GROUP BY 1")) {
            while (rs.next()) {
                rows.computeIfAbsent(rs.getLong(1), k -> new long[3])[2] += rs.getLong(2);
            }
        }
        StringBuilder csv = new StringBuilder("seconds,started,answered,final\n");
        rows.forEach((at, r) -> csv.append(String.format("%.1f,%d,%d,%d%n", at * SlowProvider.BUCKET_MS / 1000.0, r[0], r[1], r[2])));
        Files.writeString(file, csv);
    }

    /**
     * Waits (at most a minute) until the gateway's compilers are done with what the last round queued: as a
     * gateway's JIT catches up in its quiet moments, where back-to-back rounds on two busy cores kept it
     * behind. Answers the seconds waited.
     */
    private static double jitSettled(GatewayProcesses parties) throws Exception {
        long start = System.nanoTime();
        long last = compilationMillis(parties);
        while (System.nanoTime() - start < TimeUnit.MINUTES.toNanos(1)) {
            Thread.sleep(1000); // another process's compilers: nothing to wait on but their counter
            long now = compilationMillis(parties);
            if (now - last < 50) {
                break;
            }
            last = now;
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /** The gateway JVM's compilers' time so far (ms), from {@code java.lang:type=Compilation} over Jolokia (loopback may read it). */
    private static long compilationMillis(GatewayProcesses parties) throws Exception {
        String body = parties.get("http://127.0.0.1:" + parties.port
                + "/observe/jolokia/read/java.lang:type=Compilation/TotalCompilationTime").body();
        Matcher value = Pattern.compile("\"value\"\\s*:\\s*(\\d+)").matcher(body);
        if (!value.find()) {
            throw new IllegalStateException("the gateway's compilation time could not be read: " + body);
        }
        return Long.parseLong(value.group(1));
    }

    /** The last CPU sample taken at or before {@code at}. */
    private static long[] sampleAt(List<long[]> samples, long at) {
        long[] found = null;
        for (long[] sample : samples) {
            if (sample[0] <= at) {
                found = sample;
            }
        }
        return found;
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
        /**
         * Every second: {epoch ms, the gateway's CPU ms, PostgreSQL's CPU ms, the machine's busy and total jiffies, this
         * bench's CPU ms (its HTTP clients), the stand-in's CPU ms}.
         */
        final List<long[]> cpu = Collections.synchronizedList(new ArrayList<>());
        private int ticks;

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
                    if (pid > 0 && ticks++ % 5 == 0) {
                        String[] all = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
                        long total = 0;
                        for (int i = 1; i < all.length; i++) {
                            total += Long.parseLong(all[i]);
                        }
                        long idle = Long.parseLong(all[4]) + Long.parseLong(all[5]);
                        cpu.add(new long[] {System.currentTimeMillis(), GatewayProcesses.cpuMillis(pid), parties.postgresCpuMillis(),
                                total - idle, total, GatewayProcesses.cpuMillis(ProcessHandle.current().pid()),
                                GatewayProcesses.cpuMillis(parties.providerPid())});
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

    /**
     * A tenant listing its jobs, 20 times a second, timed while at least 90 % of the target is in flight; without a
     * sampler (the warm-up), untimed.
     */
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
                    if (r.statusCode() == 200 && sampler != null && sampler.heldNow >= 0.9 * inflight) {
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
