package io.jobgate.workers;

import java.math.BigDecimal;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The tasks of pull members (table {@code worker_tasks}, V40; docs/workers.md): the attempts external workers lease
 * over HTTP. The member's adapter writes one at submit and reads it at each lookup; a worker leases waiting tasks
 * under a fresh token, extends its lease by heartbeats, and ends the task with its token (complete or fail). A call
 * with a token that is not the task's live one changes nothing. A lease that ran out makes the task leasable again,
 * under the same job and attempt: the next worker renders it, the late one's token is refused. Every statement is
 * here; every write is conditional on the status (and the token) it was meant for.
 */
public final class WorkerTasks {

    /** A task's status: waiting to be leased, leased, or ended. */
    public enum Status {
        WAITING, LEASED, SUCCEEDED, FAILED, CANCELLED;

        String wire() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** Waiting or leased: the task has not ended. */
        public boolean open() {
            return this == WAITING || this == LEASED;
        }

        static Status of(String wire) {
            return valueOf(wire.toUpperCase(java.util.Locale.ROOT));
        }
    }

    /** A task as stored. */
    public record Task(UUID taskId, String provider, UUID jobId, int attempt, String envelope, Status status, UUID leaseToken,
                       Instant leaseExpiresAt, String workerId, int leases, String outputKey, String outputMediaType,
                       BigDecimal billedUnits, String billedUnit, String errorCategory, String errorMessage,
                       Integer retryAfterSeconds, Instant createdAt, String sourceKey, String sourceMediaType, String revision) {

        /** The human label of the task's revision ({@code gpubox-2} of {@code gpubox-2@1a2b3c}); null when unknown. */
        public String revisionLabel() {
            return label(revision);
        }
    }

    /** The human label of a revision ({@code gpubox-2} of {@code gpubox-2@1a2b3c}); null for null. */
    public static String label(String revision) {
        return revision == null ? null : revision.split("@", 2)[0];
    }

    /** Why a call under a token changed nothing: the task is gone, ended, cancelled, or its lease is another's or ran out. */
    public enum Refusal {
        NOT_FOUND("not_found"), CANCELLED("task_cancelled"), LEASE_LOST("lease_lost"), ENDED("task_ended");

        private final String code;

        Refusal(String code) {
            this.code = code;
        }

        /** The problem code the worker hears. */
        public String code() {
            return code;
        }
    }

    /**
     * What the meters count of the tasks (WorkersWiring joins ops): tasks leased, tasks ended (succeeded and failed by
     * their worker, cancelled with their job), calls under a token refused. Called after the statement, never inside it.
     */
    public interface Listener {
        void leased(String provider, int tasks);

        void ended(String provider, Status status);

        void refused(String provider, Refusal refusal);
    }

    private volatile Listener listener = new Listener() {
        @Override
        public void leased(String provider, int tasks) {
        }

        @Override
        public void ended(String provider, Status status) {
        }

        @Override
        public void refused(String provider, Refusal refusal) {
        }
    };

    public void onEvents(Listener listener) {
        this.listener = listener;
    }

    /** The outcome of a call under a token: the task as written, or why nothing was written. */
    public record Written(Task task, Refusal refusal) {
        public boolean ok() {
            return refusal == null;
        }
    }

    private static final String OPEN = "status IN ('waiting', 'leased')";

    private final JdbcTemplate jdbc;
    private final org.springframework.transaction.support.TransactionTemplate transactions;
    private final Clock clock;

    public WorkerTasks(JdbcTemplate jdbc, org.springframework.transaction.support.TransactionTemplate transactions, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
    }

    /**
     * The task of attempt {@code attempt} of {@code jobId} on pull member {@code provider}, waiting to be leased; a
     * submit sent again finds the one it wrote (its envelope kept).
     */
    public Task submit(String provider, UUID jobId, int attempt, String envelope) {
        return submit(provider, jobId, attempt, envelope, null, null, null);
    }

