package io.jobgate.ops;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.jobgate.job.JobCounts;
import io.jobgate.job.JobStatus;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * jobgate's own series beside Camel's, in Prometheus text at {@code /observe/metrics}. Counters
 * count on the instance that did the work; gauges that need a query are refreshed on a schedule
 * (routes/metrics.camel.yaml) from PostgreSQL, so every instance reports the same truth. Labels are
 * ids (tenant, provider, status, category), never user text.
 */
public final class Meters {

    private final org.apache.camel.CamelContext context;
    private final JdbcTemplate jdbc;
    /** The counts of jobs the gauges show (built on {@code jdbc}). */
    private final JobCounts jobCounts;
    private final Clock clock;
    private volatile MeterRegistry registry;
    private final List<String> providers;
    private volatile SnapshotGauges queueJobs;
    private volatile SnapshotGauges oldestAge;
    private volatile SnapshotGauges leasesActive;
    private volatile SnapshotGauges webhookBacklog;
    private volatile SnapshotGauges gateOpen;
    private volatile Timer reconcileLag;

    /** Buckets of the reconciliation lag: a webhook in seconds, a poll in tens of seconds, a stuck provider in hours. */
    static final Duration[] RECONCILE_LAG_BUCKETS = Stream.of(1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 21_600, 86_400)
            .map(Duration::ofSeconds).toArray(Duration[]::new);

    /** @param providers the configured providers: each has a gate and a lease count, 0 included */
    public Meters(org.apache.camel.CamelContext context, JdbcTemplate jdbc, Clock clock, List<String> providers) {
        this.context = context;
        this.jdbc = jdbc;
        this.jobCounts = new JobCounts(jdbc);
        this.clock = clock;
        this.providers = List.copyOf(providers);
    }

    /** Camel's own registry (camel-micrometer binds it while the context starts): one endpoint for all series. */
    private MeterRegistry registry() {
        MeterRegistry r = registry;
        if (r == null) {
            java.util.Set<MeterRegistry> found = context.getRegistry().findByType(MeterRegistry.class);
            r = found.stream().filter(m -> m.getClass().getSimpleName().startsWith("Prometheus")).findFirst()
                    .orElse(found.stream().findFirst().orElse(null));
            if (r == null) {
                r = new io.micrometer.core.instrument.simple.SimpleMeterRegistry(); // metrics off: count into nothing served
            }
            registry = r;
        }
        return r;
    }

    /** A job reached a terminal state ({@code category}: the failure's, null for a success). */
    public void jobFinished(String tenant, String status, String category) {
        counter("jobgate_jobs_finished_total", "terminal jobs by status and category",
                "tenant", tenant, "status", status, "category", category == null ? "" : category).increment();
    }

    /** An attempt ended: {@code succeeded}, {@code pending}, or its error category. */
    public void attempt(String provider, String tenant, String outcome) {
        counter("jobgate_attempts_total", "attempt outcomes", "provider", provider, "tenant", tenant, "outcome", outcome).increment();
    }

    /** The same outcome by adapter revision (no tenant: few series), what a canary's gates compare. */
    public void revisionAttempt(String provider, String revision, String outcome) {
        counter("jobgate_revision_attempts_total", "attempt outcomes by adapter revision", "provider", provider,
                "revision", revision, "outcome", outcome).increment();
    }

    /** A canary candidate was stopped: by a gate ({@code error_rate}, {@code p95_latency}, {@code invalid_output}, …) or {@code operator}. */
    public void canaryStopped(String provider, String gate) {
        counter("jobgate_canary_stops_total", "canary candidates stopped, by the gate crossed", "provider", provider, "gate", gate)
                .increment();
    }

    /** An output read back by the evaluator: its fields right and wrong, and whether its totals all read right, by revision. */
    public void evaluated(String provider, String revision, int correct, int total, boolean totalsCorrect) {
        counter("jobgate_evaluated_fields_total", "invoice fields read back by the evaluator", "provider", provider,
                "revision", revision, "outcome", "correct").increment(correct);
        counter("jobgate_evaluated_fields_total", "invoice fields read back by the evaluator", "provider", provider,
                "revision", revision, "outcome", "wrong").increment(total - correct);
        counter("jobgate_evaluations_total", "outputs read back by the evaluator, by whether their totals read right",
                "provider", provider, "revision", revision, "totals", totalsCorrect ? "correct" : "wrong").increment();
    }

