package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static io.jobgate.job.JobStatus.CANCELLED;
import static io.jobgate.job.JobStatus.FAILED;
import static io.jobgate.job.JobStatus.PROVIDER_PENDING;
import static io.jobgate.job.JobStatus.QUEUED;
import static io.jobgate.job.JobStatus.RETRY_WAIT;
import static io.jobgate.job.JobStatus.RUNNING;
import static io.jobgate.job.JobStatus.SUBMISSION_UNKNOWN;
import static io.jobgate.job.JobStatus.SUBMITTING;
import static io.jobgate.job.JobStatus.SUCCEEDED;

/**
 * Every change of a job's status, in one table: an {@link Event} leaves one of its "from" states
 * for its "to" state and has its {@link Effect}s, all in one transaction. Nothing else writes
 * {@code jobs.status}; the database refuses any other pair (table {@code job_status_transitions},
 * written from {@link #pairs()} by migration V6 and compared with it by a test).
 *
 * <p>Lock order, shared with the relay and admission: the job's outbox rows, then its row, then its provider
 * slot (V19), then the release rows of the tenant's counters (V24), of the gateway's and of the window's (V10), in
 * that order: rows that only releases lock, so a release waits on no admission and no relay round. One exception,
 * {@link Event#START}: its slot is claimed before the job's rows are locked. That closes no cycle: a claim takes a
 * free slot with {@code SKIP LOCKED} (it never waits), and every other write of a slot names it by the job it
 * holds, which a free slot's visible row does not, so no transaction ever waits for a slot being claimed. The tenant's own
 * row ({@code tenant_accounts}, which admission and the relay lock) is taken only by a redrive (its reservations
 * taken again, after the job's row and before the gateway's row 1) and by a refund's ledger entry (the balance).
 * Time is this class's clock, passed into SQL.
 */
public final class JobTransitions {

    /** What a transition does beside changing the status. */
    public enum Effect {
        /** A fresh lease token, owner and expiry. */
        TAKE_LEASE,
        /** The lease ends (token, owner, expiry cleared). */
        END_LEASE,
        /** The job's unpublished dispatch events are dropped (a newer one, or none, replaces them). */
        DROP_DISPATCH,
        /** The job leaves its dispatch slot: the tenant's and the window's running counts go down. */
        RELEASE_SLOT,
        /** A new dispatch event, due at the next attempt. */
        DISPATCH_AT,
        /** One more attempt counted, its attempt row opened. */
        OPEN_ATTEMPT,
        /** The provider is asked about the task from the given instant on (poller). */
        SCHEDULE_CHECK,
        /** Terminal: {@code finalized_at} set once, the admission reservations released. */
        FINALIZE,
        /** The tenant's share of the cost given back, at most once per job and redrive. */
        REFUND,
        /**
         * A failed job opens again (operator redrive): {@code finalized_at} and its failure cleared, one
         * more redrive counted, its admission reservations taken again, what was refunded debited again.
         */
        REOPEN,
        /** Followers learn the new status (a status outbox event). */
        STATUS_EVENT
    }

    private static final Set<JobStatus> OPEN = EnumSet.complementOf(EnumSet.of(SUCCEEDED, FAILED, CANCELLED));

    /** The table. Read it as "EVENT: from… → to, with effects". */
    public enum Event {
        /**
         * A worker takes a dispatched job for an attempt whose provider slot it already holds: the lease
         * and the call's start as one row version (the usual start; {@link #LEASE} then {@link #SUBMIT}
         * when caps, a re-validation verdict or the provider's gate must be looked at with the job leased).
         */
        START(SUBMITTING, EnumSet.of(QUEUED, RETRY_WAIT), Effect.TAKE_LEASE, Effect.OPEN_ATTEMPT),
        /** A worker takes a dispatched job for an attempt. */
        LEASE(RUNNING, EnumSet.of(QUEUED, RETRY_WAIT), Effect.TAKE_LEASE),
        /** Caps and provider gate passed: the call starts. */
        SUBMIT(SUBMITTING, EnumSet.of(RUNNING), Effect.OPEN_ATTEMPT),
        /** A leased job waits for a later attempt: gate closed or full, a retryable outcome, a reclaimed lease. */
        RETRY(RETRY_WAIT, EnumSet.of(RUNNING, SUBMITTING), Effect.END_LEASE, Effect.DROP_DISPATCH, Effect.RELEASE_SLOT,
                Effect.DISPATCH_AT, Effect.STATUS_EVENT),
        /** The provider never got the request, or its task failed retryably: a new attempt is safe. */
        RESUBMIT(RETRY_WAIT, EnumSet.of(PROVIDER_PENDING, SUBMISSION_UNKNOWN), Effect.DROP_DISPATCH, Effect.RELEASE_SLOT,
                Effect.DISPATCH_AT, Effect.STATUS_EVENT),
        /** The request may or may not have reached the provider: reconciliation asks it. */
        UNKNOWN(SUBMISSION_UNKNOWN, EnumSet.of(SUBMITTING), Effect.END_LEASE, Effect.RELEASE_SLOT, Effect.SCHEDULE_CHECK,
                Effect.STATUS_EVENT),
        /** The provider accepted the task; the slot stays held until it ends. */
        ACCEPTED(PROVIDER_PENDING, EnumSet.of(SUBMITTING), Effect.END_LEASE, Effect.SCHEDULE_CHECK, Effect.STATUS_EVENT),
        /** Reconciliation found the task of a submission that was unknown. */
        TASK_FOUND(PROVIDER_PENDING, EnumSet.of(SUBMISSION_UNKNOWN), Effect.SCHEDULE_CHECK, Effect.STATUS_EVENT),
        /**
         * A checked output was promoted. From {@code retry_wait} only for a late answer: the attempt whose
         * lease ran out answered before a newer attempt started (its guard is the attempt number).
         */
        SUCCEED(SUCCEEDED, EnumSet.of(SUBMITTING, PROVIDER_PENDING, SUBMISSION_UNKNOWN, RETRY_WAIT), Effect.DROP_DISPATCH,
                Effect.END_LEASE, Effect.RELEASE_SLOT, Effect.FINALIZE, Effect.STATUS_EVENT),
        /** Any open job may fail (caps, terminal errors, lifetime, dead letter, operator). */
        FAIL(FAILED, OPEN, Effect.DROP_DISPATCH, Effect.END_LEASE, Effect.RELEASE_SLOT, Effect.FINALIZE, Effect.REFUND,
                Effect.STATUS_EVENT),
        /** Any open job may be cancelled by its tenant. */
        CANCEL(CANCELLED, OPEN, Effect.DROP_DISPATCH, Effect.END_LEASE, Effect.RELEASE_SLOT, Effect.FINALIZE, Effect.REFUND,
                Effect.STATUS_EVENT),
        /**
         * An operator gives a failed job a new attempt under its id (never a cancelled one): the only
         * way out of a terminal state, allowed by the database for exactly this change (V18).
         */
        REDRIVE(QUEUED, EnumSet.of(FAILED), Effect.REOPEN, Effect.DROP_DISPATCH, Effect.DISPATCH_AT, Effect.STATUS_EVENT);