    /**
     * As {@link #submit(String, UUID, int, String)}, for a job whose worker reads a source (its key in the bucket), on
     * the adapter revision {@code revision} (only a worker of that revision leases it).
     */
    public Task submit(String provider, UUID jobId, int attempt, String envelope, String sourceKey, String sourceMediaType,
                       String revision) {
        Timestamp now = Timestamp.from(clock.instant());
        return jdbc.queryForObject("""
                INSERT INTO worker_tasks (task_id, provider, job_id, attempt, envelope, status, created_at, updated_at,
                                          source_key, source_media_type, revision)
                VALUES (?, ?, ?, ?, CAST(? AS jsonb), 'waiting', ?, ?, ?, ?, ?)
                ON CONFLICT (job_id, attempt) DO UPDATE SET updated_at = worker_tasks.updated_at
                RETURNING *""", WorkerTasks::task, UUID.randomUUID(), provider, jobId, attempt, envelope, now, now, sourceKey,
                sourceMediaType, revision);
    }

    /** What {@link #submitLeased} wrote: the task, and whether it went to the worker named (else it waits, or existed). */
    public record Submitted(Task task, boolean leased) {
    }

    /**
     * As {@link #submit(String, UUID, int, String, String, String, String)}, the task leased at once to {@code workerId}
     * (a poll of it waits on this instance) for {@code leaseFor}, if the member's {@code memberLimit} leases at once
     * leave room; else it waits to be leased as any. A submit sent again finds the task it wrote, leased to no one new.
     *
     * <p>Without the member's lock (waiting on it, across a transaction's round trips, was what capped a busy member's
     * rate): the limit is kept by counting again once the lease is committed ({@link #keptWithin}), before anyone hears
     * of it. Of two leases that saw the same last place free, the one committed later sees the other and gives its
     * place back (its task waits to be leased), so no worker is ever handed a lease beyond the limit.
     */
    public Submitted submitLeased(String provider, UUID jobId, int attempt, String envelope, String sourceKey,
                                  String sourceMediaType, String revision, String workerId, Duration leaseFor, int memberLimit) {
        UUID taskId = UUID.randomUUID();
        Instant now = clock.instant();
        Task task = jdbc.queryForObject("""
                    WITH room AS (
                        SELECT count(*) < ? AS free FROM worker_tasks
                         WHERE provider = ? AND status = 'leased' AND lease_expires_at >= ?)
                    INSERT INTO worker_tasks (task_id, provider, job_id, attempt, envelope, status, created_at, updated_at,
                                              source_key, source_media_type, revision, lease_token, lease_expires_at,
                                              worker_id, leases)
                    SELECT ?, ?, ?, ?, CAST(? AS jsonb), CASE WHEN free THEN 'leased' ELSE 'waiting' END, ?, ?, ?, ?, ?,
                           CASE WHEN free THEN gen_random_uuid() END, CASE WHEN free THEN CAST(? AS timestamptz) END,
                           CASE WHEN free THEN CAST(? AS text) END, CASE WHEN free THEN 1 ELSE 0 END
                      FROM room
                    ON CONFLICT (job_id, attempt) DO UPDATE SET updated_at = worker_tasks.updated_at
                    RETURNING *""", WorkerTasks::task, memberLimit, provider, Timestamp.from(now), taskId, provider, jobId, attempt,
                    envelope, Timestamp.from(now), Timestamp.from(now), sourceKey, sourceMediaType, revision,
                    Timestamp.from(now.plus(leaseFor)), workerId);
        boolean leased = task.taskId().equals(taskId) && task.status() == Status.LEASED;
        if (leased && keptWithin(provider, memberLimit, List.of(task)).isEmpty()) {
            return new Submitted(find(taskId).orElse(task), false); // given back: it waits to be leased
        }
        if (leased) {
            listener.leased(provider, 1);
        }
        return new Submitted(task, leased);
    }

    public Optional<Task> find(UUID taskId) {
        return jdbc.query("SELECT * FROM worker_tasks WHERE task_id = ?", WorkerTasks::task, taskId).stream().findFirst();
    }

