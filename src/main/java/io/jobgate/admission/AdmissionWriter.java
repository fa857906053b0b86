package io.jobgate.admission;

import io.jobgate.job.Job;
import io.jobgate.job.JobStatus;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import javax.sql.DataSource;

import io.jobgate.common.ApiProblem;
import io.jobgate.relay.RelayNotifications;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Group commit for admissions. Requests that arrive while a transaction is running wait in a
 * queue; the writer takes all of them into the next transaction: lock the gateway row, then the
 * tenants' account rows (always in that order, in one statement), decide each request against
 * the limits in arrival order, and write every admitted job with its outbox event and ledger debit
 * in one statement and one commit. Either a job is written whole with its event and debit, or not
 * at all. If a batch fails, its requests are retried one by one so one bad request fails alone.
 */
public final class AdmissionWriter extends ServiceSupport {

    private static final Logger LOG = LoggerFactory.getLogger(AdmissionWriter.class);

    static final int MAX_BATCH = 256;
    private static final long WAIT_SECONDS = 30;

    /**
     * The batch's locks in one round trip: the gateway row first (a one-time filter, so it is taken
     * before the scan of the tenants starts), then the tenants' account rows by tenant id; each row
     * carries the gateway's in-flight count. Row 1 holds what admissions added, under this lock;
     * releases are in the shard rows 2..17 (V10), which no admission locks. The same for each tenant:
     * its account row holds what admissions (and redrives) added, under this lock; its releases are in
     * its rows of {@code tenant_releases} (V24), which neither this nor the relay locks. A release row
     * read from the statement's snapshot may miss a release that committed while this waited for the
     * lock: the sum then errs high, on the side of refusing. (One statement instead of two: the rows
     * the relay shares with admission are held one round trip less.)
     */
    static final String LOCK = """
            WITH gateway AS (
                SELECT g.in_flight + (SELECT coalesce(sum(s.in_flight), 0) FROM gateway_capacity s WHERE s.id <> 1) AS in_flight
                  FROM gateway_capacity g WHERE g.id = 1 FOR UPDATE)
            SELECT a.tenant_id, a.open_jobs + r.open_jobs, a.queued_bytes + r.queued_bytes, a.balance_micros, t.max_open_jobs,
                   t.max_queued_bytes, a.running_jobs + r.running_jobs < t.max_running_jobs AS can_run,
                   (SELECT in_flight FROM gateway) AS gateway_in_flight
              FROM tenant_accounts a JOIN tenants t ON t.tenant_id = a.tenant_id
             CROSS JOIN LATERAL (SELECT coalesce(sum(s.open_jobs), 0) AS open_jobs, coalesce(sum(s.queued_bytes), 0) AS queued_bytes,
                                        coalesce(sum(s.running_jobs), 0) AS running_jobs
                                   FROM tenant_releases s WHERE s.tenant_id = a.tenant_id) r
             WHERE a.tenant_id = ANY (?) AND (SELECT in_flight FROM gateway) IS NOT NULL
             ORDER BY a.tenant_id FOR UPDATE OF a""";

