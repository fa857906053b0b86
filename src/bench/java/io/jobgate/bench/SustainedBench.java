package io.jobgate.bench;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench --only sustained}: jobs sent open-loop, each at its planned time whatever the answers
 * (arrivals on the clock, as production traffic comes), at stepped rates, to find the knee: the highest
 * rate at which the gateway finishes what arrives and accept → final stays short. The gateway runs as a
 * user runs it ({@link GatewayProcesses}: its own process on embedded defaults, the OpenAI adapter
 * against a stand-in answering after {@code --latency-seconds}, 0 by default: the gateway's own cost).
 *
 * <p>Per step: the rate offered, what admission accepted and refused (429/503 are admission control
 * doing its work, counted, not retried: an open-loop client does not slow down), jobs finished per
 * second during the step, the backlog (open jobs) at its end, accept → final p50/p95/p99 of the step's
 * jobs (from the planned send time to {@code finalized_at}; a job still open when the run ends counts as
 * never), and the CPU per finished job of the gateway's JVM and of PostgreSQL. The knee is the highest
 * step whose p95 is under 2 s while it finished at least 95 % of what arrived; the steps stop after the
 * first step past it whose backlog kept growing.
 */
final class SustainedBench {

    private static final Pattern JOB_ID = Pattern.compile("\"job_id\"\\s*:\\s*\"([^\"]+)\"");

    private final Path jar;
    private final Path dir;
    private final String java;
    private final long latencyMillis;
    private final int[] rates;
    private final int stepSeconds;
    private final int tenants;
    private final int maxConcurrency;
    /** How long the unmeasured warm-up sends, at half the first step's rate. */
    private final int warmUpSeconds;
    /** How many of the last step's costliest statements to print. */
    private final int statements;
    /** The gateway's sustained rate: the highest step up to which every step ended with less than 10 s of its arrivals open, whatever the latency. */
    private Integer keepsUp;
    /** The job schedulers given the same arrivals after the gateway ({@code --peers}). */
    private final List<String> peers;

    SustainedBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.latencyMillis = Math.round(Double.parseDouble(opts.getOrDefault("latency-seconds", "0")) * 1000);
        this.rates = Arrays.stream(opts.getOrDefault("rates", "25,50,100,150,200,250").split(",")).map(String::trim)
                .mapToInt(Integer::parseInt).toArray();
        this.stepSeconds = Integer.parseInt(opts.getOrDefault("step-seconds", "45"));
        this.tenants = Integer.parseInt(opts.getOrDefault("tenants", "10"));
        this.maxConcurrency = Integer.parseInt(opts.getOrDefault("max-concurrency", "64"));
        this.statements = Integer.parseInt(opts.getOrDefault("statements", "12"));
        this.warmUpSeconds = Integer.parseInt(opts.getOrDefault("warm-up-seconds", "45"));
        this.peers = SustainedPeers.named(opts.get("peers"));
    }

    /** A sent job: when it was planned, and its id once accepted. */
    private record Sent(int step, long plannedMillis) {
    }

    /** One step's figures, measured as it ran. */
    private static final class Step {
        final int rate;
        long startMillis;
        long endMillis;
        final AtomicLong accepted = new AtomicLong();
        final AtomicLong refused = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final AtomicLong late = new AtomicLong();
        long backlogAtEnd;
        long cpuGatewayMillis;
        long cpuPostgresMillis;
        /** Each POST's time to its answer, from its planned send (an open-loop client's view of admission). */
        final java.util.concurrent.ConcurrentLinkedQueue<long[]> admissionMillis = new java.util.concurrent.ConcurrentLinkedQueue<>();
        /** {planned send, accept -> final} of the step's jobs that became final. */
        final List<long[]> finalMillis = new ArrayList<>();

        Step(int rate) {
            this.rate = rate;
        }
    }

    void run() throws Exception {
        System.out.printf("%nSustained open-loop load: %d tenants, image jobs sent each at its planned time (arrivals on the clock, not "
                        + "after answers), %d s per step at %s jobs/s; the OpenAI adapter against a stand-in answering after %.1f s "
                        + "(max-concurrency %d); %s, %d cores%n",
                tenants, stepSeconds, Arrays.toString(rates), latencyMillis / 1000.0, maxConcurrency,
                "Java " + Runtime.version().feature(), Runtime.getRuntime().availableProcessors());
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, latencyMillis)) {
            parties.startGateway(tenants, 100_000, maxConcurrency, Map.of());
            Map<String, Sent> sent = new ConcurrentHashMap<>();
            List<Step> steps = new ArrayList<>();
            ExecutorService senders = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "sustained-sender");
                t.setDaemon(true);
                return t;
            });
            try (Connection db = DriverManager.getConnection(parties.jdbcUrl())) {
                // Warm-up, unmeasured: the JIT compiles the path first (on two cores C2 competes with the first minute):
                // half the first step's rate (at least 20 jobs/s) for --warm-up-seconds.
                int warmRate = Math.max(20, rates[0] / 2);
                offer(parties, senders, new Step(warmRate), warmRate, -1, null, warmUpSeconds);
                waitForOpen(db, parties, 0, 120);
                for (int i = 0; i < rates.length; i++) {
                    Step step = new Step(rates[i]);
                    steps.add(step);
                    long cpuBefore = GatewayProcesses.cpuMillis(parties.gatewayPid());
                    long pgBefore = parties.postgresCpuMillis();
                    GatewayProcesses.resetStatements(db); // the statements printed are the last step's
                    offer(parties, senders, step, step.rate, i, sent, stepSeconds);
                    step.backlogAtEnd = open(db, parties);
                    step.cpuGatewayMillis = GatewayProcesses.cpuMillis(parties.gatewayPid()) - cpuBefore;
                    step.cpuPostgresMillis = parties.postgresCpuMillis() - pgBefore;
                    System.out.printf("  step %d jobs/s done: backlog %d at its end%n", step.rate, step.backlogAtEnd);
                    if (step.backlogAtEnd > 10L * step.rate) {
                        System.out.printf("  the backlog grew past 10 s of arrivals: the steps above %d jobs/s are not run%n", step.rate);
                        break;
                    }
                }
                long lastStepFinished = finishedSince(db, parties, steps.get(steps.size() - 1).startMillis);
                GatewayProcesses.printStatements(db, lastStepFinished, statements);
                waitForOpen(db, parties, 0, 600);
                Integer knee = print(db, parties, steps, sent);
                parties.stopGateway(); // the peers run alone on the machine, as the gateway did
                List<SustainedPeers.Party> others = new ArrayList<>();
                for (String peer : peers) {
                    others.add(SustainedPeers.run(parties, peer, Arrays.copyOf(rates, steps.size()), stepSeconds, warmUpSeconds,
                            maxConcurrency));
                }
                printPeers(others, knee);
            } finally {
                senders.shutdownNow();
            }
        }
    }

    /**
     * Sends {@code rate} jobs/s for {@code seconds}, each at its planned time (a job whose send was
     * more than 10 ms late is counted: the sender itself fell behind).
     */
    private void offer(GatewayProcesses parties, ExecutorService senders, Step step, int rate, int index, Map<String, Sent> sent,
                       int seconds) throws InterruptedException {
        long start = System.currentTimeMillis();
        step.startMillis = start;
        int count = rate * seconds;
        for (int k = 0; k < count; k++) {
            long planned = start + Math.round(k * 1000.0 / rate);
            long wait = planned - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait); // the arrivals' clock
            } else if (wait < -10) {
                step.late.incrementAndGet();
            }
            int tenant = k % tenants;
            senders.execute(() -> {
                try {
                    HttpResponse<String> r = parties.http.send(parties.post(tenant), HttpResponse.BodyHandlers.ofString());
                    step.admissionMillis.add(new long[] {planned, System.currentTimeMillis() - planned});
                    Matcher id = JOB_ID.matcher(r.body());
                    if (r.statusCode() == 202 && id.find()) {
                        step.accepted.incrementAndGet();
                        if (sent != null) {
                            sent.put(id.group(1), new Sent(index, planned));
                        }
                    } else if (r.statusCode() == 429 || r.statusCode() == 503) {
                        step.refused.incrementAndGet();
                    } else {
                        step.failed.incrementAndGet();
                    }
                } catch (Exception e) {
                    step.failed.incrementAndGet();
                }
            });
        }
        step.endMillis = start + seconds * 1000L;
        long rest = step.endMillis - System.currentTimeMillis();
        if (rest > 0) {
            Thread.sleep(rest);
        }
    }

    static long open(Connection db, GatewayProcesses parties) throws Exception {
        try (PreparedStatement s = db.prepareStatement("SELECT count(*) FROM jobs WHERE tenant_id LIKE ? AND finalized_at IS NULL")) {
            s.setString(1, parties.tenantPattern());
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static long finishedSince(Connection db, GatewayProcesses parties, long startMillis) throws Exception {
        try (PreparedStatement s = db.prepareStatement("SELECT count(*) FROM jobs WHERE tenant_id LIKE ? AND finalized_at >= ?")) {
            s.setString(1, parties.tenantPattern());
            s.setTimestamp(2, new java.sql.Timestamp(startMillis));
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    static void waitForOpen(Connection db, GatewayProcesses parties, long atMost, int seconds) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (open(db, parties) > atMost && System.nanoTime() < until) {
            Thread.sleep(200); // another process's progress: nothing to wait on but the database
        }
    }

    /** Prints the gateway's steps; answers its knee (null: below the lowest step). */
    private Integer print(Connection db, GatewayProcesses parties, List<Step> steps, Map<String, Sent> sent) throws Exception {
        Map<Integer, List<Double>> latencies = new ConcurrentHashMap<>();
        Map<Integer, Long> finishedInStep = new ConcurrentHashMap<>();
        Map<Integer, Long> neverFinal = new ConcurrentHashMap<>();
        Map<Integer, Long> notSucceeded = new ConcurrentHashMap<>();
        try (PreparedStatement s = db.prepareStatement("SELECT job_id, (extract(epoch FROM finalized_at) * 1000)::bigint, status "
                + "FROM jobs WHERE tenant_id LIKE ?")) {
            s.setString(1, parties.tenantPattern());
            try (ResultSet rs = s.executeQuery()) {
                while (rs.next()) {
                    Sent job = sent.get(rs.getObject(1, UUID.class).toString());
                    long finalAt = rs.getLong(2);
                    boolean isFinal = !rs.wasNull();
                    for (Step step : steps) {
                        if (isFinal && finalAt >= step.startMillis && finalAt < step.endMillis) {
                            finishedInStep.merge(step.rate, 1L, Long::sum);
                        }
                    }
                    if (job == null) {
                        continue; // the warm-up's
                    }
                    int rate = steps.get(job.step()).rate;
                    if (!"succeeded".equals(rs.getString(3))) {
                        notSucceeded.merge(rate, 1L, Long::sum);
                    }
                    if (isFinal) {
                        latencies.computeIfAbsent(rate, r -> new ArrayList<>()).add((double) (finalAt - job.plannedMillis()));
                        steps.get(job.step()).finalMillis.add(new long[] {job.plannedMillis(), finalAt - job.plannedMillis()});
                    } else {
                        neverFinal.merge(rate, 1L, Long::sum);
                    }
                }
            }
        }
        System.out.printf("%n  %8s %9s %8s %8s %10s %9s %25s %14s %11s %11s%n", "offered", "accepted", "refused", "failed", "finished/s",
                "backlog", "accept->final p50/p95/p99", "admission p99", "JVM ms/job", "PG ms/job");
        Integer knee = null;
        Integer keepsUp = null;
        boolean missed = false;
        for (Step step : steps) {
            List<Double> l = latencies.getOrDefault(step.rate, List.of());
            double[] sorted = l.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            long never = neverFinal.getOrDefault(step.rate, 0L);
            double p50 = percentile(sorted, never, 0.50);
            double p95 = percentile(sorted, never, 0.95);
            double p99 = percentile(sorted, never, 0.99);
            double finishedPerSecond = finishedInStep.getOrDefault(step.rate, 0L) * 1000.0 / (step.endMillis - step.startMillis);
            long finished = Math.max(1, finishedInStep.getOrDefault(step.rate, 0L));
            double[] admission = step.admissionMillis.stream().mapToDouble(a -> a[1]).sorted().toArray();
            System.out.printf("  %6d/s %9d %8d %8d %10.1f %9d %25s %11.0f ms %11.1f %11.1f%n", step.rate, step.accepted.get(), step.refused.get(),
                    step.failed.get(), finishedPerSecond, step.backlogAtEnd,
                    String.format("%s / %s / %s s", seconds(p50), seconds(p95), seconds(p99)), percentile(admission, 0, 0.99),
                    (double) step.cpuGatewayMillis / finished, (double) step.cpuPostgresMillis / finished);
            if (step.late.get() > 0) {
                System.out.printf("           (the sender fell behind its plan on %d sends)%n", step.late.get());
            }
            boolean keptUp = finishedPerSecond >= 0.95 * step.accepted.get() * 1000.0 / (step.endMillis - step.startMillis)
                    && step.failed.get() == 0;
            missed |= step.backlogAtEnd > 10L * step.rate || step.failed.get() > 0;
            if (!missed) {
                keepsUp = step.rate;
            }
            if (p95 < 2000 && keptUp) {
                knee = step.rate;
            }
        }
        this.keepsUp = keepsUp;
        System.out.printf("  jobs of the steps that did not succeed: %s%n", notSucceeded.isEmpty() ? "none"
                : notSucceeded.toString().replace("=", " jobs/s: "));
        for (Step step : steps) {
            if (step.endMillis - step.startMillis >= 120_000) {
                byMinute(db, parties, step);
            }
        }
        System.out.printf("  knee: %s (the highest offered rate with accept -> final p95 under 2 s, finishing at least 95 %% of what "
                + "was accepted during the step)%n", knee == null ? "below the lowest step" : knee + " jobs/s");
        System.out.println("  accept -> final: from the planned send to the job's finalized_at; a job never final counts as the "
                + "slowest. CPU per job: the step's CPU over the jobs finished during it.");
        return knee;
    }

    /**
     * The peers' steps in the gateway's columns (accept: the enqueue call; final: the job's end), and
     * every party's knee by the same rule.
     */
    private void printPeers(List<SustainedPeers.Party> others, Integer knee) {
        if (others.isEmpty()) {
            return;
        }
        System.out.printf("%n  the same arrivals, warm-up and steps given to the job schedulers a team would use instead (each job one POST "
                + "to the same stand-in, %d workers; JobRunr polling every 5 s, the least its SQL storage allows; db-scheduler every "
                + "100 ms with immediate execution)%n", maxConcurrency);
        System.out.printf("  %-22s %8s %9s %8s %10s %9s %25s %14s %11s %11s%n", "", "offered", "accepted", "failed", "finished/s",
                "backlog", "enqueue->done p50/p95/p99", "enqueue p99", "JVM ms/job", "PG ms/job");
        StringBuilder knees = new StringBuilder("jobgate " + (knee == null ? "below the lowest step" : knee + " jobs/s"));
        StringBuilder kept = new StringBuilder("jobgate " + (keepsUp == null ? "below the lowest step" : keepsUp + " jobs/s"));
        for (SustainedPeers.Party party : others) {
            Integer peerKnee = null;
            Integer peerKeepsUp = null;
            boolean missed = false;
            for (SustainedPeers.Row row : party.steps()) {
                System.out.printf("  %-22s %6d/s %9d %8d %10.1f %9d %25s %11.0f ms %11.1f %11.1f%n", party.name(), row.rate(), row.accepted(),
                        row.failed(), row.finishedPerSecond(), row.backlog(), String.format("%s / %s / %s s", seconds(row.p50()),
                                seconds(row.p95()), seconds(row.p99())), row.enqueueP99(), row.cpuMillisPerJob(), row.pgMillisPerJob());
                boolean keptUp = row.finishedPerSecond() >= 0.95 * row.accepted() / (double) stepSeconds && row.failed() == 0;
                missed |= row.backlog() > 10L * row.rate() || row.failed() > 0;
                if (!missed) {
                    peerKeepsUp = row.rate();
                }
                if (row.p95() < 2000 && keptUp) {
                    peerKnee = row.rate();
                }
            }
            knees.append(", ").append(party.name()).append(' ').append(peerKnee == null ? "below the lowest step" : peerKnee + " jobs/s");
            kept.append(", ").append(party.name()).append(' ').append(peerKeepsUp == null ? "below the lowest step" : peerKeepsUp + " jobs/s");
        }
        System.out.println("  knee (p95 under 2 s, 95 % finished): " + knees);
        System.out.println("  sustained rate (the backlog at the end of every step up to it under 10 s of its arrivals, whatever the latency): " + kept);
    }

    /**
     * A long step minute by minute, from the database afterwards: jobs accepted (created) and finished
     * (finalized) in the minute, their ratio, and the backlog (accepted, not yet final) at the minute's
     * end and at its highest (every 5 s).
     */
    private static void byMinute(Connection db, GatewayProcesses parties, Step step) throws Exception {
        System.out.printf("%n  the %d jobs/s step minute by minute (accept -> final and admission of the jobs sent in the minute)%n"
                        + "  %6s %9s %9s %18s %9s %12s %18s %14s%n", step.rate, "minute", "accepted",
                "finished", "finished/accepted", "backlog", "backlog max", "accept->final p95", "admission p99");
        String backlogAt = "SELECT count(*) FROM jobs WHERE tenant_id LIKE ? AND created_at <= to_timestamp(?) "
                + "AND (finalized_at IS NULL OR finalized_at > to_timestamp(?))";
        String inMinute = "SELECT count(*) FILTER (WHERE created_at >= to_timestamp(?) AND created_at < to_timestamp(?)), "
                + "count(*) FILTER (WHERE finalized_at >= to_timestamp(?) AND finalized_at < to_timestamp(?)) FROM jobs WHERE tenant_id LIKE ?";
        for (long from = step.startMillis, minute = 1; from < step.endMillis; from += 60_000, minute++) {
            long to = Math.min(step.endMillis, from + 60_000);
            long accepted;
            long finished;
            try (PreparedStatement s = db.prepareStatement(inMinute)) {
                s.setDouble(1, from / 1000.0);
                s.setDouble(2, to / 1000.0);
                s.setDouble(3, from / 1000.0);
                s.setDouble(4, to / 1000.0);
                s.setString(5, parties.tenantPattern());
                try (ResultSet rs = s.executeQuery()) {
                    rs.next();
                    accepted = rs.getLong(1);
                    finished = rs.getLong(2);
                }
            }
            long most = 0;
            long atEnd = 0;
            for (long t = from + 5_000; t <= to; t += 5_000) {
                try (PreparedStatement s = db.prepareStatement(backlogAt)) {
                    s.setString(1, parties.tenantPattern());
                    s.setDouble(2, t / 1000.0);
                    s.setDouble(3, t / 1000.0);
                    try (ResultSet rs = s.executeQuery()) {
                        rs.next();
                        atEnd = rs.getLong(1);
                        most = Math.max(most, atEnd);
                    }
                }
            }
            long f = from;
            double[] toFinal = step.finalMillis.stream().filter(j -> j[0] >= f && j[0] < to).mapToDouble(j -> j[1]).sorted().toArray();
            double[] admitted = step.admissionMillis.stream().filter(a -> a[0] >= f && a[0] < to).mapToDouble(a -> a[1]).sorted().toArray();
            System.out.printf("  %6d %9d %9d %18.3f %9d %12d %16s s %11.0f ms%n", minute, accepted, finished,
                    finished / (double) Math.max(1, accepted), atEnd, most, seconds(percentile(toFinal, 0, 0.95)),
                    percentile(admitted, 0, 0.99));
        }
    }

    /** The {@code q} quantile of finished latencies with {@code never} jobs that never finished counted as slowest. */
    static double percentile(double[] sorted, long never, double q) {
        long n = sorted.length + never;
        if (n == 0) {
            return Double.NaN;
        }
        long index = (long) Math.ceil(q * n) - 1;
        return index >= sorted.length ? Double.POSITIVE_INFINITY : sorted[(int) Math.max(0, index)];
    }

    static String seconds(double millis) {
        return Double.isInfinite(millis) ? "never" : Double.isNaN(millis) ? "n/a" : String.format("%.2f", millis / 1000);
    }
}
