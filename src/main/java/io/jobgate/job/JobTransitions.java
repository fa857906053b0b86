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
 * {@link Event#START} of a provider with a canary candidate: its slot is claimed before the job's rows are locked
 * (the usual start, {@link #startOnFreeSlot}, keeps the order). That closes no cycle: a claim takes a
 * free slot with {@code SKIP LOCKED} (it never waits), and every other write of a slot names it by the job it
 * holds, which a free slot's visible row does not, so no transaction ever waits for a slot being claimed. The tenant's own
 * row ({@code tenant_accounts}, which admission and the relay lock) is taken only by a redrive (its reservations
 * taken again, after the job's row and before the gateway's row 1) and by a refund's ledger entry (the balance).
 * Time is this class's clock, passed into SQL. The statements' texts are {@link TransitionSql}'s; the
 * release rows a thread gives counters back on, {@link ReleaseShards}'.
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
     * @param message        FINALIZE: the error message; RETRY: why the job waits (its waiting_reason), or null
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
                         UUID leaseToken, String providerState, RevisionRole role) {
        public static Change none() {
            return new Change(null, null, null, 0, null, null, null, null, null, null, null, 0, null, 0, null, null, null, null);
        }

        public static Change lease(String owner, Duration leaseFor) {
            return new Change(owner, leaseFor, null, 0, null, null, null, null, null, null, null, 0, null, 0, null, null, null, null);
        }

        /**
         * START: leased under {@code token} (its provider slot already claimed under it) for an attempt on {@code revision},
         * in its {@code role}.
         */
        public static Change start(String owner, Duration leaseFor, UUID token, String adapter, String revision, RevisionRole role) {
            return new Change(owner, leaseFor, null, 0, null, null, adapter, revision, null, null, null, 0, null, 0, null, token, null,
                    role);
        }

        public static Change attempt(String worker, String adapter, String revision, RevisionRole role) {
            return new Change(worker, null, null, 0, null, null, adapter, revision, null, null, null, 0, null, 0, null, null, null,
                    role);
        }

        public static Change retryAt(Instant at, int unparseable, String lastCategory) {
            return retryOn(null, at, unparseable, lastCategory);
        }

        /**
         * RETRY on {@code provider}: a pool job's next attempt moved to another member ({@code adapter} carries it; the
         * dispatch-window share is given back to the provider it held it on, the one before the move). Null: it stays.
         */
        public static Change retryOn(String provider, Instant at, int unparseable, String lastCategory) {
            return retryOn(provider, at, unparseable, lastCategory, null);
        }

        /** As above; {@code waitingReason}: why the job waits (shown on it while it does), or null. */
        public static Change retryOn(String provider, Instant at, int unparseable, String lastCategory, String waitingReason) {
            return new Change(null, null, at, unparseable, null, null, provider, null, lastCategory, waitingReason, null, 0, null, 0, null,
                    null, null, null);
        }

        public static Change checkFrom(Instant firstCheck, String providerTask, String providerRequestId, String category) {
            return checkFrom(firstCheck, providerTask, providerRequestId, category, null);
        }

        /** As above, with the adapter's record of the task ({@code providerState}; null keeps the one the job has). */
        public static Change checkFrom(Instant firstCheck, String providerTask, String providerRequestId, String category,
                                       String providerState) {
            return new Change(null, null, firstCheck, 0, providerTask, providerRequestId, null, null, category, null, null, 0, null, 0, null,
                    null, providerState, null);
        }

        public static Change ending(String category, String message, String resultJson, int refundPercent) {
            return ending(category, message, resultJson, refundPercent, null);
        }

        /** An operator's redrive: dispatched at {@code at}, {@code extraAttempts} more, lifetime to at least {@code expiresAt}. */
        public static Change redrive(Instant at, int extraAttempts, Instant expiresAt) {
            return new Change(null, null, at, 0, null, null, null, null, null, null, null, 0, null, extraAttempts, expiresAt, null, null, null);
        }

        /** @param cause FINALIZE: what used the job's caps up, when that says more than its category (a 429) */
        public static Change ending(String category, String message, String resultJson, int refundPercent, String cause) {
            return new Change(null, null, null, 0, null, null, null, null, category, message, resultJson, refundPercent, cause, 0, null, null, null, null);
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
    /** The transitions' statements, each made once per shape. */
    private final TransitionSql sql = new TransitionSql();

    /** Statuses of a dispatched job up to the end of its call: its provider's share of the window (V30) is held in them. */
    private static final Set<String> BEFORE_CALL_PAST = Set.of(QUEUED.wire(), RETRY_WAIT.wire(), RUNNING.wire(), SUBMITTING.wire());

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
        return endCalls(List.of(jobId), List.of(leaseToken)) == 1;
    }

    /**
     * {@link #endCall} for many calls in one statement (their hand-backs batched by one releaser): each
     * under its own lease token, so a call whose lease was lost or whose record came first frees nothing.
     *
     * @return how many of the calls still held their slot (and gave it back now)
     */
    public int endCalls(List<UUID> jobIds, List<UUID> leaseTokens) {
        MapSqlParameterSource p = new MapSqlParameterSource()
                .addValue("jobs", jobIds.stream().map(UUID::toString).toArray(String[]::new))
                .addValue("tokens", leaseTokens.stream().map(UUID::toString).toArray(String[]::new))
                .addValue("callShard", ReleaseShards.releaseShard() - 1);
        return ((Number) TransitionSql.END_CALLS.queryForMap(jdbc, p).get("freed")).intValue();
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
        TransitionSql.setParameters(event, change, p, now);
        if (event.has(Effect.OPEN_ATTEMPT)) {
            p.addValue("worker", change.leaseOwner()).addValue("adapter", change.adapter()).addValue("revision", change.revision())
                    .addValue("role", change.role().wire());
        }
        TransitionSql.Statement update = sql.update(event, guard, returning);
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
                List<Map<String, Object>> debited = jdbc.queryForList(TransitionSql.DEBIT_AGAIN, p);
                row.put("redebited_micros", debited.isEmpty() ? 0L : ((Number) debited.get(0).get("micros")).longValue());
                p.addValue("bytes", ((Number) row.get("source_bytes")).longValue());
                jdbc.update(TransitionSql.RESERVE_AGAIN, p);
            }
            // The rest of the transition's writes: one statement, one round trip, its parts in the lock
            // order (the provider slot, then the release rows) and the counters last, right before the
            // commit. The counters' releases go to rows only releases lock (V10, V24), so the tenant's row,
            // which admission and the relay lock, is not held by a worker's transaction.
            TransitionSql.WriteChain writes = new TransitionSql.WriteChain(closing == null ? null : closing.set());
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
                writes.freeSlot();
            }
            long refund = 0;
            if (event.has(Effect.REFUND) && change.refundPercent() > 0) {
                long cost = ((Number) row.get("cost_micros")).longValue();
                refund = Math.multiplyExact(cost, (long) change.refundPercent()) / 100;
                if (refund > 0) {
                    // The debit's metered units go back in the same share; once per redrive (V18: a redriven
                    // job was charged again for what its last failure refunded).
                    p.addValue("refund", refund).addValue("cost", cost).addValue("reference", change.category());
                    writes.refund();
                }
            }
            if (event.has(Effect.DISPATCH_AT)) {
                writes.dispatchEvent();
            }
            if (event.has(Effect.STATUS_EVENT)) {
                p.addValue("category", change.category());
                writes.statusEvent(event.has(Effect.DISPATCH_AT));
            }
            if (closing != null) {
                // After the job's row and its slot, before the counters: the order of open_attempts below.
                p.addValues(closing.values()).addValue("closeAttempt", closing.attempt()).addValue("closeToken", closing.leaseToken());
                writes.closeAttempt(closing.set());
            }
            if (event.has(Effect.FINALIZE)) {
                // An attempt still open ends with its job (a worker that died or lost its lease before
                // recording: its lease ended with the job, so no sweep would close it). A worker that
                // records after this overwrites it with what it saw. Not the attempt closed just above:
                // one statement must not update a row twice.
                writes.endOpenAttempts(closing != null);
                writes.releaseCounters(p, heldSlot, true, ((Number) row.get("source_bytes")).longValue(), callWindow, leftCall);
            } else if (event.has(Effect.RELEASE_SLOT) && heldSlot) {
                writes.releaseCounters(p, true, false, 0, callWindow, leftCall);
            } else if (callWindow) {
                writes.releaseCallWindow(p, leftCall);
            }
            if (sql.refunded(writes, jdbc, p) && refund > 0) {
                row.put("refunded_micros", refund);
            }
            return Optional.of(new Moved(tenant, attempts, row, now));
        });
        moved.ifPresent(m -> observers.forEach(o -> o.moved(event, m, change)));
        return moved;
    }

    /**
     * What {@link #startOnFreeSlot} did: the start, when made; else whether START applied to the job (a job it
     * does not apply to claims nothing) and what the claim found: the provider's gate closed until then, or
     * no free slot ({@code rowsMissing}: the provider's slot rows are not all there yet, so none may have been free).
     */
    public record SlotStart(Optional<Moved> started, boolean qualified, Instant gateClosedUntil, boolean rowsMissing) {
    }

    /**
     * {@link Event#START} (the lease under {@code change}'s token, the attempt on its revision) on a free slot of
     * {@code provider}'s {@code limit} claimed under the same token, in one statement: the usual start, one round
     * trip instead of a claim, the transition and a commit. The job's row is locked first and
     * the slot only tried (never waited for); a start that finds no slot or a closed gate writes nothing. Run as
     * a statement of its own (its own transaction, unless the caller's is open).
     */
    public SlotStart startOnFreeSlot(UUID jobId, Guard guard, Change change, String returning, String provider, int limit) {
        Event event = Event.START;
        Instant now = clock.instant();
        MapSqlParameterSource p = new MapSqlParameterSource()
                .addValue("job", jobId)
                .addValue("to", event.to().wire())
                .addValue("from", JobStatus.sqlList(event.from()))
                .addValue("now", Timestamp.from(now))
                .addValue("token", guard.leaseToken())
                .addValue("event", guard.dispatchEvent())
                .addValue("attempt", guard.attempt())
                .addValue("provider", provider)
                .addValue("limit", limit)
                .addValue("firstSlot", ProviderSlots.startingSlot(limit))
                .addValue("worker", change.leaseOwner()).addValue("adapter", change.adapter()).addValue("revision", change.revision())
                .addValue("role", change.role().wire());
        TransitionSql.setParameters(event, change, p, now);
        TransitionSql.Statement statement = sql.startOnFreeSlot(guard, returning);
        // One statement, its own transaction (no round trip for a commit): it writes all of its parts or none.
        Map<String, Object> row = new LinkedHashMap<>(statement.queryForMap(jdbc, p));
        Timestamp closed = (Timestamp) row.get("gate_closed_until");
        SlotStart result;
        if (row.get("opened_attempt") != null) {
            // START has no writes after the row's move (no event, no counters): the move is the whole transition.
            result = new SlotStart(Optional.of(new Moved((String) row.get("tenant_id"), ((Number) row.get("attempts")).intValue(), row, now)),
                    true, null, false);
        } else {
            if (Boolean.TRUE.equals(row.get("claimed"))) {
                // Cannot happen (the move's guard is the lock's, on the row it holds); if it ever does, the slot goes back.
                jdbc.update("UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL"
                        + " WHERE job_id = :job AND lease_token = :newToken", p);
                throw new IllegalStateException("job " + jobId + ": a slot claimed for a start that did not apply");
            }
            result = new SlotStart(Optional.empty(), Boolean.TRUE.equals(row.get("qualified")),
                    closed == null ? null : closed.toInstant(), Boolean.TRUE.equals(row.get("rows_missing")));
        }
        result.started().ifPresent(m -> observers.forEach(o -> o.moved(event, m, change)));
        return result;
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
        return sql.peek(guard, columns).queryForList(jdbc, p).stream().findFirst();
    }

}