    /** A cancelled job's task the provider was asked to stop: {@code cancelled}, or what the call ended in instead. */
    public void providerCancel(String provider, String outcome) {
        counter("jobgate_provider_cancels_total", "asks to stop a cancelled job's task, by the adapter's answer", "provider", provider,
                "outcome", outcome).increment();
    }

    public void rateLimited(String provider, String tenant) {
        counter("jobgate_provider_rate_limited_total", "429 answers of providers", "provider", provider, "tenant", tenant).increment();
    }

    public void admissionRefused(String tenant, String code) {
        counter("jobgate_admission_refusals_total", "refused admissions by problem code",
                "tenant", tenant == null ? "" : tenant, "code", code).increment();
    }

    /** Refused admissions per tenant, since this instance started (the operator console's overview). */
    public java.util.Map<String, Long> refusalsByTenant() {
        java.util.Map<String, Long> byTenant = new java.util.TreeMap<>();
        for (Counter c : registry().find("jobgate_admission_refusals_total").counters()) {
            byTenant.merge(String.valueOf(c.getId().getTag("tenant")), (long) c.count(), Long::sum);
        }
        return byTenant;
    }

    /** Units of a succeeded job ({@code image}, {@code audio_minute}): attempts per unit is a ratio of two series. */
    public void unitsCompleted(String provider, String tenant, String unit, double units) {
        counter("jobgate_completed_units_total", "units of succeeded jobs", "provider", provider, "tenant", tenant, "unit", unit)
                .increment(units);
    }

    /** Money moved by the ledger ({@code debit}, {@code refund}), in micros, as a positive amount. */
    public void ledger(String tenant, String kind, long micros) {
        counter("jobgate_ledger_micros_total", "ledger debits and refunds in micros", "tenant", tenant, "kind", kind)
                .increment(Math.abs(micros));
    }

    /**
     * What admission metered, per tenant and operation (the job's kind: a call's transcription and its summary
     * are two): units in their unit ({@code audio_minutes}, {@code tokens}, …) and the money debited for them.
     */
    public void metered(String tenant, String operation, String unit, long units, long micros) {
        counter("jobgate_metered_units_total", "units metered at admission", "tenant", tenant, "operation", operation, "unit", unit)
                .increment(units);
        counter("jobgate_metered_micros_total", "money debited at admission", "tenant", tenant, "operation", operation)
                .increment(Math.abs(micros));
    }

    /** A job waiting on its provider ({@code provider_pending}, {@code submission_unknown}) got its evidence applied. */
    public void reconciled(Duration lag) {
        reconcileLag().record(lag.isNegative() ? Duration.ZERO : lag);
    }

    private Timer reconcileLag() {
        Timer t = reconcileLag;
        if (t == null) {
            t = Timer.builder("jobgate_reconcile_lag_seconds")
                    .description("from a job entering provider_pending or submission_unknown to its evidence being applied")
                    .serviceLevelObjectives(RECONCILE_LAG_BUCKETS).register(registry());
            reconcileLag = t;
        }
        return t;
    }

    /**
     * A counter by name and tag values, registered once: registering it again for every count (sorted tags,
     * a meter id, the registry's lookup) was ~3 % of a drain's JVM samples. Nothing removes these counters.
     */
    private Counter counter(String name, String description, String... tags) {
        List<String> key = new java.util.ArrayList<>(tags.length + 1);
        key.add(name);
        java.util.Collections.addAll(key, tags);
        Counter known = counters.get(key);
        return known != null ? known : counters.computeIfAbsent(key,
                k -> Counter.builder(name).description(description).tags(tags).register(registry()));
    }

    private final Map<List<String>, Counter> counters = new java.util.concurrent.ConcurrentHashMap<>();