    /** The task of attempt {@code attempt} of {@code jobId}, if its submit wrote one (each attempt has at most one). */
    public Optional<Task> findByAttempt(UUID jobId, int attempt) {
        return jdbc.query("SELECT * FROM worker_tasks WHERE job_id = ? AND attempt = ?", WorkerTasks::task, jobId, attempt)
                .stream().findFirst();
    }

    /**
     * Leases up to {@code max} of the member's tasks to {@code workerId} for {@code leaseFor}: those waiting, and those
     * whose lease ran out (their worker is gone or too slow; its token dies here). Each gets a fresh token. Tasks are
     * handed out in the relay's fair order: one per tenant per round (each tenant's oldest first, then each one's
     * second, ...), so a tenant with a thousand tasks waiting does not push another's few behind them. At most
     * {@code memberLimit} of the member's tasks are leased at once over all its workers (its {@code max-concurrency}):
     * the leases of a member are taken one call at a time (a transaction-scoped advisory lock), so two calls never both
     * take its last free place. Tasks another call holds are skipped, not waited for.
     */
    public List<Task> lease(String provider, String workerId, int max, Duration leaseFor, int memberLimit) {
        return lease(provider, workerId, max, leaseFor, memberLimit, null);
    }

    /**
     * As above, of the tasks whose revision's label is one of {@code labels} (null: any): a worker running a canary
     * candidate leases the candidate's tasks, one running the stable revision the stable ones. A task of no known
     * revision goes to any.
     */
    public List<Task> lease(String provider, String workerId, int max, Duration leaseFor, int memberLimit,
                            java.util.Collection<String> labels) {
        String[] wanted = labels == null ? null : labels.toArray(String[]::new);
        Instant now = clock.instant();
        List<Task> leased = transactions.execute(tx -> {
            jdbc.query("SELECT pg_advisory_xact_lock(hashtext(?))", rs -> { }, "worker_tasks:" + provider);
            return jdbc.query("""
                    WITH ranked AS (
                        SELECT t.task_id, t.created_at, row_number() OVER (PARTITION BY j.tenant_id ORDER BY t.created_at) AS turn
                          FROM worker_tasks t JOIN jobs j ON j.job_id = t.job_id
                         WHERE t.provider = ? AND t.%s AND (t.status = 'waiting' OR t.lease_expires_at < ?)
                           AND (CAST(? AS text[]) IS NULL OR t.revision IS NULL
                                OR split_part(t.revision, '@', 1) = ANY (CAST(? AS text[])))),
                    picked AS (
                        SELECT w.task_id FROM worker_tasks w JOIN ranked r ON r.task_id = w.task_id
                         ORDER BY r.turn, r.created_at
                         LIMIT GREATEST(0, LEAST(?, ? - (SELECT count(*) FROM worker_tasks
                                                          WHERE provider = ? AND status = 'leased' AND lease_expires_at >= ?)))
                           FOR UPDATE OF w SKIP LOCKED)
                    UPDATE worker_tasks t
                       SET status = 'leased', lease_token = gen_random_uuid(), lease_expires_at = ?, worker_id = ?,
                           leases = t.leases + 1, updated_at = ?
                      FROM picked
                     WHERE t.task_id = picked.task_id
                    RETURNING t.*""".formatted(OPEN), WorkerTasks::task, provider, Timestamp.from(now), wanted, wanted, max,
                    memberLimit, provider,
                    Timestamp.from(now), Timestamp.from(now.plus(leaseFor)), workerId, Timestamp.from(now));
        }).stream().sorted(java.util.Comparator.comparing(Task::createdAt)).toList();
        // A task handed as it was written takes a place without the lock: counted again, as it counts (keptWithin).
        leased = keptWithin(provider, memberLimit, leased);
        if (!leased.isEmpty()) {
            listener.leased(provider, leased.size());
        }
        return leased;
    }

