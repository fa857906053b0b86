package io.jobgate.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import javax.sql.DataSource;

import io.jobgate.job.ProviderGates;
import io.jobgate.relay.RelayWakeup;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.spi.CamelEvent;
import org.apache.camel.support.EventNotifierSupport;

/**
 * Backlog drain: N image jobs of several tenants admitted over HTTP while the fake provider's gate
 * is closed (a closed gate holds their dispatch events in the outbox, the way a 429 does), then the
 * gate is opened and the backlog drained through the whole path — relay, Artemis, lease and gate,
 * adapter over HTTP, quarantine/check/promote on the S3 server, finalize. Prints jobs/s, CPU per
 * job and where the work goes per job: database transactions and statements, WAL syncs, S3 calls,
 * JMS commits, and what the database sessions were doing (pg_stat_activity samples).
 */
final class DrainBench {

    /**
     * The drain's progress, polled every 50 ms while it is timed: which of the jobs still open at the
     * last poll are open now, by key (so a poll costs what is still open). Counting the drain tenants'
     * jobs by {@code tenant_id LIKE} read the whole jobs table each time (no index serves the pattern):
     * with 1M finished jobs of history, most of a core through the drain, and the history's pages
     * pushed the hot path's out of shared buffers (issue 20).
     */
    static final String STILL_OPEN = "/* bench-drain */ SELECT job_id FROM jobs WHERE job_id = ANY (?) "
            + "AND CASE WHEN finalized_at IS NULL THEN true END"; // by key, not through a partial index of open jobs
    /** Of the drain's jobs, the failed ones (once, after the clock stops). */
    static final String FAILED = "/* bench-drain */ SELECT count(*) FROM jobs WHERE job_id = ANY (?) AND status = 'failed'";
    /** The admissions' "queued" status events still waiting (before the clock starts): the relay's partial index. */
    static final String STATUS_WAITING = "/* bench-drain */ SELECT count(*) FROM outbox WHERE event_type = 'status' "
            + "AND published_at IS NULL AND tenant_id LIKE ?";
    /** The held backlog made due at once (the clock has started): the relay's partial index of waiting dispatches. */
    static final String RELEASE = "/* bench-drain */ UPDATE outbox SET available_at = ? WHERE tenant_id LIKE ? "
            + "AND event_type = 'dispatch' AND published_at IS NULL";

    private final CamelContext context;
    private final DataSource dataSource;
    private final FakeProvider provider;
    private final List<AdmissionLoad> tenants;
    private final String tenantPattern;
    private final Calls calls = new Calls();
    /** The bench tenants' jobs that reached a final status, counted in process as the gateway moves them. */
    private final AtomicLong finished = new AtomicLong();

    DrainBench(CamelContext context, FakeProvider provider, List<AdmissionLoad> tenants, String tenantPrefix) {
        this.context = context;
        this.dataSource = context.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        this.provider = provider;
        this.tenants = tenants;
        this.tenantPattern = tenantPrefix + "%";
        // The wait for the end watches this count and asks the database only once it says all are done:
        // polling the open jobs by key every 50 ms was the drain's costliest statement (~1.5 ms of
        // PostgreSQL's CPU per job at 3,000 jobs), measured as the gateway's.
        context.getRegistry().lookupByNameAndType("jobTransitions", io.jobgate.job.JobTransitions.class)
                .observe((event, moved, change) -> {
                    if (event.to().terminal() && moved.tenantId().startsWith(tenantPrefix)) {
                        finished.incrementAndGet();
                    }
                });
    }

    /** Drains {@code jobs} (after an unmeasured warm-up drain), prints the figures and returns jobs/s. */
    double run(int jobs, int warmUpJobs, int clients) throws Exception {
        provider.loadAdapter(context);
        context.getManagementStrategy().addEventNotifier(calls);
        WorkerRoutes.start(context);
        try {
            boolean statements = statementsAvailable();
            if (warmUpJobs > 0) {
                // The same drain, smaller, unmeasured: on two cores C2 competes with the first minute of load.
                Figures warm = drain(warmUpJobs, clients, statements);
                System.out.printf("%nDrain warm-up: %d jobs at %.0f jobs/s%n", warmUpJobs, warm.perSecond);
            }
            Figures f = drain(jobs, clients, statements);
            f.print(jobs, tenants.size(), clients, statements);
            return f.perSecond;
        } finally {
            WorkerRoutes.stop(context);
            context.getManagementStrategy().removeEventNotifier(calls);
        }
    }