    private volatile java.util.function.IntSupplier callsInFlight;
    private volatile java.util.function.IntSupplier callsPeak;
    private volatile java.util.function.LongSupplier callsStarted;
    private volatile int maxCalls;
    private volatile java.util.function.LongSupplier startsHeldAtCap;
    private volatile java.util.function.IntSupplier callsWaitingToFinish;
    private volatile java.util.Map<String, Integer> callCapacity = java.util.Map.of();

    /**
     * Provider calls of this instance (docs/operating.md, "Calls in flight"): how many are in flight now and
     * at most since start, handed off in all, and per provider how many may be in flight (its
     * {@code max-concurrency}, over all instances). Served from the first refresh on, read at each scrape.
     */
    public void providerCalls(java.util.function.IntSupplier inFlight, java.util.function.IntSupplier peak,
                              java.util.function.LongSupplier started, java.util.function.IntSupplier waitingToFinish,
                              java.util.Map<String, Integer> capacity, int maxCalls, java.util.function.LongSupplier startsHeldAtCap) {
        this.callsWaitingToFinish = waitingToFinish;
        this.maxCalls = maxCalls;
        this.startsHeldAtCap = startsHeldAtCap;
        this.callsInFlight = inFlight;
        this.callsPeak = peak;
        this.callsStarted = started;
        this.callCapacity = java.util.Map.copyOf(capacity);
    }

    private volatile java.util.function.LongSupplier answersHeldBytes;
    private volatile java.util.function.LongSupplier answersOnDiskBytes;
    private volatile java.util.function.LongSupplier answersSetAside;

    /** Answers' outputs between their call and their record: bytes in memory, bytes waiting on disk, answers set aside. */
    public void answersInMemory(java.util.function.LongSupplier heldBytes, java.util.function.LongSupplier onDiskBytes,
                                java.util.function.LongSupplier setAsideTotal) {
        this.answersHeldBytes = heldBytes;
        this.answersOnDiskBytes = onDiskBytes;
        this.answersSetAside = setAsideTotal;
    }

    private void registerAnswersInMemory() {
        if (answersHeldBytes == null) {
            return;
        }
        io.micrometer.core.instrument.Gauge.builder("jobgate_worker_answer_output_bytes_in_memory", answersHeldBytes, s -> s.getAsLong())
                .description("bytes of answers' outputs held in memory between their call and their record")
                .register(registry());
        io.micrometer.core.instrument.Gauge.builder("jobgate_worker_answer_output_bytes_on_disk", answersOnDiskBytes, s -> s.getAsLong())
                .description("bytes of answers' outputs waiting on disk for their answer to be finished")
                .register(registry());
        io.micrometer.core.instrument.FunctionCounter.builder("jobgate_worker_answers_set_aside_total", answersSetAside, s -> s.getAsLong())
                .description("answers whose output waited on disk (jobgate.worker.answers-in-memory-max-bytes was held)")
                .register(registry());
    }

    private volatile java.util.function.IntSupplier waitingReads;

    /** Reads waiting on this instance for their job to end ({@code GET /v1/jobs/{id}?wait=N}). */
    public void waitingReads(java.util.function.IntSupplier waiting) {
        this.waitingReads = waiting;
    }

    /** A waiting read ended: {@code final}, {@code timed_out}, {@code disconnected}, {@code over_cap}, {@code stopped}. */
    public void waitingReadEnded(String ended) {
        counter("jobgate_api_waiting_reads_ended_total", "waiting reads of this instance by how their wait ended", "ended", ended)
                .increment();
    }

    private volatile java.util.function.IntSupplier leaseWaits;

    /** Workers' long polls waiting on this instance for tasks ({@code POST /v1/workers/{member}/leases}, wait_seconds). */
    public void leaseWaits(java.util.function.IntSupplier waiting) {
        this.leaseWaits = waiting;
    }