    /**
     * Leases just committed, counted again against the member's limit before anyone hears of them, in a statement of
     * their own (it sees every lease committed before it): beyond the limit, the youngest of them are given back (their
     * tasks wait to be leased again, their lease numbers as before). Two leases that saw the same last place free
     * cannot both keep it: the one committed later counts the other. Returns those kept, in order.
     */
    private List<Task> keptWithin(String provider, int memberLimit, List<Task> leased) {
        if (leased.isEmpty()) {
            return leased;
        }
        Instant now = clock.instant();
        Integer live = jdbc.queryForObject("SELECT count(*) FROM worker_tasks WHERE provider = ? AND status = 'leased' "
                + "AND lease_expires_at >= ?", Integer.class, provider, Timestamp.from(now));
        int over = (live == null ? 0 : live) - memberLimit;
        if (over <= 0) {
            return leased;
        }
        int keep = Math.max(0, leased.size() - over);
        for (Task back : leased.subList(keep, leased.size())) {
            jdbc.update("""
                    UPDATE worker_tasks SET status = 'waiting', lease_token = NULL, lease_expires_at = NULL, worker_id = NULL,
                           leases = leases - 1, updated_at = ?
                     WHERE task_id = ? AND lease_token = ? AND status = 'leased'""", Timestamp.from(now), back.taskId(), back.leaseToken());
        }
        return leased.subList(0, keep);
    }

    /**
     * Whether {@code token} is the live lease of the task as just read: the refusal a write under it would meet, decided
     * without a statement (the write itself is still conditional on the token, should the lease change meanwhile).
     */
    public Written live(Task task, UUID token) {
        if (holds(task, token)) {
            return new Written(task, null);
        }
        Refusal why = refusal(task);
        listener.refused(task.provider(), why);
        return new Written(task, why);
    }

    /** Whether {@code token} is the live lease of the task as read (or written): leased under it, not run out. */
    public boolean holds(Task task, UUID token) {
        return task.status() == Status.LEASED && token.equals(task.leaseToken()) && !task.leaseExpiresAt().isBefore(clock.instant());
    }

    /**
     * Why a call under a token that is not the task's live one is refused: the task ended (by its worker, or cancelled
     * with its job), else the caller's lease is lost (the task waits again, or is leased under another token or a
     * lease that ran out).
     */
    private static Refusal refusal(Task notLive) {
        return switch (notLive.status()) {
            case CANCELLED -> Refusal.CANCELLED;
            case SUCCEEDED, FAILED -> Refusal.ENDED;
            case WAITING, LEASED -> Refusal.LEASE_LOST;
        };
    }

    /** Extends the lease of {@code token} on the task to {@code leaseFor} from now; refused once it is not the live one. */
    public Written heartbeat(UUID taskId, UUID token, Duration leaseFor) {
        Instant now = clock.instant();
        return written(taskId, jdbc.query("""
                UPDATE worker_tasks SET lease_expires_at = ?, updated_at = ?
                 WHERE task_id = ? AND lease_token = ? AND status = 'leased' AND lease_expires_at >= ?
                RETURNING *""", WorkerTasks::task, Timestamp.from(now.plus(leaseFor)), Timestamp.from(now), taskId, token,
                Timestamp.from(now)));
    }

    /**
     * The worker holding {@code token} rendered the task: its output is stored under {@code outputKey} (checked and
     * promoted by the gateway as any output), with what it billed.
     */
    public Written complete(UUID taskId, UUID token, String outputKey, String mediaType, BigDecimal billedUnits, String billedUnit) {
        Instant now = clock.instant();
        return written(taskId, jdbc.query("""
                UPDATE worker_tasks SET status = 'succeeded', output_key = ?, output_media_type = ?, billed_units = ?,
                       billed_unit = ?, lease_expires_at = NULL, updated_at = ?
                 WHERE task_id = ? AND lease_token = ? AND status = 'leased' AND lease_expires_at >= ?
                RETURNING *""", WorkerTasks::task, outputKey, mediaType, billedUnits, billedUnit, Timestamp.from(now), taskId, token,
                Timestamp.from(now)));
    }