        private final JobStatus to;
        private final Set<JobStatus> from;
        private final Set<Effect> effects;

        Event(JobStatus to, Set<JobStatus> from, Effect... effects) {
            this.to = to;
            this.from = Set.copyOf(from);
            this.effects = effects.length == 0 ? Set.of() : Set.copyOf(EnumSet.copyOf(Arrays.asList(effects)));
        }

        public JobStatus to() {
            return to;
        }

        public Set<JobStatus> from() {
            return from;
        }

        public Set<Effect> effects() {
            return effects;
        }

        public boolean has(Effect effect) {
            return effects.contains(effect);
        }

        public static Event ending(JobStatus terminal) {
            return switch (terminal) {
                case SUCCEEDED -> SUCCEED;
                case FAILED -> FAIL;
                case CANCELLED -> CANCEL;
                default -> throw new IllegalArgumentException(terminal + " is not terminal");
            };
        }
    }

    /** Every allowed (from, to) pair: what the database's {@code job_status_transitions} holds. */
    public static Set<List<JobStatus>> pairs() {
        return Arrays.stream(Event.values()).flatMap(e -> e.from().stream().map(f -> List.of(f, e.to())))
                .collect(Collectors.toUnmodifiableSet());
    }

    /** The events that may leave {@code status}. */
    public static Set<Event> exits(JobStatus status) {
        return Arrays.stream(Event.values()).filter(e -> e.from().contains(status))
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(Event.class)));
    }

    /**
     * Who may make the transition: the holder of a lease token, the dispatch event a worker got (for
     * {@link Event#LEASE}), or anyone, optionally narrowed to some of the event's "from" states and
     * to one attempt (evidence about a provider task moves only a job still on the task's attempt).
     */
    public record Guard(UUID leaseToken, Long dispatchEvent, Set<JobStatus> onlyFrom, Integer attempt) {
        public static Guard anyone() {
            return new Guard(null, null, null, null);
        }

        public static Guard lease(UUID token) {
            return new Guard(token, null, null, null);
        }

        public static Guard dispatchEvent(long eventId) {
            return new Guard(null, eventId, null, null);
        }

        /** As {@link #dispatchEvent}, and only while the job has made {@code attempts} attempts (as its caller read it). */
        public static Guard dispatchEvent(long eventId, int attempts) {
            return new Guard(null, eventId, null, attempts);
        }

        public static Guard from(Set<JobStatus> statuses) {
            return new Guard(null, null, Set.copyOf(statuses), null);
        }

        /** Only from {@code statuses}, and only while the job is on {@code attempt}. */
        public static Guard onAttempt(int attempt, Set<JobStatus> statuses) {
            return new Guard(null, null, Set.copyOf(statuses), attempt);
        }
    }

    /**
     * What the transition writes besides the status (each event reads the fields its effects need).
     *
     * @param leaseOwner     TAKE_LEASE: the worker's name
     * @param leaseFor       TAKE_LEASE: how long the lease lasts
     * @param at             DISPATCH_AT: the next attempt's due time; SCHEDULE_CHECK: the first check
     * @param unparseable    DISPATCH_AT: unparseable replies in a row so far
     * @param providerTask   SCHEDULE_CHECK: the provider's task reference, when known
     * @param providerRequestId SCHEDULE_CHECK: the provider's request id, when known
     * @param adapter        OPEN_ATTEMPT: the adapter (provider) name
     * @param revision       OPEN_ATTEMPT: the adapter revision recorded on the attempt
     * @param category       the error category (the job's on FINALIZE; the status event's otherwise)
     * @param message        FINALIZE: the error message
     * @param resultJson     FINALIZE: the result record of a success
     * @param refundPercent  REFUND: the share of the cost given back
     * @param cause          FINALIZE of a failure: the category that used the caps up (told to observers only)
     * @param extraAttempts  REOPEN: attempts allowed beyond the ones made
     * @param expiresAt      REOPEN: the job's lifetime ends no earlier than this (a forced redrive's new window), or null
     * @param leaseToken     TAKE_LEASE: the new lease's token when the caller chose it (a slot claimed under it
     *                       first); null: a fresh one
     * @param providerState  SCHEDULE_CHECK: the adapter's own record of the task, when it gave one
     */
    public record Change(String leaseOwner, Duration leaseFor, Instant at, int unparseable, String providerTask,
                         String providerRequestId, String adapter, String revision, String category, String message,
                         String resultJson, int refundPercent, String cause, int extraAttempts, Instant expiresAt,
                         UUID leaseToken, String providerState) {
        public static Change none() {
            return new Change(null, null, null, 0, null, null, null, null, null, null, null, 0, null, 0, null, null, null);
        }

        public static Change lease(String owner, Duration leaseFor) {
            return new Change(owner, leaseFor, null, 0, null, null, null, null, null, null, null, 0, null, 0, null, null, null);
        }

        /** START: leased under {@code token} (its provider slot already claimed under it) for an attempt on {@code revision}. */
        public static Change start(String owner, Duration leaseFor, UUID token, String adapter, String revision) {
            return new Change(owner, leaseFor, null, 0, null, null, adapter, revision, null, null, null, 0, null, 0, null, token, null);
        }

        public static Change attempt(String worker, String adapter, String revision) {
            return new Change(worker, null, null, 0, null, null, adapter, revision, null, null, null, 0, null, 0, null, null, null);
        }

        public static Change retryAt(Instant at, int unparseable, String lastCategory) {
            return new Change(null, null, at, unparseable, null, null, null, null, lastCategory, null, null, 0, null, 0, null, null, null);
        }

        public static Change checkFrom(Instant firstCheck, String providerTask, String providerRequestId, String category) {
            return checkFrom(firstCheck, providerTask, providerRequestId, category, null);
        }

        /** As above, with the adapter's record of the task ({@code providerState}; null keeps the one the job has). */
        public static Change checkFrom(Instant firstCheck, String providerTask, String providerRequestId, String category,
                                       String providerState) {
            return new Change(null, null, firstCheck, 0, providerTask, providerRequestId, null, null, category, null, null, 0, null, 0, null,
                    null, providerState);
        }

        public static Change ending(String category, String message, String resultJson, int refundPercent) {
            return ending(category, message, resultJson, refundPercent, null);
        }

        /** An operator's redrive: dispatched at {@code at}, {@code extraAttempts} more, lifetime to at least {@code expiresAt}. */
        public static Change redrive(Instant at, int extraAttempts, Instant expiresAt) {
            return new Change(null, null, at, 0, null, null, null, null, null, null, null, 0, null, extraAttempts, expiresAt, null, null);
        }

        /** @param cause FINALIZE: what used the job's caps up, when that says more than its category (a 429) */
        public static Change ending(String category, String message, String resultJson, int refundPercent, String cause) {
            return new Change(null, null, null, 0, null, null, null, null, category, message, resultJson, refundPercent, cause, 0, null, null, null);
        }
    }

    /**
     * The job's row after the transition (its tenant, attempts; the opened attempt's number; extra
     * columns asked for), and what observers need: when it moved, and from which status since when.
     */
    public record Moved(String tenantId, int attempts, Map<String, Object> row, Instant at) {
        public String provider() {
            return (String) row.get("provider");
        }

        /** The status the job left. */
        public JobStatus from() {
            return JobStatus.fromWire((String) row.get("from_status")).orElseThrow();
        }

        /** When the job entered the status it left (only transitions write {@code updated_at}). */
        public Instant enteredAt() {
            return ((Timestamp) row.get("entered_at")).toInstant();
        }

        /** REOPEN: the micros charged again (what the last failure refunded), 0 when none. */
        public long redebitedMicros() {
            return row.get("redebited_micros") instanceof Number n ? n.longValue() : 0;
        }

        /** REFUND: the micros given back by this transition, 0 when none. */
        public long refundedMicros() {
            return row.get("refunded_micros") instanceof Number n ? n.longValue() : 0;
        }

        /** SUCCEED: the units metered at admission (the debit's), null when none were. */
        public java.math.BigDecimal units() {
            return row.get("debit_units") instanceof java.math.BigDecimal d ? d : null;
        }

        /** SUCCEED: the debit's unit ({@code images}, {@code audio_minutes}). */
        public String unit() {
            return (String) row.get("debit_unit");
        }
    }

    /** Told of every transition that was made (after its transaction committed or joined): metrics. */
    @FunctionalInterface
    public interface Observer {
        void moved(Event event, Moved moved, Change change);
    }

    private final NamedParameterJdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final Clock clock;
    private final List<Observer> observers = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Statements by shape (a few dozen at most: events times guards and write chains). */
    private final Map<Object, Statement> statements = new java.util.concurrent.ConcurrentHashMap<>();

    /** Adds an observer, told of each transition once it applied (after its transaction, when outermost). */
    public void observe(Observer observer) {
        observers.add(observer);
    }

    public JobTransitions(NamedParameterJdbcTemplate jdbc, TransactionTemplate transactions, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
    }

    public Clock clock() {
        return clock;
    }

    public Optional<Moved> apply(UUID jobId, Event event, Guard guard, Change change) {
        return apply(jobId, event, guard, change, null);
    }

    /**
     * Makes the transition if the job is in one of the event's "from" states (narrowed by the guard)
     * and the guard holds; otherwise changes nothing.
     *
     * @param returning extra columns of the updated row (aliased {@code j}) to return, or null
     * @return the moved row, empty when the transition did not apply
     */
    public Optional<Moved> apply(UUID jobId, Event event, Guard guard, Change change, String returning) {
        return apply(jobId, event, guard, change, returning, null);
    }

    /** The call's slot, freed by its job and lease token, and its provider's share given back on the thread's release row. */
    private static final Statement END_CALL = new Statement("""
            WITH freed AS (
                UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL
                 WHERE job_id = :job AND lease_token = :token RETURNING provider)
            INSERT INTO provider_window AS w (provider, shard, running)
            SELECT provider, :callShard, -1 FROM freed
            ON CONFLICT (provider, shard) DO UPDATE SET running = w.running - 1
            RETURNING 1""");

    /**
     * A call answered while its job is still {@code submitting} (its answer waits to be checked and
     * recorded): the call's provider slot (V19) and its provider's share of the dispatch window (V30)
     * come back now, so the provider's next call need not wait for this answer's record. Under the
     * call's lease token: a call whose lease was lost (its slot freed by the transition that took
     * the job away) frees nothing. The transition that later takes the job out of {@code submitting}
     * finds the slot free and gives back nothing twice. Not a transition: the job's row and status stay.
     *
     * @return whether the call still held its slot (and gave it back now)
     */
    public boolean endCall(UUID jobId, UUID leaseToken) {
        MapSqlParameterSource p = new MapSqlParameterSource().addValue("job", jobId).addValue("token", leaseToken)
                .addValue("callShard", releaseShard() - 1);
        return !END_CALL.queryForList(jdbc, p).isEmpty();
    }

    /**
     * A worker's record of the attempt that this transition ends: {@code set} assigns the attempt row's
     * columns from {@code values} (parameters named {@code close…}). Written in the transition's
     * statement of writes, only when the transition applies, to the attempt of that number still under
     * {@code leaseToken}: the same row the worker would close by itself, one round trip fewer.
     */
    public record AttemptClose(int attempt, UUID leaseToken, String set, Map<String, Object> values) {
    }

    /**
     * As {@link #apply(UUID, Event, Guard, Change, String)}, closing the attempt {@code closing} (when
     * not null) in the same statement as the transition's other writes.
     */
    public Optional<Moved> apply(UUID jobId, Event event, Guard guard, Change change, String returning, AttemptClose closing) {
        Set<JobStatus> from = guard.onlyFrom() == null ? event.from()
                : guard.onlyFrom().stream().filter(event.from()::contains).collect(Collectors.toSet());
        if (from.isEmpty()) {
            return Optional.empty();
        }
        Instant now = clock.instant();
        MapSqlParameterSource p = new MapSqlParameterSource()
                .addValue("job", jobId)
                .addValue("to", event.to().wire())
                .addValue("from", JobStatus.sqlList(from))
                .addValue("now", Timestamp.from(now))
                .addValue("token", guard.leaseToken())
                .addValue("event", guard.dispatchEvent())
                .addValue("attempt", guard.attempt());
        setParameters(event, change, p, now);
        if (event.has(Effect.OPEN_ATTEMPT)) {
            p.addValue("worker", change.leaseOwner()).addValue("adapter", change.adapter()).addValue("revision", change.revision());
        }
        Statement update = statements.computeIfAbsent(new UpdateShape(event, guard.leaseToken() != null,
                guard.dispatchEvent() != null, guard.attempt() != null, returning), shape -> new Statement(updateSql(event, guard, returning)));
        Optional<Moved> moved = transactions.execute(tx -> {
            List<Map<String, Object>> rows = update.queryForList(jdbc, p);
            if (rows.isEmpty()) {
                return Optional.<Moved>empty();
            }
            Map<String, Object> row = new LinkedHashMap<>(rows.get(0));
            String tenant = (String) row.get("tenant_id");
            int attempts = ((Number) row.get("attempts")).intValue();
            boolean heldSlot = Boolean.TRUE.equals(row.get("held_slot"));
            p.addValue("tenant", tenant).addValue("attempts", attempts).addValue("redrives", ((Number) row.get("redrives")).intValue());
            if (event.has(Effect.REOPEN)) {
                // What the last failure refunded is charged again (nothing when it was not refunded), so
                // the ledger says what the tenant pays for this job; then its reservations, as admission takes them.
                // On the tenant's row and the gateway's row 1, not on release rows: those may only go down (a
                // reader's late snapshot of them must err on the side of refusing, V24).
                List<Map<String, Object>> debited = jdbc.queryForList("""
                        INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, reference, created_at, units, unit, redrive)
                        SELECT :tenant, :job, 'debit', -r.amount_micros, 'redrive', :now, -r.units, r.unit, :redrives
                          FROM ledger r WHERE r.job_id = :job AND r.entry_type = 'refund' AND r.redrive = :redrives - 1
                        RETURNING -amount_micros AS micros""", p);
                row.put("redebited_micros", debited.isEmpty() ? 0L : ((Number) debited.get(0).get("micros")).longValue());
                p.addValue("bytes", ((Number) row.get("source_bytes")).longValue());
                jdbc.update("""
                        WITH tenant AS (
                            UPDATE tenant_accounts SET open_jobs = open_jobs + 1, queued_bytes = queued_bytes + :bytes
                             WHERE tenant_id = :tenant RETURNING tenant_id)
                        UPDATE gateway_capacity SET in_flight = in_flight + 1 WHERE id = 1 AND (SELECT count(*) FROM tenant) >= 0""", p);
            }
            // The rest of the transition's writes: one statement, one round trip, its parts in the lock
            // order (the provider slot, then the release rows) and the counters last, right before the
            // commit. The counters' releases go to rows only releases lock (V10, V24), so the tenant's row,
            // which admission and the relay lock, is not held by a worker's transaction.
            WriteChain writes = new WriteChain(closing == null ? null : closing.set());
            // Its provider's share of the dispatch window (V30) is given back once the job is past its
            // call, or gives its dispatch slot back before it: not when it goes on waiting at the provider.
            String fromStatus = (String) row.get("from_status");
            boolean leftCall = SUBMITTING.wire().equals(fromStatus) && event.to() != SUBMITTING;
            boolean callWindow = heldSlot && BEFORE_CALL_PAST.contains(fromStatus) && (event.has(Effect.RELEASE_SLOT) || leftCall);
            if (callWindow) {
                p.addValue("provider", row.get("provider"));
            }
            if (leftCall) {
                // The call is over (as far as this job's state goes): its provider slot is free (V19),
                // whichever event ended it. The slot row comes after the job row, as when it was taken.
                // By the job alone: a job is in one call at a time, so whichever slot names it is its call's.
                writes.then("free_slot", "UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL"
                        + " WHERE job_id = :job AND {after} RETURNING 1");
            }
            long refund = 0;
            if (event.has(Effect.REFUND) && change.refundPercent() > 0) {
                long cost = ((Number) row.get("cost_micros")).longValue();
                refund = Math.multiplyExact(cost, (long) change.refundPercent()) / 100;
                if (refund > 0) {
                    // The debit's metered units go back in the same share; once per redrive (V18: a redriven
                    // job was charged again for what its last failure refunded).
                    p.addValue("refund", refund).addValue("cost", cost).addValue("reference", change.category());
                    writes.then(WriteChain.REFUND, """
                            INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, reference, created_at, units, unit, redrive)
                            SELECT :tenant, :job, 'refund', :refund, :reference, :now, -d.units * :refund / :cost, d.unit, :redrives
                              FROM ledger d WHERE d.job_id = :job AND d.entry_type = 'debit' AND d.redrive = 0 AND {after}
                            ON CONFLICT (job_id, entry_type, redrive) WHERE entry_type IN ('debit', 'refund') DO NOTHING
                            RETURNING 1""");
                }
            }
            if (event.has(Effect.DISPATCH_AT)) {
                writes.then("dispatch", "INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at) "
                        + "SELECT :job, :tenant, 'dispatch', :at, :now WHERE {after} RETURNING 1");
            }
            if (event.has(Effect.STATUS_EVENT)) {
                p.addValue("category", change.category());
                writes.then("status_event", """
                        INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, created_at)
                        SELECT :job, :tenant, 'status', jsonb_build_object('status', CAST(:to AS text),
                               'attempt', CAST(:attempts AS int), 'error_category', CAST(:category AS text)), :now, :now
                         WHERE {after} RETURNING 1""");
            }
            if (closing != null) {
                // After the job's row and its slot, before the counters: the order of open_attempts below.
                p.addValues(closing.values()).addValue("closeAttempt", closing.attempt()).addValue("closeToken", closing.leaseToken());
                writes.then("closed_attempt", "UPDATE attempts SET " + closing.set()
                        + " WHERE job_id = :job AND attempt = :closeAttempt AND lease_token = :closeToken AND {after} RETURNING 1");
            }
            if (event.has(Effect.FINALIZE)) {
                // An attempt still open ends with its job (a worker that died or lost its lease before
                // recording: its lease ended with the job, so no sweep would close it). A worker that
                // records after this overwrites it with what it saw. Not the attempt closed just above:
                // one statement must not update a row twice.
                writes.then("open_attempts", """
                        UPDATE attempts SET ended_at = :now, outcome = 'ended_with_job',
                               error_message = 'the job ended (' || CAST(:to AS text) || ') before this attempt was recorded'
                         WHERE job_id = :job AND ended_at IS NULL""" + (closing == null ? "" : " AND attempt <> :closeAttempt")
                        + " AND {after} RETURNING 1");
                releaseCounters(writes, p, heldSlot, true, ((Number) row.get("source_bytes")).longValue(), callWindow, leftCall);
            } else if (event.has(Effect.RELEASE_SLOT) && heldSlot) {
                releaseCounters(writes, p, true, false, 0, callWindow, leftCall);
            } else if (callWindow) {
                releaseCallWindow(writes, p, leftCall);
            }
            if (writes.refunded(statements, jdbc, p) && refund > 0) {
                row.put("refunded_micros", refund);
            }
            return Optional.of(new Moved(tenant, attempts, row, now));
        });
        moved.ifPresent(m -> observers.forEach(o -> o.moved(event, m, change)));
        return moved;
    }

    /** The shape of a transition's first statement: what its text depends on (the values are parameters). */
    private record UpdateShape(Event event, boolean token, boolean dispatchEvent, boolean attempt, String returning) {
    }

    /** A transition's first statement: the job row's move (and what comes with it in the same statement). */
    private static String updateSql(Event event, Guard guard, String returning) {
        String guards = guardSql(guard);
        // A job's waiting events are found through the job's index (outbox_job). The CASE says
        // "published_at IS NULL" in a form the planner cannot use to prove the predicate of the
        // relay's partial indexes of waiting events (a plain IS NULL, or IS NOT DISTINCT FROM NULL,
        // which the parser turns into one, can): with statistics taken while few events waited, a
        // generic plan read one of those whole, every tenant's waiting event, to find this job's.
        // Taking a lease the long way (LEASE: its transaction may requeue the job, writing its dispatch
        // events after its row) locks the job's waiting dispatch events first, then its row (the relay's
        // and finalize's order), in the same statement: one initplan, no extra round trip. START writes
        // no dispatch event after the row, so it locks none: the relay marks a round's events published
        // while their workers start them, and the lock had queued each start behind the whole mark (and
        // the mark behind each start: 2 ms a start while 2,000 calls started). Dropping
        // them (a newer one, or none, replaces them) deletes them first the same way, only while the
        // transition applies (checked, not locked: the job row comes second).
        boolean lockEvents = event.has(Effect.TAKE_LEASE) && !event.has(Effect.OPEN_ATTEMPT);
        boolean dropEvents = event.has(Effect.DROP_DISPATCH);
        String update = (lockEvents ? "WITH waiting_events AS (SELECT event_id FROM outbox WHERE job_id = :job"
                + " AND event_type = 'dispatch' AND CASE WHEN published_at IS NULL THEN true END FOR UPDATE) " : "")
                + (dropEvents ? "WITH waiting_events AS (DELETE FROM outbox o USING jobs j"
                + " WHERE o.job_id = :job AND o.event_type = 'dispatch' AND CASE WHEN o.published_at IS NULL THEN true END"
                + " AND j.job_id = o.job_id AND j.status = ANY (string_to_array(:from, ','))" + guards + " RETURNING o.event_id) " : "")
                + "UPDATE jobs j SET status = :to, updated_at = :now" + setSql(event)
                + " FROM (SELECT job_id, dispatched_at, status, updated_at FROM jobs WHERE job_id = :job FOR UPDATE) old"
                // j by its key, and no "finalized_at IS NULL" (the status check implies it, by the jobs
                // table's CHECK): with it, the generic plan read j through a partial index of open jobs
                // and joined by filter, a row per open job for every transition (seen with 1M of history).
                + " WHERE j.job_id = :job AND j.job_id = old.job_id"
                + " AND j.status = ANY (string_to_array(:from, ','))"
                + (lockEvents || dropEvents ? " AND (SELECT count(*) FROM waiting_events) >= 0" : "") + guards
                + " RETURNING j.tenant_id, j.attempts, j.source_bytes, j.cost_micros, j.lease_token, j.redrives,"
                + " old.dispatched_at IS NOT NULL AS held_slot, j.provider, old.status AS from_status, old.updated_at AS entered_at"
                + (event == Event.SUCCEED ? ", (SELECT d.units FROM ledger d WHERE d.job_id = j.job_id AND d.entry_type = 'debit' AND d.redrive = 0) AS debit_units,"
                        + " (SELECT d.unit FROM ledger d WHERE d.job_id = j.job_id AND d.entry_type = 'debit' AND d.redrive = 0) AS debit_unit" : "")
                + (returning == null ? "" : ", " + returning);
        String sql = update;
        if (event.has(Effect.OPEN_ATTEMPT)) {
            sql = "WITH moved AS (" + update + "), opened AS ("
                    + " INSERT INTO attempts (job_id, tenant_id, attempt, lease_token, worker, adapter, adapter_revision, started_at)"
                    + " SELECT :job, m.tenant_id, m.attempts, m.lease_token, :worker, :adapter, :revision, :now FROM moved m"
                    + " RETURNING attempt) SELECT m.*, (SELECT attempt FROM opened) AS opened_attempt FROM moved m";
        }
        return sql;
    }

    /** Statuses of a dispatched job up to the end of its call: its provider's share of the window (V30) is held in them. */
    private static final Set<String> BEFORE_CALL_PAST = Set.of(QUEUED.wire(), RETRY_WAIT.wire(), RUNNING.wire(), SUBMITTING.wire());

    /** Release rows of {@code gateway_capacity} and {@code dispatch_window} (V10): ids 2..17. */
    static final int RELEASE_SHARDS = 16;

    /** Release rows of each tenant's counters in {@code tenant_releases} (V24): shards 1..8. */
    static final int TENANT_RELEASE_SHARDS = 8;

    /** The next thread's release shard (0-based), from a random start so that instances start apart. */
    private static final java.util.concurrent.atomic.AtomicInteger NEXT_RELEASE_SHARD =
            new java.util.concurrent.atomic.AtomicInteger(java.util.concurrent.ThreadLocalRandom.current().nextInt(RELEASE_SHARDS));

    /**
     * This thread's release shard (0-based): threads take shards in turn, so up to {@link #RELEASE_SHARDS}
     * threads of an instance (its workers) never pick the same counter row. Picked at random per release,
     * two of eight workers often did, and the second waited for the first's commit (its WAL flush): 5 to
     * 25 ms on a sixth of a drain's finalizes.
     */
    private static final ThreadLocal<Integer> RELEASE_SHARD =
            ThreadLocal.withInitial(() -> Math.floorMod(NEXT_RELEASE_SHARD.getAndIncrement(), RELEASE_SHARDS));

    /** The release shard of the calling thread: {@code gateway_capacity} and {@code dispatch_window} id 2..17. */
    static int releaseShard() {
        return 2 + RELEASE_SHARD.get();
    }

    /** The calling thread's shard of a tenant's release rows, 1..8 (threads of one instance in turn, as above). */
    static int tenantReleaseShard() {
        return 1 + RELEASE_SHARD.get() % TENANT_RELEASE_SHARDS;
    }

    /**
     * A job gives back what it held: its dispatch slot ({@code slot}: the tenant's running count and
     * the window), and when it ends ({@code finalize}) its admission reservations (the tenant's open
     * jobs and queued bytes, the gateway's in-flight count). Every release goes to a release row that
     * neither admission nor the relay ever locks: one of the tenant's in {@code tenant_releases} (V24),
     * one of the gateway's and the window's (V10), each the calling thread's own ({@link #releaseShard}); one statement, the tenant's
     * release row first, then the gateway's and the window's (the order every releaser keeps; see the
     * lock order above). The tenant's rows are made with its account row (a trigger); should one be
     * missing, the release creates it rather than be lost.
     */
    private static void releaseCounters(WriteChain writes, MapSqlParameterSource p, boolean slot, boolean finalize, long bytes,
                                        boolean callWindow, boolean leftCall) {
        if (callWindow) {
            releaseCallWindow(writes, p, leftCall);
        }
        p.addValue("slot", slot ? 1 : 0).addValue("opened", finalize ? 1 : 0).addValue("bytes", bytes)
                .addValue("shard", releaseShard())
                .addValue("tenantShard", tenantReleaseShard());
        writes.then("tenant_release", """
                INSERT INTO tenant_releases AS r (tenant_id, shard, open_jobs, queued_bytes, running_jobs)
                SELECT :tenant, :tenantShard, -:opened, -:bytes, -:slot WHERE {after}
                ON CONFLICT (tenant_id, shard) DO UPDATE SET open_jobs = r.open_jobs + EXCLUDED.open_jobs,
                    queued_bytes = r.queued_bytes + EXCLUDED.queued_bytes, running_jobs = r.running_jobs + EXCLUDED.running_jobs
                RETURNING 1""");
        if (finalize) {
            writes.then("gateway_release", "UPDATE gateway_capacity SET in_flight = in_flight - :opened WHERE id = :shard AND {after} RETURNING 1");
        }
        if (slot) {
            writes.then("window_release", "UPDATE dispatch_window SET running = running - :slot WHERE id = :shard AND {after} RETURNING 1");
        }
    }

    /**
     * The job's provider gets back its share of the dispatch window (V30), on the calling thread's
     * release row of that provider (1..16; row 0 is the relay's), made on first use. Before the
     * tenant's and the window's release rows: the order every releaser keeps. A job leaving its call
     * ({@code leftCall}) gives it back only with the slot it freed: a call answered earlier gave both
     * back then ({@link #endCall}).
     */
    private static void releaseCallWindow(WriteChain writes, MapSqlParameterSource p, boolean leftCall) {
        p.addValue("callShard", releaseShard() - 1);
        writes.then(leftCall ? "call_window_release_with_slot" : "call_window_release", """
                INSERT INTO provider_window AS w (provider, shard, running)
                SELECT :provider, :callShard, -1 WHERE {after}""" + (leftCall ? " AND EXISTS (SELECT 1 FROM free_slot)" : "") + """

                ON CONFLICT (provider, shard) DO UPDATE SET running = w.running - 1
                RETURNING 1""");
    }

    /**
     * Writes of one transition run as one statement: each a data-modifying CTE whose condition
     * ({@code {after}} in its text) reads the one before it, so they run in the order they were added
     * (PostgreSQL promises no order between the parts of a statement otherwise).
     */
    static final class WriteChain {
        static final String REFUND = "refund";
        private final List<String> names = new java.util.ArrayList<>(8);
        private final List<String> writes = new java.util.ArrayList<>(8);
        private final String variant;

        /** @param variant what the writes' texts depend on beside their names (the attempt close's columns), or null */
        WriteChain(String variant) {
            this.variant = variant;
        }

        void then(String name, String write) {
            names.add(name);
            writes.add(write);
        }

        String sql() {
            StringBuilder sql = new StringBuilder();
            String last = null;
            for (int i = 0; i < names.size(); i++) {
                sql.append(last == null ? "WITH " : ",\n").append(names.get(i)).append(" AS (")
                        .append(writes.get(i).replace("{after}", last == null ? "true" : "(SELECT count(*) FROM " + last + ") >= 0"))
                        .append(')');
                last = names.get(i);
            }
            return sql + "\nSELECT (SELECT count(*) FROM " + last + ") AS written, "
                    + (names.contains(REFUND) ? "(SELECT count(*) FROM " + REFUND + ")" : "0") + " AS refunded";
        }

        /** Runs the chain (nothing when empty), its text made once per shape; @return whether it wrote the refund. */
        boolean refunded(Map<Object, Statement> statements, NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
            if (names.isEmpty()) {
                return false;
            }
            Statement chain = statements.computeIfAbsent(new ChainShape(String.join(",", names), variant), shape -> new Statement(sql()));
            return ((Number) chain.queryForMap(jdbc, p).get("refunded")).intValue() == 1;
        }
    }

    /** The shape of a transition's statement of writes: the writes by name, and what else their texts depend on. */
    private record ChainShape(String names, String variant) {
    }

    /** The shape of a peek: what its text depends on. */
    private record PeekShape(boolean token, boolean dispatchEvent, boolean attempt, String columns) {
    }

    /**
     * A statement with named parameters, parsed once: its JDBC text is one String instance for good (the
     * driver's statement cache finds it by identity and a cached hash instead of hashing and comparing a
     * long text on every call, as a text built per call costs) and its parameters are read in order.
     */
    static final class Statement {
        private final org.springframework.jdbc.core.namedparam.ParsedSql parsed;
        private final String jdbcSql;

        Statement(String namedSql) {
            this.parsed = org.springframework.jdbc.core.namedparam.NamedParameterUtils.parseSqlStatement(namedSql);
            this.jdbcSql = org.springframework.jdbc.core.namedparam.NamedParameterUtils.substituteNamedParameters(parsed, null);
        }

        List<Map<String, Object>> queryForList(NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
            return jdbc.getJdbcOperations().queryForList(jdbcSql, args(p));
        }

        Map<String, Object> queryForMap(NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
            return jdbc.getJdbcOperations().queryForMap(jdbcSql, args(p));
        }

        private Object[] args(MapSqlParameterSource p) {
            return org.springframework.jdbc.core.namedparam.NamedParameterUtils.buildValueArray(parsed, p, null);
        }
    }

    /**
     * The job's {@code columns} (row aliased {@code j}) if the transition would apply now; read
     * without a lock (a worker's first look at a dispatch message).
     */
    public Optional<Map<String, Object>> peek(UUID jobId, Event event, Guard guard, String columns) {
        MapSqlParameterSource p = new MapSqlParameterSource().addValue("job", jobId)
                .addValue("from", JobStatus.sqlList(event.from()))
                .addValue("token", guard.leaseToken()).addValue("event", guard.dispatchEvent())
                .addValue("attempt", guard.attempt());
        // No "finalized_at IS NULL": the status implies it, and it let the plan scan open jobs (see apply).
        Statement peek = statements.computeIfAbsent(new PeekShape(guard.leaseToken() != null, guard.dispatchEvent() != null,
                guard.attempt() != null, columns), shape -> new Statement("SELECT " + columns + " FROM jobs j WHERE j.job_id = :job"
                + " AND j.status = ANY (string_to_array(:from, ','))" + guardSql(guard)));
        return peek.queryForList(jdbc, p).stream().findFirst();
    }

    private static String guardSql(Guard guard) {
        StringBuilder sql = new StringBuilder();
        if (guard.leaseToken() != null) {
            // Not "=": it would imply lease_token IS NOT NULL, and the generic plan may then read the
            // partial index of every leased job instead of the job by its key (HotPathPlansTest).
            sql.append(" AND j.lease_token IS NOT DISTINCT FROM :token");
        }
        if (guard.dispatchEvent() != null) {
            // Only a dispatched, unleased job, and only for its newest dispatch event: an older,
            // duplicated message must not start an attempt before its time.
            sql.append(" AND j.lease_token IS NULL AND j.dispatched_at IS NOT NULL AND :event = "
                    + "(SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch')");
        }
        if (guard.attempt() != null) {
            sql.append(" AND j.attempts = :attempt");
        }
        return sql.toString();
    }

    private static String setSql(Event event) {
        StringBuilder set = new StringBuilder();
        if (event.has(Effect.TAKE_LEASE)) {
            set.append(", lease_token = :newToken, lease_owner = :owner, lease_expires_at = :leaseUntil");
        }
        if (event.has(Effect.END_LEASE)) {
            set.append(", lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL");
        }
        if (event.has(Effect.RELEASE_SLOT)) {
            set.append(", dispatched_at = NULL");
        }
        if (event.has(Effect.DISPATCH_AT)) {
            set.append(", next_attempt_at = :at, unparseable_streak = :unparseable, next_check_at = NULL, provider_task = NULL,"
                    + " provider_state = NULL");
        }
        if (event.has(Effect.SCHEDULE_CHECK)) {
            set.append(", next_check_at = :at, checks = 0, check_claimed_by = NULL, provider_task = coalesce(:task, j.provider_task),"
                    + " provider_request_id = coalesce(:requestId, j.provider_request_id),"
                    + " provider_state = coalesce(:providerState, j.provider_state)");
        }
        if (event.has(Effect.OPEN_ATTEMPT)) {
            set.append(", attempts = j.attempts + 1, adapter_revision = :revision");
        }
        if (event.has(Effect.REOPEN)) {
            set.append(", finalized_at = NULL, error_category = NULL, error_message = NULL, result = NULL,"
                    + " redrives = j.redrives + 1, max_attempts = greatest(j.max_attempts, j.attempts + :extra),"
                    + " expires_at = greatest(j.expires_at, coalesce(CAST(:expiresAt AS timestamptz), j.expires_at))");
        }
        if (event.has(Effect.FINALIZE)) {
            set.append(", finalized_at = :now, error_category = :errorCategory, error_message = :errorMessage,"
                    + " next_attempt_at = NULL, result = coalesce(CAST(:result AS jsonb), j.result)");
        }
        return set.toString();
    }

    /** The values {@link #setSql} names. */
    private static void setParameters(Event event, Change change, MapSqlParameterSource p, Instant now) {
        if (event.has(Effect.TAKE_LEASE)) {
            p.addValue("newToken", change.leaseToken() != null ? change.leaseToken() : UUID.randomUUID()).addValue("owner", change.leaseOwner())
                    .addValue("leaseUntil", Timestamp.from(now.plus(change.leaseFor())));
        }
        if (event.has(Effect.DISPATCH_AT)) {
            p.addValue("at", Timestamp.from(change.at())).addValue("unparseable", change.unparseable());
        }
        if (event.has(Effect.SCHEDULE_CHECK)) {
            p.addValue("at", Timestamp.from(change.at())).addValue("task", change.providerTask())
                    .addValue("requestId", change.providerRequestId()).addValue("providerState", change.providerState());
        }
        if (event.has(Effect.REOPEN)) {
            p.addValue("extra", change.extraAttempts())
                    .addValue("expiresAt", change.expiresAt() == null ? null : Timestamp.from(change.expiresAt()));
        }
        if (event.has(Effect.FINALIZE)) {
            p.addValue("errorCategory", change.category()).addValue("errorMessage", change.message())
                    .addValue("result", change.resultJson());
        }
    }
}