    /** A long poll ended: {@code handed}, {@code tasks}, {@code timed_out}, {@code disconnected}, {@code over_cap}, {@code stopped}. */
    public void leaseWaitEnded(String ended) {
        counter("jobgate_worker_lease_waits_ended_total", "workers' long polls of this instance by how their wait ended", "ended",
                ended).increment();
    }

    private void registerWaitingReads() {
        if (leaseWaits != null) {
            io.micrometer.core.instrument.Gauge.builder("jobgate_worker_lease_waits", leaseWaits, s -> s.getAsInt())
                    .description("workers' long polls of this instance waiting now for tasks to lease")
                    .register(registry());
        }
        if (waitingReads != null) {
            io.micrometer.core.instrument.Gauge.builder("jobgate_api_waiting_reads", waitingReads, s -> s.getAsInt())
                    .description("reads of this instance waiting now for their job to end (GET /v1/jobs/{id}?wait=N)")
                    .register(registry());
        }
    }

    private void registerProviderCalls() {
        if (callsInFlight == null) {
            return;
        }
        io.micrometer.core.instrument.Gauge.builder("jobgate_worker_calls_in_flight", callsInFlight, s -> s.getAsInt())
                .description("provider calls of this instance in flight now (started, not yet recorded)").register(registry());
        io.micrometer.core.instrument.Gauge.builder("jobgate_worker_calls_in_flight_peak", callsPeak, s -> s.getAsInt())
                .description("the most provider calls of this instance in flight at once since it started").register(registry());
        io.micrometer.core.instrument.Gauge.builder("jobgate_worker_answers_waiting", callsWaitingToFinish, s -> s.getAsInt())
                .description("answers waiting for a place to be finished (jobgate.worker.finish-concurrency)").register(registry());
        io.micrometer.core.instrument.FunctionCounter.builder("jobgate_worker_calls_total", callsStarted, s -> s.getAsLong())
                .description("provider calls this instance started").register(registry());
        if (maxCalls > 0) {
            int max = maxCalls;
            io.micrometer.core.instrument.Gauge.builder("jobgate_worker_max_calls", () -> max)
                    .description("calls this instance carries at once at most (jobgate.worker.max-calls)").register(registry());
            io.micrometer.core.instrument.FunctionCounter.builder("jobgate_worker_starts_held_total", startsHeldAtCap, s -> s.getAsLong())
                    .description("starts that waited for a call place of this instance (jobgate.worker.max-calls)").register(registry());
        }
        callCapacity.forEach((provider, limit) -> io.micrometer.core.instrument.Gauge.builder("jobgate_provider_call_capacity",
                        () -> limit).tag("provider", provider)
                .description("calls that may be in flight to the provider from all instances (its max-concurrency)")
                .register(registry()));
    }

    /**
     * A provider's answer that came back after its attempt's lease ran out: {@code finalized} (the job
     * still waited on that attempt and took the answer) or {@code recorded} (a newer attempt or an ending
     * came first; the answer is kept on its attempt, billed units included).
     */
    public void lateAnswer(String provider, String outcome) {
        counter("jobgate_late_answers_total", "provider answers that arrived after their lease ran out", "provider", provider,
                "outcome", outcome).increment();
    }

    /**
     * An attempt to deliver a tenant's webhook ended: {@code delivered}, {@code retry}, {@code dead} (its schedule
     * used up) or {@code dropped} (its endpoint gone); how long the receiver took.
     */
    public void tenantWebhook(String tenant, String outcome, Duration took) {
        counter("jobgate_tenant_webhook_attempts_total", "attempts to deliver tenants' webhooks, by what they came to",
                "tenant", tenant, "outcome", outcome).increment();
        Timer.builder("jobgate_tenant_webhook_seconds").description("how long tenants' webhook receivers took to answer")
                .tags("tenant", tenant).register(registry()).record(took);
    }