    /**
     * One statement for the whole batch: insert the jobs (a key already taken inserts nothing),
     * then for exactly the inserted ones the outbox events (dispatch — due when the provider's gate
     * reopens if a 429 closed it —, and the "queued" status event for followers), the ledger debits
     * (whose trigger derives the balance) and the reservations; and, if any job was inserted, one
     * notification for the relays of other instances (delivered at commit). Public for HotPathPlansTest:
     * sent with its COMMIT in one round trip, the statement is never left on screen in pg_stat_activity.
     */
    public static final String WRITE = """
            WITH input AS (
                SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                                     ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                                     ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
                                     ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
                    AS i(job_id, tenant_id, idempotency_key, request_sha256, preset_id, preset_version, kind,
                         aspect_class, provider, inputs, upload_id, source_key, source_sha256, source_bytes,
                         correlation_id, cost_micros, max_attempts, max_lifetime_seconds, expires_at, created_at,
                         usage_units, usage_unit, webhook_endpoint_id, parent_job_id, summary, pool, waiting_reason)),
            new_jobs AS (
                INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version,
                                  kind, aspect_class, provider, inputs, upload_id, source_key, source_sha256, source_bytes,
                                  correlation_id, cost_micros, max_attempts, max_lifetime_seconds, expires_at,
                                  created_at, updated_at, webhook_endpoint_id, parent_job_id, pool, waiting_reason)
                SELECT job_id::uuid, tenant_id, idempotency_key, request_sha256, %1$s, preset_id, preset_version::int,
                       kind, aspect_class, provider, inputs::jsonb, upload_id::uuid, source_key, source_sha256,
                       source_bytes::bigint, correlation_id, cost_micros::bigint, max_attempts::int,
                       max_lifetime_seconds::int, expires_at::timestamptz, created_at::timestamptz, created_at::timestamptz,
                       webhook_endpoint_id::uuid, parent_job_id::uuid, pool, waiting_reason
                  FROM input
                ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
                RETURNING job_id, tenant_id, source_bytes, cost_micros, created_at),
            events AS (
                INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, created_at)
                SELECT j.job_id, j.tenant_id, e.event_type, e.payload,
                       CASE WHEN e.event_type = 'dispatch' THEN greatest(j.created_at, g.closed_until) ELSE j.created_at END,
                       j.created_at
                  FROM new_jobs j JOIN input i ON i.job_id::uuid = j.job_id
                  LEFT JOIN provider_gates g ON g.provider = i.provider
                 CROSS JOIN (VALUES ('dispatch', NULL::jsonb), ('status', '{"status": "%2$s", "attempt": 0}'::jsonb))
                       AS e(event_type, payload)),
            debits AS (
                INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, created_at, units, unit)
                SELECT n.tenant_id, n.job_id, 'debit', -n.cost_micros, n.created_at, i.usage_units::numeric, i.usage_unit
                  FROM new_jobs n JOIN input i ON i.job_id::uuid = n.job_id),
            -- A transcription job that asks for a summary: the request, waiting for the transcript (V34).
            summaries AS (
                INSERT INTO job_summaries (job_id, tenant_id, preset_id, preset_version, provider, pool, inputs, updated_at)
                SELECT n.job_id, n.tenant_id, s.request->>'preset_id', CAST(s.request->>'preset_version' AS int),
                       s.request->>'provider', s.request->>'pool', s.request->'inputs', n.created_at
                  FROM new_jobs n JOIN input i ON i.job_id::uuid = n.job_id
                 CROSS JOIN LATERAL (SELECT CAST(i.summary AS jsonb) AS request) s
                 WHERE i.summary IS NOT NULL),
            per_tenant AS (
                SELECT tenant_id, count(*) AS jobs, sum(source_bytes) AS bytes FROM new_jobs GROUP BY tenant_id),
            reserved AS (
                UPDATE tenant_accounts a SET open_jobs = a.open_jobs + p.jobs, queued_bytes = a.queued_bytes + p.bytes
                  FROM per_tenant p WHERE a.tenant_id = p.tenant_id),
            window_taken AS (
                UPDATE gateway_capacity SET in_flight = in_flight + (SELECT count(*) FROM new_jobs) WHERE id = 1)
            SELECT job_id, (SELECT pg_notify(?, ?)) FROM new_jobs""".formatted(JobStatus.QUEUED.sqlLiteral(), JobStatus.QUEUED.wire());

    /**
     * The write and the commit in one round trip (pgJDBC sends both statements before it waits): the
     * batch's locks on the gateway row and the tenants' rows, which the relay needs too,
     * end with the commit's WAL flush, not when this thread next gets a core to send COMMIT (on two
     * busy cores that gap was a quarter of the writer's time). The JDBC {@code commit()} that follows
     * finds no transaction open and sends nothing. A failing write skips the COMMIT: the transaction is
     * rolled back as before.
     */
    static final String WRITE_AND_COMMIT = WRITE + ";\nCOMMIT";

