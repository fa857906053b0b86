package io.jobgate.support;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Jobs, their attempts and their dispatch events in any state, one line each, for tests that need a job the API
 * would take many steps to make (as River's testfactory does). Every column a test does not name gets a value a real
 * job could have; the rows go in through the same tables the gateway writes.
 *
 * <pre>
 * UUID id = jobs.job("acme").status("retry_wait").attempts(1).nextAttemptAt(at).insert();
 * jobs.attempt(id, 1).revision("fakeimg-1@0000000002").outcome("retry_wait").errorCategory("transient").insert();
 * jobs.dispatch(id, "acme", at);
 * </pre>
 */
public final class JobFactory {

    /** Runs one statement with parameters. */
    @FunctionalInterface
    public interface Sql {
        int update(String sql, Object... args);
    }

    private final Sql sql;

    private JobFactory(Sql sql) {
        this.sql = sql;
    }

    public static JobFactory on(JdbcTemplate jdbc) {
        return new JobFactory(jdbc::update);
    }

    /** On one connection (a test that set the stage with a session setting, such as triggers off). */
    public static JobFactory onConnection(java.sql.Connection connection) {
        return new JobFactory((statement, args) -> {
            try (java.sql.PreparedStatement ps = connection.prepareStatement(statement)) {
                for (int i = 0; i < args.length; i++) {
                    ps.setObject(i + 1, args[i]);
                }
                return ps.executeUpdate();
            } catch (java.sql.SQLException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** On the shared test database ({@link TestDatabase}), as {@link Db} reads it. */
    public static JobFactory onTestDatabase() {
        return new JobFactory(Db::update);
    }

    // --- What others do to a job meanwhile: the sweeper, another worker, an operator's psql ------------------------

    /**
     * The job ended behind the gateway's back ({@code failed} or {@code cancelled}, final now), its lease and its provider
     * slot gone with it (its outbox events stay as they were). Also how a test puts away a job it left open, so that no
     * part of the gateway takes it up again.
     */
    public void endedBehindTheGateway(UUID job, String status) {
        sql.update("UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL WHERE job_id = ?", job);
        sql.update("""
                UPDATE jobs SET status = ?, finalized_at = now(), lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
                 WHERE job_id = ?""", status, job);
    }

    /** Another worker holds the job now (the sweeper gave it away): a new lease token, {@code owner}'s, for an hour. */
    public void leaseTakenOver(UUID job, String owner) {
        sql.update("""
                UPDATE jobs SET lease_token = gen_random_uuid(), lease_owner = ?, lease_expires_at = now() + interval '1 hour'
                 WHERE job_id = ?""", owner, job);
    }

    /** The job's lease (its token kept) is {@code owner}'s, lasting an hour: a process's that may be alive or gone. */
    public void leaseOwnedBy(UUID job, String owner) {
        sql.update("UPDATE jobs SET lease_owner = ?, lease_expires_at = now() + interval '1 hour' WHERE job_id = ?", owner, job);
    }

    /** A job waiting on its provider is next asked about at {@code at}, claimed by no poller (as after a restart). */
    public void nextCheckAt(UUID job, Instant at) {
        sql.update("UPDATE jobs SET next_check_at = ?, check_claimed_by = NULL WHERE job_id = ?", ts(at), job);
    }

    /** A job in {@code retry_wait} waits again, until {@code at}: its shown next attempt and its unrelayed dispatch event. */
    public void waitsUntil(UUID job, Instant at) {
        sql.update("UPDATE outbox SET available_at = ? WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL", ts(at), job);
        sql.update("UPDATE jobs SET next_attempt_at = ? WHERE job_id = ?", ts(at), job);
    }

    public Job job(String tenant) {
        return new Job(tenant);
    }

    public Attempt attempt(UUID job, int number) {
        return new Attempt(job, number);
    }

    /** A dispatch event of the job, due at {@code at} (unpublished). */
    public void dispatch(UUID job, String tenant, Instant at) {
        sql.update("INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at) VALUES (?, ?, 'dispatch', ?, ?)",
                job, tenant, ts(at), ts(Instant.now()));
    }

    /** A dispatch event of the job the relay already published. */
    public void publishedDispatch(UUID job, String tenant) {
        sql.update("INSERT INTO outbox (job_id, tenant_id, event_type, published_at) VALUES (?, ?, 'dispatch', now())", job, tenant);
    }

    /** A ledger line of the job ({@code debit} negative, {@code refund} positive). */
    public void ledger(UUID job, String tenant, String entryType, long amountMicros) {
        sql.update("INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros) VALUES (?, ?, ?, ?)", tenant, job, entryType,
                amountMicros);
    }

    private static Timestamp ts(Instant at) {
        return at == null ? null : Timestamp.from(at);
    }

    /** One job row; unnamed columns as a freshly admitted job of preset invoice-clean on fakeimg has them. */
    public final class Job {
        private UUID id = UUID.randomUUID();
        private final String tenant;
        private String key;
        private String status = "queued";
        private String preset = "invoice-clean";
        private int presetVersion = 1;
        private String aspectClass = "square";
        private String provider = "fakeimg";
        private String pool;
        private String inputs = "{}";
        private long costMicros;
        private Long sourceBytes;
        private int maxAttempts = 4;
        private int lifetimeSeconds = 1800;
        private Instant expiresAt = Instant.now().plusSeconds(3600);
        private int attempts;
        private UUID leaseToken;
        private String leaseOwner;
        private Instant leaseExpiresAt;
        private Instant dispatchedAt;
        private Instant nextAttemptAt;
        private Instant finalizedAt;
        private String revision;
        private String errorCategory;

        private Job(String tenant) {
            this.tenant = tenant;
        }

        public Job id(UUID id) {
            this.id = id;
            return this;
        }

        /** Its idempotency key (default: {@code factory-<id>}). */
        public Job key(String key) {
            this.key = key;
            return this;
        }

        public Job status(String status) {
            this.status = status;
            return this;
        }

        public Job preset(String preset, int version) {
            this.preset = preset;
            this.presetVersion = version;
            return this;
        }

        public Job aspectClass(String aspectClass) {
            this.aspectClass = aspectClass;
            return this;
        }

        public Job provider(String provider) {
            this.provider = provider;
            return this;
        }

        /** The pool the job named (V36): its attempts may move among the pool's members. */
        public Job pool(String pool) {
            this.pool = pool;
            return this;
        }

        /** The stored request's inputs (JSON), for a job a worker re-validates and renders. */
        public Job inputs(String inputs) {
            this.inputs = inputs;
            return this;
        }

        public Job costMicros(long costMicros) {
            this.costMicros = costMicros;
            return this;
        }

        public Job sourceBytes(long bytes) {
            this.sourceBytes = bytes;
            return this;
        }

        public Job maxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
            return this;
        }

        public Job lifetime(int seconds, Instant expiresAt) {
            this.lifetimeSeconds = seconds;
            this.expiresAt = expiresAt;
            return this;
        }

        public Job attempts(int attempts) {
            this.attempts = attempts;
            return this;
        }

        public Job lease(UUID token, String owner, Instant expiresAt) {
            this.leaseToken = token;
            this.leaseOwner = owner;
            this.leaseExpiresAt = expiresAt;
            return this;
        }

        public Job dispatchedAt(Instant at) {
            this.dispatchedAt = at;
            return this;
        }

        public Job nextAttemptAt(Instant at) {
            this.nextAttemptAt = at;
            return this;
        }

        public Job finalizedAt(Instant at) {
            this.finalizedAt = at;
            return this;
        }

        /** The adapter revision its last attempt ran on. */
        public Job revision(String revision) {
            this.revision = revision;
            return this;
        }

        public Job errorCategory(String category) {
            this.errorCategory = category;
            return this;
        }

        public UUID insert() {
            sql.update("""
                    INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version, kind,
                                      aspect_class, provider, inputs, source_bytes, cost_micros, max_attempts, max_lifetime_seconds,
                                      expires_at, attempts, lease_token, lease_owner, lease_expires_at, dispatched_at,
                                      next_attempt_at, finalized_at, adapter_revision, error_category, pool)
                    VALUES (?, ?, ?, 'x', ?, ?, ?, 'image', ?, ?, CAST(? AS jsonb), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    id, tenant, key != null ? key : "factory-" + id, status, preset, presetVersion, aspectClass, provider, inputs,
                    sourceBytes == null ? 0L : sourceBytes, costMicros, maxAttempts, lifetimeSeconds, ts(expiresAt), attempts,
                    leaseToken, leaseOwner, ts(leaseExpiresAt), ts(dispatchedAt), ts(nextAttemptAt), ts(finalizedAt), revision,
                    errorCategory, pool);
            return id;
        }

        /**
         * {@code count} such jobs in one statement (each its own id; keys {@code <keyPrefix><n>}), each with a dispatch
         * event due at {@code dueAt}: a backlog too large to insert one by one.
         */
        public void insertBacklog(int count, String keyPrefix, Instant dueAt) {
            sql.update("""
                    WITH made AS (
                        INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version, kind,
                                          aspect_class, provider, inputs, cost_micros, max_attempts, max_lifetime_seconds, expires_at)
                        SELECT gen_random_uuid(), ?, ? || g || '-' || gen_random_uuid(), 'x', ?, ?, ?, 'image', ?, ?, '{}', ?, ?, ?, ?
                          FROM generate_series(1, ?) g
                        RETURNING job_id, tenant_id)
                    INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at)
                    SELECT job_id, tenant_id, 'dispatch', ?, now() FROM made""",
                    tenant, keyPrefix, status, preset, presetVersion, aspectClass, provider, costMicros, maxAttempts, lifetimeSeconds,
                    ts(expiresAt), count, ts(dueAt));
        }

        /** {@code count} such jobs (each its own id and key). */
        public List<UUID> insert(int count) {
            List<UUID> ids = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                id = UUID.randomUUID();
                key = null;
                ids.add(insert());
            }
            return ids;
        }
    }

    /** One attempt row of a job. */
    public final class Attempt {
        private final UUID job;
        private final int number;
        private UUID leaseToken = UUID.randomUUID();
        private String worker = "w";
        private String adapter = "fakeimg";
        private String revision;
        private Instant startedAt = Instant.now();
        private Instant endedAt;
        private Long durationMs;
        private String outcome;
        private String errorCategory;

        private Attempt(UUID job, int number) {
            this.job = job;
            this.number = number;
        }

        public Attempt lease(UUID token, String worker) {
            this.leaseToken = token;
            this.worker = worker;
            return this;
        }

        public Attempt adapter(String adapter) {
            this.adapter = adapter;
            return this;
        }

        public Attempt revision(String revision) {
            this.revision = revision;
            return this;
        }

        public Attempt ran(Instant startedAt, Instant endedAt) {
            this.startedAt = startedAt;
            this.endedAt = endedAt;
            return this;
        }

        public Attempt durationMs(long millis) {
            this.durationMs = millis;
            return this;
        }

        public Attempt outcome(String outcome) {
            this.outcome = outcome;
            return this;
        }

        public Attempt errorCategory(String category) {
            this.errorCategory = category;
            return this;
        }

        public void insert() {
            sql.update("""
                    INSERT INTO attempts (job_id, attempt, lease_token, worker, adapter, adapter_revision, started_at, ended_at,
                                          duration_ms, outcome, error_category)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", job, number, leaseToken, worker, adapter, revision, ts(startedAt),
                    ts(endedAt), durationMs, outcome, errorCategory);
        }
    }
}