    /** Route step (on a schedule): the gauges that need a query. */
    public void refresh(Exchange exchange) {
        if (queueJobs == null) {
            // Not MultiGauge (SnapshotGauges says why); a tag set no longer seen reports what no rows would.
            queueJobs = new SnapshotGauges("jobgate_queue_jobs", "open jobs per tenant and status", 0, registry());
            oldestAge = new SnapshotGauges("jobgate_queue_oldest_age_seconds",
                    "age of the oldest eligible (due, not running) job per tenant", 0, registry());
            leasesActive = new SnapshotGauges("jobgate_leases_active", "live leases per provider", 0, registry());
            webhookBacklog = new SnapshotGauges("jobgate_tenant_webhook_backlog_age_seconds",
                    "age of the oldest due, undelivered webhook delivery per tenant", 0, registry());
            gateOpen = new SnapshotGauges("jobgate_provider_gate_open",
                    "1 when the provider's gate is open, 0 while a Retry-After (or readiness) keeps it closed", 1, registry());
            reconcileLag(); // served from the start (count 0), so its panel and rates have a series to read
            registerProviderCalls();
            registerWaitingReads();
            registerAnswersInMemory();
        }
        java.sql.Timestamp now = java.sql.Timestamp.from(clock.instant());
        // Every tenant and open status, 0 included: a series that drops to 0 instead of vanishing.
        List<String> tenants = jdbc.queryForList("SELECT tenant_id FROM tenants ORDER BY tenant_id", String.class);
        Map<String, Map<JobStatus, Long>> open = new java.util.HashMap<>();
        for (JobCounts.Open o : jobCounts.open()) {
            open.computeIfAbsent(o.tenantId(), t -> new java.util.EnumMap<>(JobStatus.class)).put(o.status(), o.jobs());
        }
        Map<Tags, Double> queueRows = new java.util.HashMap<>();
        for (String tenant : tenants) {
            for (JobStatus status : JobStatus.values()) {
                if (!status.terminal()) {
                    queueRows.put(Tags.of("tenant", tenant, "status", status.wire()),
                            open.getOrDefault(tenant, Map.of()).getOrDefault(status, 0L).doubleValue());
                }
            }
        }
        queueJobs.publish(queueRows);
        // Eligible: a dispatch event due and not yet out (a tenant with none reports 0). Per tenant the first
        // entry of the dispatch index (outbox_dispatch_due), not a join over every waiting event: a backlog
        // of 100,000 events behind a closed gate made this a 0.1 s scan every period.
        List<Map<String, Object>> oldest = jdbc.queryForList("""
                SELECT t.tenant_id,
                       (SELECT min(o.available_at) FROM outbox o
                         WHERE o.tenant_id = t.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
                           AND o.available_at <= ?) AS due
                  FROM tenants t""", now);
        Map<Tags, Double> ages = new java.util.HashMap<>();
        for (Map<String, Object> r : oldest) {
            java.sql.Timestamp due = (java.sql.Timestamp) r.get("due");
            double age = due == null ? 0 : Math.max(0, Duration.between(due.toInstant(), clock.instant()).toMillis() / 1000.0);
            ages.put(Tags.of("tenant", (String) r.get("tenant_id")), age);
        }
        oldestAge.publish(ages);
        // Tenants' webhooks: the oldest due delivery not yet delivered, per tenant (0 for a tenant with none).
        Map<Tags, Double> backlog = new java.util.HashMap<>();
        for (String tenant : tenants) {
            backlog.put(Tags.of("tenant", tenant), 0.0);
        }
        jdbc.query("SELECT tenant_id, min(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending' AND next_attempt_at <= ?"
                + " GROUP BY tenant_id", (org.springframework.jdbc.core.RowCallbackHandler) rs -> backlog.put(Tags.of("tenant",
                rs.getString(1)), Math.max(0, Duration.between(rs.getTimestamp(2).toInstant(), clock.instant()).toMillis() / 1000.0)), now);
        webhookBacklog.publish(backlog);
        // Live: held and not run out (an expired lease waits for the sweeper, nobody works under it).
        Map<String, Long> leases = jobCounts.liveLeases(now.toInstant());
        leasesActive.publish(withEveryProvider(leases.keySet()).stream().collect(java.util.stream.Collectors.toMap(
                p -> Tags.of("provider", p), p -> leases.getOrDefault(p, 0L).doubleValue())));
        java.util.Set<String> closed = new java.util.HashSet<>(jdbc.queryForList(
                "SELECT provider FROM provider_gates WHERE closed_until > ?", String.class, now));
        gateOpen.publish(withEveryProvider(closed).stream().collect(java.util.stream.Collectors.toMap(
                p -> Tags.of("provider", p), p -> closed.contains(p) ? 0.0 : 1.0)));
        publishOtherGauges();
    }