    private final DataSource dataSource;
    private final AdmissionLimits limits;
    private final String instanceId;
    private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private volatile Thread writer;
    private volatile Runnable afterCommit = () -> { };
    private volatile java.util.function.Consumer<Candidate> admitted = candidate -> { };
    /** Set while deciding a batch (writer thread only): an admitted job's tenant can run one more. */
    private boolean dispatchable;
    private final java.util.concurrent.atomic.AtomicLong splitBatches = new java.util.concurrent.atomic.AtomicLong();

    public AdmissionWriter(DataSource dataSource, AdmissionLimits limits, String instanceId) {
        this.dataSource = dataSource;
        this.limits = limits;
        this.instanceId = instanceId;
    }

    /** A job ready to be written, with what the row needs beyond the {@link Job} itself. */
    public record Candidate(Job job, String inputsJson, String sourceKey, io.jobgate.provider.Pricing.Usage usage,
                            String summaryJson) {
        // summaryJson: the summary a transcription job asks for (preset_id, preset_version, provider, pool, inputs), or null.

        public Candidate(Job job, String inputsJson, String sourceKey, io.jobgate.provider.Pricing.Usage usage) {
            this(job, inputsJson, sourceKey, usage, null);
        }
    }

    public enum Result {
        /** Written with its outbox event and debit. */
        ADMITTED,
        /** The tenant's key was already taken (by another request, perhaps in this very batch). */
        KEY_TAKEN
    }

    private record Pending(Candidate candidate, CompletableFuture<Result> done) {
    }