    /** The worker holding {@code token} could not render the task: its category ({@code WorkerFailure}) and message. */
    public Written fail(UUID taskId, UUID token, String category, String message, Integer retryAfterSeconds) {
        Instant now = clock.instant();
        return written(taskId, jdbc.query("""
                UPDATE worker_tasks SET status = 'failed', error_category = ?, error_message = ?, retry_after_seconds = ?,
                       lease_expires_at = NULL, updated_at = ?
                 WHERE task_id = ? AND lease_token = ? AND status = 'leased' AND lease_expires_at >= ?
                RETURNING *""", WorkerTasks::task, category, message, retryAfterSeconds, Timestamp.from(now), taskId, token,
                Timestamp.from(now)));
    }

    /**
     * Withdraws the task if no worker ever leased it and it has waited longer than {@code after}: it ends as a
     * transient failure, so its job may go on elsewhere — safe, since no worker ever saw it, and none can lease it any
     * more. A lease that won the race makes this change nothing.
     */
    public Optional<Task> withdrawUnleased(UUID taskId, Duration after) {
        Instant now = clock.instant();
        return jdbc.query("""
                UPDATE worker_tasks SET status = 'failed', error_category = 'transient', error_message = ?, updated_at = ?
                 WHERE task_id = ? AND status = 'waiting' AND leases = 0 AND created_at < ?
                RETURNING *""", WorkerTasks::task, "no worker leased the task, and none was seen within " + after.toSeconds() + " s",
                Timestamp.from(now), taskId, Timestamp.from(now.minus(after))).stream().findFirst();
    }

    /** The job was cancelled: its open task ends; the worker holding it hears so at its next heartbeat. */
    public boolean cancel(UUID taskId) {
        List<String> cancelled = jdbc.queryForList("UPDATE worker_tasks SET status = 'cancelled', updated_at = ? WHERE task_id = ? AND "
                + OPEN + " RETURNING provider", String.class, Timestamp.from(clock.instant()), taskId);
        cancelled.forEach(provider -> listener.ended(provider, Status.CANCELLED));
        return !cancelled.isEmpty();
    }

    /**
     * Of {@code providers}, those with tasks to lease now, and how many: one statement for every member someone waits
     * on (the index {@code worker_tasks_open} holds open tasks only).
     */
    public java.util.Map<String, Integer> leasableAmong(java.util.Collection<String> providers) {
        java.util.Map<String, Integer> leasable = new java.util.HashMap<>();
        if (providers.isEmpty()) {
            return leasable;
        }
        jdbc.query("SELECT provider, count(*) AS n FROM worker_tasks WHERE provider = ANY(?) AND " + OPEN
                + " AND (status = 'waiting' OR lease_expires_at < ?) GROUP BY provider",
                rs -> {
                    leasable.put(rs.getString("provider"), rs.getInt("n"));
                }, (Object) providers.toArray(String[]::new), Timestamp.from(clock.instant()));
        return leasable;
    }

    private Written written(UUID taskId, List<Task> updated) {
        if (!updated.isEmpty()) {
            Task task = updated.get(0);
            if (task.status() == Status.SUCCEEDED || task.status() == Status.FAILED) {
                listener.ended(task.provider(), task.status());
            }
            return new Written(task, null);
        }
        Optional<Task> task = find(taskId);
        Refusal why = task.map(WorkerTasks::refusal).orElse(Refusal.NOT_FOUND);
        task.ifPresent(t -> listener.refused(t.provider(), why));
        return new Written(task.orElse(null), why);
    }

    private static Task task(ResultSet rs, int i) throws SQLException {
        return new Task(rs.getObject("task_id", UUID.class), rs.getString("provider"), rs.getObject("job_id", UUID.class),
                rs.getInt("attempt"), rs.getString("envelope"), Status.of(rs.getString("status")), rs.getObject("lease_token", UUID.class),
                instant(rs, "lease_expires_at"), rs.getString("worker_id"), rs.getInt("leases"), rs.getString("output_key"),
                rs.getString("output_media_type"), rs.getBigDecimal("billed_units"), rs.getString("billed_unit"),
                rs.getString("error_category"), rs.getString("error_message"), (Integer) rs.getObject("retry_after_seconds"),
                instant(rs, "created_at"), rs.getString("source_key"), rs.getString("source_media_type"), rs.getString("revision"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