    /**
     * Another package's gauges, read together: each gauge's name and what it shows, the value of a series no longer
     * reported, and one read giving, per gauge name, each series' tags and value.
     */
    private record OtherGauges(Map<String, String> descriptions, double absent,
                               java.util.function.Supplier<Map<String, Map<Map<String, String>, Double>>> series) {
    }

    private final List<OtherGauges> otherGauges = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Map<String, SnapshotGauges> otherGaugesRegistered = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Gauges another package reads (a pool's members, say), read again at each refresh like the others here, all from
     * one read of {@code series}: per gauge name, each series' tags and its value; a tag set no longer given reports
     * {@code absent}.
     */
    public void gauges(Map<String, String> descriptions, double absent,
                       java.util.function.Supplier<Map<String, Map<Map<String, String>, Double>>> series) {
        otherGauges.add(new OtherGauges(Map.copyOf(descriptions), absent, series));
    }

    private void publishOtherGauges() {
        for (OtherGauges g : otherGauges) {
            Map<String, Map<Map<String, String>, Double>> read = g.series().get();
            g.descriptions().forEach((name, description) -> {
                SnapshotGauges gauges = otherGaugesRegistered.computeIfAbsent(name,
                        n -> new SnapshotGauges(n, description, g.absent(), registry()));
                Map<Tags, Double> rows = new java.util.HashMap<>();
                read.getOrDefault(name, Map.of()).forEach((tags, value) -> {
                    List<String> pairs = new java.util.ArrayList<>();
                    new java.util.TreeMap<>(tags).forEach((k, v) -> {
                        pairs.add(k);
                        pairs.add(v);
                    });
                    rows.put(Tags.of(pairs.toArray(String[]::new)), value);
                });
                gauges.publish(rows);
            });
        }
    }

    /** A pool job moved from one member to another ({@code cause}: after a failure, a closed gate, a member taking none). */
    public void poolMove(String pool, String from, String to) {
        counter("jobgate_pool_moves_total", "pool jobs moved from one member to another", "pool", pool, "from", from, "to", to)
                .increment();
    }

    /** A pool member began to cool down (its failures reached its threshold, or its probe failed). */
    public void poolMemberCooled(String pool, String member) {
        counter("jobgate_pool_member_cooldowns_total", "times a pool member began to cool down", "pool", pool, "member", member)
                .increment();
    }

    /** External workers of pull member {@code provider} leased {@code tasks} of its tasks (a task leased again counts again). */
    public void pullLeases(String provider, int tasks) {
        counter("jobgate_pull_leases_total", "tasks of pull members leased by their external workers", "provider", provider)
                .increment(tasks);
    }

    /** A pull member's task ended: {@code succeeded} or {@code failed} by its worker, {@code cancelled} with its job. */
    public void pullTaskEnded(String provider, String outcome) {
        counter("jobgate_pull_task_ends_total", "tasks of pull members that ended, by how", "provider", provider, "outcome", outcome)
                .increment();
    }

    /** A worker's call under a lease token changed nothing: {@code lease_lost}, {@code task_cancelled}, {@code task_ended}. */
    public void pullCallRefused(String provider, String code) {
        counter("jobgate_pull_calls_refused_total", "external workers' calls under a lease token refused, by problem code",
                "provider", provider, "code", code).increment();
    }

    /** The configured providers and any other the database names (a provider removed from the settings). */
    private java.util.Collection<String> withEveryProvider(java.util.Collection<String> seen) {
        java.util.Set<String> all = new java.util.TreeSet<>(providers);
        all.addAll(seen);
        return all;
    }
}