    /** Queues the candidate for the next group commit and waits for its outcome. */
    public Result admit(Candidate candidate) {
        if (writer == null) {
            throw new IllegalStateException("admission writer is not running");
        }
        Pending pending = new Pending(candidate, new CompletableFuture<>());
        queue.add(pending);
        try {
            return pending.done().get(WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException("admission failed", e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("admission did not commit within " + WAIT_SECONDS + " s", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while admitting", e);
        }
    }

    /** Called after a commit that admitted a job whose tenant may run another now (wakes the relay). */
    public void afterCommit(Runnable callback) {
        this.afterCommit = callback;
    }

    /** Told of every job written (after its commit), with its debit and metered units: metrics. */
    public void onAdmitted(java.util.function.Consumer<Candidate> listener) {
        this.admitted = listener;
    }

    /** Requests waiting for the next group commit. */
    public int queueDepth() {
        return queue.size();
    }

    /** Batches that failed and were written again request by request. */
    public long batchesSplit() {
        return splitBatches.get();
    }

    @Override
    protected void doStart() {
        Thread t = new Thread(this::run, "jobgate-admission-writer");
        t.setDaemon(true);
        writer = t;
        t.start();
    }

    @Override
    protected void doStop() throws Exception {
        Thread t = writer;
        writer = null;
        if (t != null) {
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(10));
        }
        Pending p;
        while ((p = queue.poll()) != null) {
            p.done().completeExceptionally(ApiProblem.of(503, "shutting_down", "The gateway is stopping; retry with the "
                    + "same Idempotency-Key.").withHeader("Retry-After", "1"));
        }
    }

    private void run() {
        List<Pending> batch = new ArrayList<>();
        while (writer == Thread.currentThread()) {
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                return;
            }
            queue.drainTo(batch, MAX_BATCH - 1);
            try {
                write(batch);
            } catch (Exception batchFailure) {
                if (batch.size() == 1) {
                    batch.get(0).done().completeExceptionally(batchFailure);
                } else {
                    splitBatches.incrementAndGet();
                    LOG.warn("Admission batch of {} failed ({}); writing its requests one by one", batch.size(),
                            batchFailure.toString());
                    for (Pending p : batch) {
                        try {
                            write(List.of(p));
                        } catch (Exception alone) {
                            p.done().completeExceptionally(alone);
                        }
                    }
                }
            }
            batch.clear();
        }
    }

    /**
     * Writes the batch in one transaction, run again (up to three runs) when PostgreSQL aborts it
     * for a deadlock or a serialization failure: a replayed key inserted while a worker moves that
     * very job waits on the job's row, whose transaction may wait on this one's tenant row. The
     * transaction was rolled back whole and nobody was answered yet, so running it again is safe.
     * Each run after the first waits a few tens of milliseconds (random, longer each run).
     */
    private void write(List<Pending> batch) throws SQLException {
        for (int run = 1; ; run++) {
            try {
                writeOnce(batch);
                return;
            } catch (SQLException e) {
                if (!io.jobgate.common.DatabaseFailures.lockCycle(e) || run >= 3) {
                    throw e;
                }
                LOG.warn("admission transaction rolled back by PostgreSQL ({}), running it again ({} of 3)", e.getSQLState(), run + 1);
                // A short pause first (random, longer each run): the transaction that won the cycle finishes and
                // lets its locks go. Run again at once, this one took its tenant rows back first, and on a busy
                // machine met the same cycle every run (seen: three runs, then 503 transaction_conflict).
                try {
                    Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextLong(20, 60) * run);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    private void writeOnce(List<Pending> batch) throws SQLException {
        try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                Map<Pending, Object> outcomes = decideAndWrite(c, batch);
                c.commit();
                if (dispatchable) {
                    afterCommit.run(); // a tenant below its running limit got a job: dispatch it now
                }
                outcomes.forEach((p, outcome) -> {
                    if (outcome instanceof Result r) {
                        if (r == Result.ADMITTED) {
                            admitted.accept(p.candidate());
                        }
                        p.done().complete(r);
                    } else {
                        p.done().completeExceptionally((ApiProblem) outcome);
                    }
                });
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
    }

    /** Decides every request of the batch under the locks, writes the admitted ones. */
    private Map<Pending, Object> decideAndWrite(Connection c, List<Pending> batch) throws SQLException {
        dispatchable = false;
        long inFlight = 0; // read with the accounts: without one, every request is refused before it counts
        Map<String, Account> accounts = new HashMap<>();
        Set<String> tenantIds = new HashSet<>();
        batch.forEach(p -> tenantIds.add(p.candidate().job().tenantId()));
        try (PreparedStatement ps = c.prepareStatement(LOCK)) {
            ps.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    accounts.put(rs.getString(1), new Account(rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getLong(5),
                            rs.getLong(6), rs.getBoolean(7)));
                    inFlight = rs.getLong(8);
                }
            }
        }
        Map<Pending, Object> outcomes = new java.util.IdentityHashMap<>();
        List<Pending> toWrite = new ArrayList<>();
        Set<String> keysInBatch = new HashSet<>();
        for (Pending p : batch) {
            Job job = p.candidate().job();
            if (!keysInBatch.add(job.tenantId() + '\u0000' + job.idempotencyKey())) {
                outcomes.put(p, Result.KEY_TAKEN); // an earlier request of this batch has the key
                continue;
            }
            Account a = accounts.get(job.tenantId());
            ApiProblem refusal = a == null ? ApiProblem.unauthorized("Unknown tenant.") : a.refusal(job, inFlight, limits);
            if (refusal != null) {
                outcomes.put(p, refusal);
                continue;
            }
            a.reserve(job);
            inFlight++;
            toWrite.add(p);
        }
        Set<UUID> inserted = insert(c, toWrite);
        for (Pending p : toWrite) {
            boolean admitted = inserted.contains(p.candidate().job().id());
            outcomes.put(p, admitted ? Result.ADMITTED : Result.KEY_TAKEN);
            dispatchable |= admitted && accounts.get(p.candidate().job().tenantId()).canRun;
        }
        return outcomes;
    }

    private Set<UUID> insert(Connection c, List<Pending> toWrite) throws SQLException {
        Set<UUID> inserted = new HashSet<>();
        if (toWrite.isEmpty()) {
            return inserted;
        }
        int n = toWrite.size();
        String[][] cols = new String[27][n];
        for (int i = 0; i < n; i++) {
            Candidate cand = toWrite.get(i).candidate();
            Job j = cand.job();
            String[] row = {j.id().toString(), j.tenantId(), j.idempotencyKey(), j.requestSha256(), j.presetId(),
                Integer.toString(j.presetVersion()), j.kind(), j.aspectClass(), j.provider(), cand.inputsJson(),
                j.uploadId() == null ? null : j.uploadId().toString(), cand.sourceKey(), j.sourceSha256(),
                Long.toString(j.sourceBytes()), j.correlationId(), Long.toString(j.costMicros()),
                Integer.toString(j.maxAttempts()), Integer.toString(j.maxLifetimeSeconds()), j.expiresAt().toString(),
                j.createdAt().toString(), Long.toString(cand.usage().units()), cand.usage().unit(),
                j.webhookEndpointId() == null ? null : j.webhookEndpointId().toString(),
                j.parentJobId() == null ? null : j.parentJobId().toString(), cand.summaryJson(), j.pool(), j.waitingReason()};
            for (int col = 0; col < row.length; col++) {
                cols[col][i] = row[col];
            }
        }
        try (PreparedStatement ps = c.prepareStatement(WRITE_AND_COMMIT)) {
            for (int col = 0; col < cols.length; col++) {
                Array array = c.createArrayOf("text", cols[col]);
                ps.setArray(col + 1, array);
            }
            // Relays of other instances wake on commit (one notification per batch that admitted a job).
            ps.setString(cols.length + 1, RelayNotifications.CHANNEL);
            ps.setString(cols.length + 2, instanceId);
            ps.execute(); // the write's rows first, then the COMMIT's status (executeQuery would refuse two results)
            try (ResultSet rs = ps.getResultSet()) {
                while (rs.next()) {
                    inserted.add(rs.getObject(1, UUID.class));
                }
            }
        }
        return inserted;
    }

    /** A tenant's locked account row, with the reservations of this batch applied as it is decided. */
    private static final class Account {
        long openJobs;
        long queuedBytes;
        long balance;
        final long maxOpenJobs;
        final long maxQueuedBytes;
        final boolean canRun;

        Account(long openJobs, long queuedBytes, long balance, long maxOpenJobs, long maxQueuedBytes, boolean canRun) {
            this.canRun = canRun;
            this.openJobs = openJobs;
            this.queuedBytes = queuedBytes;
            this.balance = balance;
            this.maxOpenJobs = maxOpenJobs;
            this.maxQueuedBytes = maxQueuedBytes;
        }

        ApiProblem refusal(Job job, long inFlight, AdmissionLimits limits) {
            if (openJobs >= maxOpenJobs) {
                return ApiProblem.tooManyRequests("tenant_concurrency", "Tenant '" + job.tenantId() + "' has " + openJobs
                        + " open jobs, its limit; retry when some finish.", limits.retryAfterSeconds());
            }
            if (inFlight >= limits.maxInFlight()) {
                return ApiProblem.tooManyRequests("global_capacity", "The gateway has " + limits.maxInFlight()
                        + " jobs in flight, its limit; retry later.", limits.retryAfterSeconds());
            }
            if (queuedBytes + job.sourceBytes() > maxQueuedBytes) {
                return ApiProblem.tooManyRequests("queued_bytes", "Tenant '" + job.tenantId() + "' has " + queuedBytes
                        + " bytes of sources queued; this job would pass its limit.", limits.retryAfterSeconds());
            }
            if (balance < job.costMicros()) {
                return ApiProblem.of(402, "budget_exhausted", "The job costs " + job.costMicros()
                        + " micro-units; the balance is " + balance + ".")
                        .with("cost_micros", job.costMicros()).with("balance_micros", balance);
            }
            return null;
        }

        void reserve(Job job) {
            openJobs++;
            queuedBytes += job.sourceBytes();
            balance -= job.costMicros();
        }
    }
}