    private Figures drain(int jobs, int clients, boolean statements) throws Exception {
        ProviderGates gates = context.getRegistry().lookupByNameAndType("providerGates", ProviderGates.class);
        gates.close(FakeProvider.NAME, Instant.now().plusSeconds(3600), "bench: backlog held");
        long admitStart = System.nanoTime();
        UUID[] admitted = admit(jobs, clients);
        double admitSeconds = (System.nanoTime() - admitStart) / 1e9;
        // The admissions' "queued" status events go out first, so the drain is measured alone.
        waitUntil(STATUS_WAITING, 120);

        if (statements) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("SELECT pg_stat_statements_reset()"); // the top list is this drain's alone
            }
        }
        Snapshot before = snapshot(statements);
        calls.reset();
        Sampler sampler = new Sampler();
        long t0 = System.nanoTime();
        long finishedBefore = finished.get();
        release();
        Thread sampling = new Thread(sampler, "bench-drain-sampler");
        sampling.setDaemon(true);
        sampling.start();
        waitForDrain(admitted, finishedBefore);
        double seconds = (System.nanoTime() - t0) / 1e9;
        sampler.stop();
        sampling.join();
        long failed;
        try (Connection c = dataSource.getConnection()) {
            failed = failed(c, admitted); // after the clock stopped
        }
        Snapshot after = snapshot(statements);
        return new Figures(jobs / seconds, seconds, jobs / admitSeconds, failed, before, after, calls.copy(), sampler,
                statements ? topStatements() : List.of());
    }

    /** Opens the provider gate and makes the held backlog due at once, then wakes the relay. */
    private void release() throws Exception {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement();
                 PreparedStatement due = c.prepareStatement(RELEASE)) {
                s.execute("UPDATE provider_gates SET closed_until = '-infinity', closed_reason = NULL WHERE provider = '"
                        + FakeProvider.NAME + "'");
                due.setTimestamp(1, Timestamp.from(Instant.now().minusSeconds(1)));
                due.setString(2, tenantPattern);
                due.executeUpdate();
            }
            c.commit();
        }
        context.createProducerTemplate().sendBody(RelayWakeup.QUEUE, null);
    }

    /**
     * Admission beside processing (issue 12's mixed load): {@code loadClients} clients of one tenant
     * admit for {@code seconds} with a backlog of {@code jobs} held behind the closed gate (nothing is
     * processed), then again for as long while the backlog drains. Prints both rates, their ratio,
     * what the drain did meanwhile and the sessions' lock waits and idle-in-transaction time.
     *
     * @return admission's rate while draining over its idle rate
     */
    double mixed(int jobs, int clients, AdmissionLoad load, int loadClients, int seconds, int warmUpJobs) throws Exception {
        provider.loadAdapter(context);
        WorkerRoutes.start(context);
        try {
            if (warmUpJobs > 0) {
                // Both paths warm before either window (on two cores C2 otherwise compiles the drain's
                // path inside the "draining" window and takes its CPU from admission).
                Figures warm = drain(warmUpJobs, clients, false);
                System.out.printf("%nMixed warm-up: a %d-job drain at %.0f jobs/s (admitted at %.0f jobs/s)%n", warmUpJobs,
                        warm.perSecond, warm.admitPerSecond);
            }
            ProviderGates gates = context.getRegistry().lookupByNameAndType("providerGates", ProviderGates.class);
            gates.close(FakeProvider.NAME, Instant.now().plusSeconds(3600), "bench: backlog held");
            UUID[] backlog = admit(jobs, clients);
            waitUntil(STATUS_WAITING, 120);
            load.run(loadClients, Duration.ofSeconds(2), Duration.ZERO);
            Sampler idleSampler = new Sampler();
            Thread idleSampling = new Thread(idleSampler, "bench-mixed-idle-sampler");
            idleSampling.setDaemon(true);
            idleSampling.start();
            Cpu idleCpu = Cpu.start(dataSource);
            AdmissionLoad.Result idle = load.run(loadClients, Duration.ZERO, Duration.ofSeconds(seconds));
            idleCpu.stop(dataSource);
            idleSampler.stop();
            idleSampling.join();

            Sampler sampler = new Sampler();
            Thread sampling = new Thread(sampler, "bench-mixed-sampler");
            sampling.setDaemon(true);
            long finishedBefore = finished.get();
            release();
            sampling.start();
            Cpu busyCpu = Cpu.start(dataSource);
            AdmissionLoad.Result busy = load.run(loadClients, Duration.ZERO, Duration.ofSeconds(seconds));
            busyCpu.stop(dataSource);
            sampler.stop();
            sampling.join();
            long drained;
            try (Connection c = dataSource.getConnection()) {
                drained = jobs - stillOpen(c, backlog).length;
            }
            int n = Math.max(1, sampler.samples);
            System.out.printf("%nMixed load: %d clients admitting for %d s, first with a %,d-job backlog held (nothing "
                    + "processed), then while it drains%n", loadClients, seconds, jobs);
            System.out.printf("  admission idle:     %8.0f jobs/s  p50 %.2f ms  p99 %.2f ms%n", idle.perSecond(), idle.p50Millis(), idle.p99Millis());
            System.out.printf("  admission draining: %8.0f jobs/s  p50 %.2f ms  p99 %.2f ms  (ratio %.2f)%n", busy.perSecond(),
                    busy.p50Millis(), busy.p99Millis(), busy.perSecond() / Math.max(1e-9, idle.perSecond()));
            System.out.printf("  drained meanwhile:  %8.0f jobs/s  (%,d of %,d%s)%n", drained / (double) seconds, drained, jobs,
                    drained == jobs ? "; the backlog ran out within the window, so the rate is a floor" : "");
            System.out.printf("  CPU, cores busy (of %d): idle window JVM %.2f, PostgreSQL %s, JIT %.0f ms; draining window JVM %.2f, "
                    + "PostgreSQL %s, JIT %.0f ms%n", Runtime.getRuntime().availableProcessors(), idleCpu.jvmCores(), idleCpu.pgCores(),
                    idleCpu.jitMillis(), busyCpu.jvmCores(), busyCpu.pgCores(), busyCpu.jitMillis());
            System.out.printf("  the admission writer's session (share of samples): idle window %s; draining window %s%n",
                    idleSampler.writer(), sampler.writer());
            System.out.printf("  sessions (%d samples every 100 ms): waiting on a lock %.2f, idle in transaction %.2f (mean per sample)%n",
                    sampler.samples, (double) sampler.lockWaits / n, (double) sampler.idleInTransaction / n);
            System.out.printf("    of which on tenant_accounts rows: waiting for one %.2f, idle in a transaction holding one %.2f "
                    + "(idle window: %.2f, %.2f)%n", (double) sampler.tenantRowWaits / n, (double) sampler.tenantRowHeldIdle / n,
                    (double) idleSampler.tenantRowWaits / Math.max(1, idleSampler.samples),
                    (double) idleSampler.tenantRowHeldIdle / Math.max(1, idleSampler.samples));
            Figures.top("the admission writer waited for a lock held by", sampler.writerBlockedBy, n);
            Figures.top("idle in transaction after", sampler.idleOn, n);
            Figures.top("waiting on a lock in", sampler.waitingOn, n);
            if (idle.errors() + busy.errors() > 0) {
                System.out.printf("  %d admissions were not 202: %s%n", idle.errors() + busy.errors(),
                        busy.firstError() != null ? busy.firstError() : idle.firstError());
            }
            waitForDrain(backlog, finishedBefore);
            return busy.perSecond() / Math.max(1e-9, idle.perSecond());
        } finally {
            WorkerRoutes.stop(context);
        }
    }

    /** @return the admitted jobs' ids */
    private UUID[] admit(int jobs, int clients) throws Exception {
        UUID[] ids = new UUID[jobs];
        AtomicInteger next = new AtomicInteger();
        AtomicLong errors = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(clients);
        for (int i = 0; i < clients; i++) {
            pool.submit(() -> {
                int n;
                while ((n = next.getAndIncrement()) < jobs) {
                    try {
                        ids[n] = UUID.fromString(tenants.get(n % tenants.size()).postOne());
                    } catch (Exception e) {
                        if (errors.incrementAndGet() == 1) {
                            System.out.println("bench drain: admission failed: " + e.getMessage());
                        }
                    }
                }
            });
        }
        pool.shutdown();
        pool.awaitTermination(1, TimeUnit.HOURS);
        if (errors.get() > 0) {
            throw new IllegalStateException(errors.get() + " of " + jobs + " admissions failed");
        }
        return ids;
    }

    /**
     * Waits until none of {@code jobs} is open: until the in-process count of final jobs since
     * {@code finishedBefore} says so, then by the database (the count is told before an enclosing
     * transaction commits, and counts the bench tenants' other jobs too).
     */
    private void waitForDrain(UUID[] jobs, long finishedBefore) throws Exception {
        long lastProgress = System.nanoTime();
        long lastAsked = System.nanoTime() - TimeUnit.SECONDS.toNanos(1); // nanoTime may be negative: no 0 as "never"
        long seen = -1;
        try (Connection c = dataSource.getConnection()) {
            UUID[] open = jobs;
            while (open.length > 0) {
                long done = finished.get() - finishedBefore;
                long now = System.nanoTime();
                if (done != seen) {
                    seen = done;
                    lastProgress = now;
                }
                boolean stalled = now - lastProgress > TimeUnit.SECONDS.toNanos(60);
                if ((done >= jobs.length || stalled) && now - lastAsked > TimeUnit.MILLISECONDS.toNanos(50)) {
                    lastAsked = now;
                    open = stillOpen(c, open);
                    if (stalled && open.length > 0) {
                        throw new IllegalStateException("drain stalled: " + open.length + " of " + jobs.length
                                + " jobs still open after 60 s without progress");
                    }
                }
                if (open.length > 0) {
                    TimeUnit.MILLISECONDS.sleep(5); // a poll of an in-process count, not a measured wait
                }
            }
        }
    }

    /** Those of {@code jobs} that are still open. */
    static UUID[] stillOpen(Connection c, UUID[] jobs) throws java.sql.SQLException {
        List<UUID> open = new ArrayList<>();
        try (PreparedStatement p = c.prepareStatement(STILL_OPEN)) {
            p.setArray(1, c.createArrayOf("uuid", jobs));
            try (ResultSet rs = p.executeQuery()) {
                while (rs.next()) {
                    open.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return open.toArray(UUID[]::new);
    }

    /** How many of {@code jobs} failed. */
    static long failed(Connection c, UUID[] jobs) throws java.sql.SQLException {
        try (PreparedStatement p = c.prepareStatement(FAILED)) {
            p.setArray(1, c.createArrayOf("uuid", jobs));
            try (ResultSet rs = p.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private void waitUntil(String countSql, int seconds) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        try (Connection c = dataSource.getConnection(); PreparedStatement p = c.prepareStatement(countSql)) {
            p.setString(1, tenantPattern);
            while (System.nanoTime() < deadline) {
                try (ResultSet rs = p.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) == 0) {
                        return;
                    }
                }
                TimeUnit.MILLISECONDS.sleep(100);
            }
        }
    }

    // ---- what is counted ----

    private boolean statementsAvailable() {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            s.executeQuery("SELECT count(*) FROM pg_stat_statements").close();
            return true;
        } catch (Exception e) {
            System.out.println("(pg_stat_statements not available: start PostgreSQL with "
                    + "shared_preload_libraries=pg_stat_statements for statement figures)");
            return false;
        }
    }

    private record Snapshot(long cpuNanos, Long pgCpuTicks, long commits, long rollbacks, Long walSyncs, Long walBytes,
                            Long walRecords, long calls) {
    }

    private Snapshot snapshot(boolean statements) throws Exception {
        long cpu = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            long commits;
            long rollbacks;
            try (ResultSet rs = s.executeQuery("SELECT pg_stat_force_next_flush()")) {
                rs.next();
            } catch (Exception e) {
                // PostgreSQL < 15: counters are flushed by the backends themselves, a little later.
            }
            try (ResultSet rs = s.executeQuery("SELECT xact_commit, xact_rollback FROM pg_stat_database WHERE datname = current_database()")) {
                rs.next();
                commits = rs.getLong(1);
                rollbacks = rs.getLong(2);
            }
            Long walSyncs = null;
            Long walBytes = null;
            Long walRecords = null;
            try (ResultSet rs = s.executeQuery("SELECT wal_sync, wal_bytes, wal_records FROM pg_stat_wal")) {
                rs.next();
                walSyncs = rs.getLong(1);
                walBytes = rs.getLong(2);
                walRecords = rs.getLong(3);
            } catch (Exception e) {
                // PostgreSQL < 14
            }
            long calls = 0;
            if (statements) {
                try (ResultSet rs = s.executeQuery("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                        + "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                        + "AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%bench-drain%'")) {
                    rs.next();
                    calls = rs.getLong(1);
                }
            }
            return new Snapshot(cpu, postgresCpuTicks(s), commits, rollbacks, walSyncs, walBytes, walRecords, calls);
        }
    }

    /** CPU ticks of the server's processes, when it runs on this machine and /proc can be read. */
    static Long postgresCpuTicks(Statement s) {
        try (ResultSet rs = s.executeQuery("SELECT current_setting('data_directory')")) {
            rs.next();
            Path pidFile = Path.of(rs.getString(1), "postmaster.pid");
            long postmaster = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
            long ticks = 0;
            try (var procs = Files.list(Path.of("/proc"))) {
                for (Path proc : (Iterable<Path>) procs::iterator) {
                    String name = proc.getFileName().toString();
                    if (!name.chars().allMatch(Character::isDigit)) {
                        continue;
                    }
                    try {
                        String stat = Files.readString(proc.resolve("stat"));
                        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                        long pid = Long.parseLong(name);
                        if (pid == postmaster || Long.parseLong(f[1]) == postmaster) {
                            ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]);
                        }
                    } catch (Exception gone) {
                        // the process ended meanwhile
                    }
                }
            }
            return ticks;
        } catch (Exception e) {
            return null;
        }
    }

    private List<String> topStatements() throws Exception {
        List<String> lines = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT calls, total_exec_time, "
                     + "left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements "
                     + "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                     + "AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%bench-drain%' "
                     + "ORDER BY total_exec_time DESC LIMIT 10")) {
            while (rs.next()) {
                lines.add(String.format("%10d %10.0f %s", rs.getLong(1), rs.getDouble(2), rs.getString(3)));
            }
        }
        return lines;
    }

    /** S3 operations, adapter calls and output stores (count and time), worker messages and relay commits. */
    static final class Calls extends EventNotifierSupport {
        final Map<String, LongAdder[]> sent = new ConcurrentHashMap<>();
        final LongAdder workerMessages = new LongAdder();
        final LongAdder workerNanos = new LongAdder();
        final LongAdder relayCommits = new LongAdder();

        @Override
        public void notify(CamelEvent event) {
            if (event instanceof CamelEvent.ExchangeSentEvent e) {
                String key = key(e.getEndpoint().getEndpointUri());
                if (key != null) {
                    LongAdder[] a = sent.computeIfAbsent(key, k -> new LongAdder[] {new LongAdder(), new LongAdder()});
                    a[0].increment();
                    a[1].add(e.getTimeTaken());
                }
            } else if (event instanceof CamelEvent.ExchangeCompletedEvent e) {
                Exchange x = e.getExchange();
                if (x.getProperty(Exchange.CORRELATION_ID) != null) {
                    return; // a copy (enrich), not a consumed message
                }
                // The call's hand-off (a wire tap) completes a copy of the worker's exchange too, after the call: only
                // the exchange of the consumed message itself still carries it (the copy's became the adapter's request).
                if ("worker".equals(x.getFromRouteId()) && x.getIn() instanceof org.apache.camel.component.jms.JmsMessage) {
                    workerMessages.increment();
                    workerNanos.add(TimeUnit.MILLISECONDS.toNanos(x.getClock().elapsed()));
                } else if ("outbox-relay".equals(x.getFromRouteId()) && x.getProperty("dispatched", 0, Integer.class) > 0
                        || "outbox-status-relay".equals(x.getFromRouteId()) && x.getProperty("announced", 0, Integer.class) > 0) {
                    relayCommits.increment();
                }
            }
        }

        private static String key(String uri) {
            if (uri.startsWith("aws2-s3:")) {
                return uri.contains("operation=copyObject") ? "s3 copy" : uri.contains("operation=deleteObject") ? "s3 delete"
                        : uri.contains("operation=") ? "s3 other" : "s3 put";
            }
            if (uri.startsWith("direct://provider-call")) {
                return "call hand-off"; // the whole call on the call executor, the adapter's inside it
            }
            if (uri.startsWith("direct://provider-")) {
                return "adapter call";
            }
            if (uri.equals("direct://store-output")) {
                return "store output"; // the whole of it, the in-memory or quarantine route it goes on to inside
            }
            return null;
        }

        void reset() {
            sent.clear();
            workerMessages.reset();
            workerNanos.reset();
            relayCommits.reset();
        }

        Calls copy() {
            Calls c = new Calls();
            sent.forEach((k, v) -> c.sent.put(k, new LongAdder[] {adder(v[0].sum()), adder(v[1].sum())}));
            c.workerMessages.add(workerMessages.sum());
            c.workerNanos.add(workerNanos.sum());
            c.relayCommits.add(relayCommits.sum());
            return c;
        }

        private static LongAdder adder(long v) {
            LongAdder a = new LongAdder();
            a.add(v);
            return a;
        }
    }

    /** pg_stat_activity every 100 ms: how many sessions run, wait on a lock, or sit idle in a transaction, and on what. */
    /** The admission writer's statements (AdmissionWriter), as pg_stat_activity shows them (whitespace folded). */
    static final String WRITER_LOCK_GATEWAY = "SELECT g.in_flight";
    static final String WRITER_LOCK_TENANTS = "SELECT a.tenant_id, a.open_jobs";
    static final String WRITER_INSERT = "WITH input AS";
    /** The gateway's and the tenants' locks as one statement (AdmissionWriter since 2026-12-01). */
    static final String WRITER_LOCKS = "WITH gateway AS";

    /** CPU over a window: the gateway JVM's, PostgreSQL's processes' (when local) and the JIT's compile time. */
    static final class Cpu {
        private final long jvm0;
        private final Long pg0;
        private final long jit0;
        private final long wall0 = System.nanoTime();
        private long jvm;
        private Long pg;
        private long jit;
        private long wall;

        private Cpu(long jvm0, Long pg0, long jit0) {
            this.jvm0 = jvm0;
            this.pg0 = pg0;
            this.jit0 = jit0;
        }

        static Cpu start(DataSource ds) throws Exception {
            return new Cpu(jvmNanos(), pgTicks(ds), ManagementFactory.getCompilationMXBean().getTotalCompilationTime());
        }

        void stop(DataSource ds) throws Exception {
            wall = System.nanoTime() - wall0;
            jvm = jvmNanos() - jvm0;
            Long after = pgTicks(ds);
            pg = after == null || pg0 == null ? null : after - pg0;
            jit = ManagementFactory.getCompilationMXBean().getTotalCompilationTime() - jit0;
        }

        double jvmCores() {
            return (double) jvm / wall;
        }

        String pgCores() {
            return pg == null ? "n/a" : String.format("%.2f", pg * 10e6 / wall);
        }

        double jitMillis() {
            return jit;
        }

        long jvmUsedNanos() {
            return jvm;
        }

        /** PostgreSQL's processes' CPU ticks (10 ms each) over the window; null when not local. */
        Long pgUsedTicks() {
            return pg;
        }

        private static long jvmNanos() {
            return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        }

        private static Long pgTicks(DataSource ds) throws Exception {
            try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
                return postgresCpuTicks(s);
            }
        }
    }

    final class Sampler implements Runnable {
        private volatile boolean running = true;
        int samples;
        long active;
        long idleInTransaction;
        long lockWaits;
        /** Sessions waiting for a {@code tenant_accounts} row; idle in a transaction that locked or wrote one. */
        long tenantRowWaits;
        long tenantRowHeldIdle;
        final Map<String, Integer> idleOn = new LinkedHashMap<>();
        final Map<String, Integer> waitingOn = new LinkedHashMap<>();
        /** The admission writer's session, by what it was doing (its statements are known). */
        final Map<String, Integer> writerStates = new java.util.TreeMap<>();
        /** What held the lock the admission writer waited for (the state and statement of the first session blocking it). */
        final Map<String, Integer> writerBlockedBy = new LinkedHashMap<>();

        /** The writer's states as shares of the samples ("none" when it was never seen inside a transaction). */
        String writer() {
            if (writerStates.isEmpty()) {
                return "not seen in a transaction";
            }
            int n = Math.max(1, samples);
            StringBuilder out = new StringBuilder();
            int inTx = 0;
            for (var e : writerStates.entrySet()) {
                inTx += e.getValue();
                out.append(out.length() == 0 ? "" : ", ").append(String.format("%s %.2f", e.getKey(), (double) e.getValue() / n));
            }
            return String.format("in a transaction %.2f (%s)", (double) inTx / n, out);
        }

        void stop() {
            running = false;
        }

        @Override
        public void run() {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                while (running) {
                    samples++;
                    try (ResultSet rs = s.executeQuery("SELECT a.state, a.wait_event_type, "
                            + "left(regexp_replace(a.query, '\\s+', ' ', 'g'), 90), "
                            + "(SELECT left(b.state || ': ' || regexp_replace(b.query, '\\s+', ' ', 'g'), 60) FROM pg_stat_activity b "
                            + "WHERE b.pid = (pg_blocking_pids(a.pid))[1]), "
                            // A row lock waited for shows as the waiter's tuple lock on the row's table; a row
                            // locked or written shows as the holder's RowShare / RowExclusive lock on its table.
                            + "EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'tuple' "
                            + "AND l.relation = 'tenant_accounts'::regclass), "
                            + "EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation' "
                            + "AND l.relation = 'tenant_accounts'::regclass AND l.mode IN ('RowShareLock', 'RowExclusiveLock')) "
                            + "FROM pg_stat_activity a "
                            + "WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend' "
                            + "AND a.state <> 'idle' AND a.query NOT LIKE '%bench-drain%'")) {
                        while (rs.next()) {
                            String state = rs.getString(1);
                            String query = rs.getString(3);
                            if (query != null && (query.startsWith(WRITER_LOCK_GATEWAY) || query.startsWith(WRITER_LOCK_TENANTS)
                                    || query.startsWith(WRITER_LOCKS) || query.startsWith(WRITER_INSERT))) {
                                boolean idleInTx = "idle in transaction".equals(state);
                                String at = query.startsWith(WRITER_INSERT) ? "insert" : query.startsWith(WRITER_LOCK_GATEWAY) ? "gateway lock"
                                        : query.startsWith(WRITER_LOCKS) ? "locks" : "tenant lock";
                                writerStates.merge((idleInTx ? "idle in tx after " : "Lock".equals(rs.getString(2)) ? "lock wait in " : "running ")
                                        + at, 1, Integer::sum);
                            }
                            if ("idle in transaction".equals(state)) {
                                idleInTransaction++;
                                idleOn.merge(query, 1, Integer::sum);
                                if (rs.getBoolean(6)) {
                                    tenantRowHeldIdle++;
                                }
                            } else {
                                active++;
                                if ("Lock".equals(rs.getString(2))) {
                                    lockWaits++;
                                    if (rs.getBoolean(5)) {
                                        tenantRowWaits++;
                                    }
                                    waitingOn.merge(query, 1, Integer::sum);
                                    if (query != null && query.startsWith("SELECT a.tenant_id") || query != null && query.startsWith(WRITER_LOCKS)) {
                                        writerBlockedBy.merge(String.valueOf(rs.getString(4)), 1, Integer::sum);
                                    }
                                }
                            }
                        }
                    }
                    TimeUnit.MILLISECONDS.sleep(100);
                }
            } catch (Exception e) {
                System.out.println("bench drain: pg_stat_activity sampling stopped: " + e);
            }
        }
    }

    private record Figures(double perSecond, double seconds, double admitPerSecond, long failed, Snapshot before,
                           Snapshot after, Calls calls, Sampler sampler, List<String> statements) {

        void print(int jobs, int tenantCount, int clients, boolean withStatements) {
            double cpuMs = (after.cpuNanos - before.cpuNanos) / 1e6 / jobs;
            System.out.printf("%nDrain: %,d image jobs of %d tenants admitted (%d HTTP clients, %.0f jobs/s) behind a closed "
                    + "provider gate, then released at once; provider answers at once with a PNG at the adapter's size%n",
                    jobs, tenantCount, clients, admitPerSecond);
            System.out.printf("  drained: %.0f jobs/s (%.1f s)%s%n", perSecond, seconds,
                    failed == 0 ? ", all succeeded" : ", " + failed + " failed");
            System.out.printf("  CPU per completed job: gateway JVM %.2f ms%s%n", cpuMs,
                    after.pgCpuTicks == null || before.pgCpuTicks == null ? ""
                            : String.format(", PostgreSQL %.2f ms (its processes alive at both ends)",
                            (after.pgCpuTicks - before.pgCpuTicks) * 10.0 / jobs));
            System.out.println("  per job:");
            System.out.printf("    DB transactions %.2f (rollbacks %.2f)%s%n", per(after.commits - before.commits, jobs),
                    per(after.rollbacks - before.rollbacks, jobs),
                    withStatements ? String.format(", statements %.2f", per(after.calls - before.calls, jobs)) : "");
            if (after.walSyncs != null) {
                System.out.printf("    WAL: syncs %.2f, records %.1f, %.1f KiB%n", per(after.walSyncs - before.walSyncs, jobs),
                        per(after.walRecords - before.walRecords, jobs), per(after.walBytes - before.walBytes, jobs) / 1024);
            }
            System.out.printf("    JMS: dispatch messages consumed %.2f (one transacted commit each), relay publish commits %.3f%n",
                    per(calls.workerMessages.sum(), jobs), per(calls.relayCommits.sum(), jobs));
            long s3 = calls.sent.entrySet().stream().filter(e -> e.getKey().startsWith("s3")).mapToLong(e -> e.getValue()[0].sum()).sum();
            System.out.printf("    S3 calls %.2f%n", per(s3, jobs));
            System.out.printf("  wall time per call (ms, summed over threads, divided by jobs):%n");
            System.out.printf("    %-14s %8s %10s %10s%n", "step", "calls/job", "ms/call", "ms/job");
            System.out.printf("    %-14s %8.2f %10.2f %10.2f%n", "worker message", per(calls.workerMessages.sum(), jobs),
                    calls.workerMessages.sum() == 0 ? 0 : calls.workerNanos.sum() / 1e6 / calls.workerMessages.sum(),
                    calls.workerNanos.sum() / 1e6 / jobs);
            calls.sent.entrySet().stream().sorted(Map.Entry.comparingByKey()).forEach(e -> {
                long n = e.getValue()[0].sum();
                long ms = e.getValue()[1].sum();
                System.out.printf("    %-14s %8.2f %10.2f %10.2f%n", e.getKey(), per(n, jobs), n == 0 ? 0 : (double) ms / n, per(ms, jobs));
            });
            if (!statements.isEmpty()) {
                System.out.println("  top statements by total time (pg_stat_statements):");
                System.out.printf("    %10s %10s %s%n", "calls", "total ms", "query");
                statements.forEach(l -> System.out.println("    " + l));
            }
            int n = Math.max(1, sampler.samples);
            System.out.printf("  sessions (pg_stat_activity, %d samples every 100 ms): running %.2f, waiting on a lock %.2f, "
                    + "idle in transaction %.2f (mean per sample)%n", sampler.samples, (double) sampler.active / n,
                    (double) sampler.lockWaits / n, (double) sampler.idleInTransaction / n);
            top("idle in transaction after", sampler.idleOn, n);
            top("waiting on a lock in", sampler.waitingOn, n);
        }

        private static void top(String title, Map<String, Integer> counts, int samples) {
            if (counts.isEmpty()) {
                return;
            }
            System.out.println("    " + title + " (mean sessions per sample):");
            counts.entrySet().stream().sorted(Map.Entry.<String, Integer>comparingByValue().reversed()).limit(5)
                    .forEach(e -> System.out.printf("      %5.2f  %s%n", (double) e.getValue() / samples, e.getKey()));
        }

        private static double per(long value, int jobs) {
            return (double) value / jobs;
        }
    }
}
