package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterUtils;
import org.springframework.jdbc.core.namedparam.ParsedSql;

/**
 * The SQL of {@link JobTransitions}: a transition's first statement (the job row's move, its guards
 * and what it sets), its statement of writes ({@link WriteChain}: the writes of its effects, in the
 * lock order JobTransitions describes), a peek, and a call's end. Each statement's text depends
 * only on its shape (the event, which guards, the columns returned); it is made once per shape and
 * kept ({@link Statement}); every value is a parameter.
 */
final class TransitionSql {

    /** Statements by shape (a few dozen at most: events times guards and write chains). */
    private final Map<Object, Statement> statements = new ConcurrentHashMap<>();

    /** The shape of a transition's first statement: what its text depends on (the values are parameters). */
    private record UpdateShape(JobTransitions.Event event, boolean token, boolean dispatchEvent, boolean attempt, String returning) {
    }

    /** The shape of a transition's statement of writes: the writes by name, and what else their texts depend on. */
    private record ChainShape(String names, String variant) {
    }

    /** The shape of a peek: what its text depends on. */
    private record PeekShape(boolean token, boolean dispatchEvent, boolean attempt, String columns) {
    }

    /** The transition's first statement, for this shape. */
    Statement update(JobTransitions.Event event, JobTransitions.Guard guard, String returning) {
        return statements.computeIfAbsent(new UpdateShape(event, guard.leaseToken() != null, guard.dispatchEvent() != null,
                guard.attempt() != null, returning), shape -> new Statement(updateSql(event, guard, returning)));
    }

    /** The shape of a start on a free slot: what its text depends on. */
    private record SlotStartShape(boolean dispatchEvent, boolean attempt, String returning) {
    }

    /**
     * {@link JobTransitions.Event#START} and the claim of its provider's slot in one statement, for this shape
     * ({@link JobTransitions#startOnFreeSlot}).
     */
    Statement startOnFreeSlot(JobTransitions.Guard guard, String returning) {
        return statements.computeIfAbsent(new SlotStartShape(guard.dispatchEvent() != null, guard.attempt() != null, returning),
                shape -> new Statement(startOnFreeSlotSql(guard, returning)));
    }

    /** The job's {@code columns} (row aliased {@code j}) where the guard holds and its status is one of {@code :from}. */
    Statement peek(JobTransitions.Guard guard, String columns) {
        // No "finalized_at IS NULL": the status implies it, and it let the plan scan open jobs (see updateSql).
        return statements.computeIfAbsent(new PeekShape(guard.leaseToken() != null, guard.dispatchEvent() != null,
                guard.attempt() != null, columns), shape -> new Statement("SELECT " + columns + " FROM jobs j WHERE j.job_id = :job"
                + " AND j.status = ANY (string_to_array(:from, ','))" + guardSql(guard)));
    }

    /** Runs the chain (nothing when empty), its text made once per shape; @return whether it wrote the refund. */
    boolean refunded(WriteChain writes, NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
        if (writes.names.isEmpty()) {
            return false;
        }
        Statement chain = statements.computeIfAbsent(new ChainShape(String.join(",", writes.names), writes.variant),
                shape -> new Statement(writes.sql()));
        return ((Number) chain.queryForMap(jdbc, p).get("refunded")).intValue() == 1;
    }

    /**
     * A redrive charges again what the last failure refunded (nothing when it was not refunded), so the
     * ledger says what the tenant pays for this job.
     */
    static final String DEBIT_AGAIN = """
            INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, reference, created_at, units, unit, redrive)
            SELECT :tenant, :job, 'debit', -r.amount_micros, 'redrive', :now, -r.units, r.unit, :redrives
              FROM ledger r WHERE r.job_id = :job AND r.entry_type = 'refund' AND r.redrive = :redrives - 1
            RETURNING -amount_micros AS micros""";

    /**
     * A redrive takes its job's reservations again, as admission takes them: on the tenant's row and the
     * gateway's row 1, not on release rows (those may only go down: a reader's late snapshot of them must
     * err on the side of refusing, V24).
     */
    static final String RESERVE_AGAIN = """
            WITH tenant AS (
                UPDATE tenant_accounts SET open_jobs = open_jobs + 1, queued_bytes = queued_bytes + :bytes
                 WHERE tenant_id = :tenant RETURNING tenant_id)
            UPDATE gateway_capacity SET in_flight = in_flight + 1 WHERE id = 1 AND (SELECT count(*) FROM tenant) >= 0""";

    /**
     * Answered calls' slots freed, each by its job and lease token, in one statement (a batch of them, or one);
     * their providers' shares given back on the thread's release row. Returns how many slots were freed.
     */
    static final Statement END_CALLS = new Statement("""
            WITH ended AS (
                SELECT * FROM unnest(CAST(:jobs AS uuid[]), CAST(:tokens AS uuid[])) AS e(job_id, lease_token)),
            freed AS (
                UPDATE provider_slots s SET lease_token = NULL, job_id = NULL, taken_at = NULL
                  FROM ended e WHERE s.job_id = e.job_id AND s.lease_token = e.lease_token
                RETURNING s.provider),
            given_back AS (
                INSERT INTO provider_window AS w (provider, shard, running)
                SELECT provider, :callShard, -count(*) FROM freed GROUP BY provider
                ON CONFLICT (provider, shard) DO UPDATE SET running = w.running + EXCLUDED.running)
            SELECT count(*) AS freed FROM freed""");

    /**
     * The job's row locked where START applies (its guard); then, only if it does and the provider's gate is open
     * (read, not locked, as {@code ProviderSlots} reads it), a free slot of the provider claimed under the new
     * lease token (SKIP LOCKED: never waits, so the job's row may come first); then START, only on that slot,
     * with its attempt. Each part reads the one before it, so they run in that order. One statement, so a start
     * that finds no slot, or no job to start, has written nothing. Returns one row: {@code qualified} (START
     * applied to the job), {@code claimed}, {@code gate_closed_until}, {@code rows_missing} (as
     * {@code ProviderSlots.tryClaim} says it) and, when started, the moved row and {@code opened_attempt}.
     */
    private static String startOnFreeSlotSql(JobTransitions.Guard guard, String returning) {
        JobTransitions.Event start = JobTransitions.Event.START;
        return "WITH job AS (SELECT j.job_id FROM jobs j WHERE j.job_id = :job AND j.status = ANY (string_to_array(:from, ','))"
                + guardSql(guard) + " FOR UPDATE),"
                + " gate AS (SELECT closed_until FROM provider_gates WHERE provider = :provider AND closed_until > :now),"
                + " taken AS (UPDATE provider_slots s SET lease_token = :newToken, job_id = :job, taken_at = :now"
                + "  WHERE s.provider = :provider AND s.slot = "
                + ProviderSlots.freeSlot("NOT EXISTS (SELECT 1 FROM gate) AND EXISTS (SELECT 1 FROM job)")
                + "  RETURNING s.slot),"
                + " moved AS (" + moveSql(start, guard, returning, " AND EXISTS (SELECT 1 FROM taken)") + "),"
                + " opened AS (" + OPEN_ATTEMPT_SQL + ")"
                + " SELECT EXISTS (SELECT 1 FROM job) AS qualified, EXISTS (SELECT 1 FROM taken) AS claimed,"
                + " (SELECT closed_until FROM gate) AS gate_closed_until,"
                + " NOT EXISTS (SELECT 1 FROM gate) AND NOT EXISTS (SELECT 1 FROM taken)"
                + "  AND (SELECT count(*) FROM provider_slots c WHERE c.provider = :provider AND c.slot < :limit) < :limit AS rows_missing,"
                + " m.*, (SELECT attempt FROM opened) AS opened_attempt"
                + " FROM (SELECT 1) one LEFT JOIN moved m ON true";
    }

    /** The attempt a transition opens, from its moved row {@code m}. */
    private static final String OPEN_ATTEMPT_SQL = "INSERT INTO attempts (job_id, tenant_id, attempt, lease_token, worker, adapter, adapter_revision, revision_role, started_at)"
            + " SELECT :job, m.tenant_id, m.attempts, m.lease_token, :worker, :adapter, :revision, :role, :now FROM moved m"
            + " RETURNING attempt";

    /** A transition's first statement: the job row's move (and what comes with it in the same statement). */
    private static String updateSql(JobTransitions.Event event, JobTransitions.Guard guard, String returning) {
        String update = moveSql(event, guard, returning, "");
        if (event.has(JobTransitions.Effect.OPEN_ATTEMPT)) {
            return "WITH moved AS (" + update + "), opened AS (" + OPEN_ATTEMPT_SQL + ")"
                    + " SELECT m.*, (SELECT attempt FROM opened) AS opened_attempt FROM moved m";
        }
        return update;
    }

    /** The job row's move, only if {@code onlyIf} (a condition, or empty) holds as well. */
    private static String moveSql(JobTransitions.Event event, JobTransitions.Guard guard, String returning, String onlyIf) {
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
        boolean lockEvents = event.has(JobTransitions.Effect.TAKE_LEASE) && !event.has(JobTransitions.Effect.OPEN_ATTEMPT);
        boolean dropEvents = event.has(JobTransitions.Effect.DROP_DISPATCH);
        String update = (lockEvents ? "WITH waiting_events AS (SELECT event_id FROM outbox WHERE job_id = :job"
                + " AND event_type = 'dispatch' AND CASE WHEN published_at IS NULL THEN true END FOR UPDATE) " : "")
                + (dropEvents ? "WITH waiting_events AS (DELETE FROM outbox o USING jobs j"
                + " WHERE o.job_id = :job AND o.event_type = 'dispatch' AND CASE WHEN o.published_at IS NULL THEN true END"
                + " AND j.job_id = o.job_id AND j.status = ANY (string_to_array(:from, ','))" + guards + " RETURNING o.event_id) " : "")
                + "UPDATE jobs j SET status = :to, updated_at = :now" + setSql(event)
                + " FROM (SELECT job_id, dispatched_at, status, updated_at, provider FROM jobs WHERE job_id = :job FOR UPDATE) old"
                // j by its key, and no "finalized_at IS NULL" (the status check implies it, by the jobs
                // table's CHECK): with it, the generic plan read j through a partial index of open jobs
                // and joined by filter, a row per open job for every transition (seen with 1M of history).
                + " WHERE j.job_id = :job AND j.job_id = old.job_id"
                + " AND j.status = ANY (string_to_array(:from, ','))"
                + (lockEvents || dropEvents ? " AND (SELECT count(*) FROM waiting_events) >= 0" : "") + guards + onlyIf
                + " RETURNING j.tenant_id, j.attempts, j.source_bytes, j.cost_micros, j.lease_token, j.redrives,"
                // The provider before the transition: the one whose dispatch-window share it gives back (a retry may move a pool job).
                + " old.dispatched_at IS NOT NULL AS held_slot, old.provider AS provider, old.status AS from_status, old.updated_at AS entered_at"
                + (event == JobTransitions.Event.SUCCEED ? ", (SELECT d.units FROM ledger d WHERE d.job_id = j.job_id AND d.entry_type = 'debit' AND d.redrive = 0) AS debit_units,"
                        + " (SELECT d.unit FROM ledger d WHERE d.job_id = j.job_id AND d.entry_type = 'debit' AND d.redrive = 0) AS debit_unit" : "")
                + (returning == null ? "" : ", " + returning);
        return update;
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

        private void then(String name, String write) {
            names.add(name);
            writes.add(write);
        }

        /** The call's provider slot (V19) is free: by the job alone, a job is in one call at a time. */
        void freeSlot() {
            then("free_slot", "UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL"
                    + " WHERE job_id = :job AND {after} RETURNING 1");
        }

        /**
         * The refund of {@code :refund} of the job's {@code :cost}, its metered units back in the same
         * share; once per redrive (V18: a redriven job was charged again for what its last failure refunded).
         */
        void refund() {
            then(REFUND, """
                    INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, reference, created_at, units, unit, redrive)
                    SELECT :tenant, :job, 'refund', :refund, :reference, :now, -d.units * :refund / :cost, d.unit, :redrives
                      FROM ledger d WHERE d.job_id = :job AND d.entry_type = 'debit' AND d.redrive = 0 AND {after}
                    ON CONFLICT (job_id, entry_type, redrive) WHERE entry_type IN ('debit', 'refund') DO NOTHING
                    RETURNING 1""");
        }

        /** The job's dispatch event, due at {@code :at}. */
        void dispatchEvent() {
            then("dispatch", "INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at) "
                    + "SELECT :job, :tenant, 'dispatch', :at, :now WHERE {after} RETURNING 1");
        }

        /**
         * The job's status event (the relay publishes it on the topic {@code jobs.events}); a change that dispatches the
         * job again ({@code mayMove}) says in {@code moved_to} the pool member it moved to (null: it stayed).
         */
        void statusEvent(boolean mayMove) {
            then("status_event", """
                    INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, created_at)
                    SELECT :job, :tenant, 'status', jsonb_build_object('status', CAST(:to AS text),
                           'attempt', CAST(:attempts AS int), 'error_category', CAST(:category AS text)"""
                    + (mayMove ? ", 'moved_to', CAST(:moveTo AS text)" : "") + """
                    ), :now, :now
                     WHERE {after} RETURNING 1""");
        }

        /** The worker's close of the attempt {@code :closeAttempt} under {@code :closeToken}: {@code set} assigns its columns. */
        void closeAttempt(String set) {
            then("closed_attempt", "UPDATE attempts SET " + set
                    + " WHERE job_id = :job AND attempt = :closeAttempt AND lease_token = :closeToken AND {after} RETURNING 1");
        }

        /**
         * The job's attempts still open end with it; not the one closed in this chain ({@code closedOne}):
         * one statement must not update a row twice.
         */
        void endOpenAttempts(boolean closedOne) {
            then("open_attempts", """
                    UPDATE attempts SET ended_at = :now, outcome = 'ended_with_job',
                           error_message = 'the job ended (' || CAST(:to AS text) || ') before this attempt was recorded'
                     WHERE job_id = :job AND ended_at IS NULL""" + (closedOne ? " AND attempt <> :closeAttempt" : "")
                    + " AND {after} RETURNING 1");
        }

        /**
         * A job gives back what it held: its dispatch slot ({@code slot}: the tenant's running count and
         * the window), and when it ends ({@code finalize}) its admission reservations (the tenant's open
         * jobs and queued bytes, the gateway's in-flight count). Every release goes to a release row that
         * neither admission nor the relay ever locks: one of the tenant's in {@code tenant_releases} (V24),
         * one of the gateway's and the window's (V10), each the calling thread's own ({@link ReleaseShards#releaseShard}); one statement, the tenant's
         * release row first, then the gateway's and the window's (the order every releaser keeps; see the
         * lock order above). The tenant's rows are made with its account row (a trigger); should one be
         * missing, the release creates it rather than be lost.
         */
            void releaseCounters(MapSqlParameterSource p, boolean slot, boolean finalize, long bytes, boolean callWindow, boolean leftCall) {
            if (callWindow) {
                releaseCallWindow(p, leftCall);
            }
            p.addValue("slot", slot ? 1 : 0).addValue("opened", finalize ? 1 : 0).addValue("bytes", bytes)
                    .addValue("shard", ReleaseShards.releaseShard())
                    .addValue("tenantShard", ReleaseShards.tenantReleaseShard());
            then("tenant_release", """
                    INSERT INTO tenant_releases AS r (tenant_id, shard, open_jobs, queued_bytes, running_jobs)
                    SELECT :tenant, :tenantShard, -:opened, -:bytes, -:slot WHERE {after}
                    ON CONFLICT (tenant_id, shard) DO UPDATE SET open_jobs = r.open_jobs + EXCLUDED.open_jobs,
                        queued_bytes = r.queued_bytes + EXCLUDED.queued_bytes, running_jobs = r.running_jobs + EXCLUDED.running_jobs
                    RETURNING 1""");
            if (finalize) {
                then("gateway_release", "UPDATE gateway_capacity SET in_flight = in_flight - :opened WHERE id = :shard AND {after} RETURNING 1");
            }
            if (slot) {
                then("window_release", "UPDATE dispatch_window SET running = running - :slot WHERE id = :shard AND {after} RETURNING 1");
            }
        }

        /**
         * The job's provider gets back its share of the dispatch window (V30), on the calling thread's
         * release row of that provider (1..16; row 0 is the relay's), made on first use. Before the
         * tenant's and the window's release rows: the order every releaser keeps. A job leaving its call
         * ({@code leftCall}) gives it back only with the slot it freed: a call answered earlier gave both
         * back then ({@link JobTransitions#endCall}).
         */
            void releaseCallWindow(MapSqlParameterSource p, boolean leftCall) {
            p.addValue("callShard", ReleaseShards.releaseShard() - 1);
            then(leftCall ? "call_window_release_with_slot" : "call_window_release", """
                    INSERT INTO provider_window AS w (provider, shard, running)
                    SELECT :provider, :callShard, -1 WHERE {after}""" + (leftCall ? " AND EXISTS (SELECT 1 FROM free_slot)" : "") + """

                    ON CONFLICT (provider, shard) DO UPDATE SET running = w.running - 1
                    RETURNING 1""");
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
    }

    /**
     * A statement with named parameters, parsed once: its JDBC text is one String instance for good (the
     * driver's statement cache finds it by identity and a cached hash instead of hashing and comparing a
     * long text on every call, as a text built per call costs) and its parameters are read in order.
     */
    static final class Statement {
        private final ParsedSql parsed;
        private final String jdbcSql;

        Statement(String namedSql) {
            this.parsed = NamedParameterUtils.parseSqlStatement(namedSql);
            this.jdbcSql = NamedParameterUtils.substituteNamedParameters(parsed, null);
        }

        List<Map<String, Object>> queryForList(NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
            return jdbc.getJdbcOperations().queryForList(jdbcSql, args(p));
        }

        Map<String, Object> queryForMap(NamedParameterJdbcTemplate jdbc, MapSqlParameterSource p) {
            return jdbc.getJdbcOperations().queryForMap(jdbcSql, args(p));
        }

        private Object[] args(MapSqlParameterSource p) {
            return NamedParameterUtils.buildValueArray(parsed, p, null);
        }
    }

    /**
     * The dispatch event {@code :event} guard: a dispatched, unleased job whose newest dispatch event it is (a job row
     * aliased {@code j}). A start's, and a dead letter's ({@link DeadLetteredDispatches}).
     */
    static final String WAITS_ON_DISPATCH_EVENT = " AND j.lease_token IS NULL AND j.dispatched_at IS NOT NULL AND :event = "
            + "(SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch')";

    private static String guardSql(JobTransitions.Guard guard) {
        StringBuilder sql = new StringBuilder();
        if (guard.leaseToken() != null) {
            // Not "=": it would imply lease_token IS NOT NULL, and the generic plan may then read the
            // partial index of every leased job instead of the job by its key (HotPathPlansTest).
            sql.append(" AND j.lease_token IS NOT DISTINCT FROM :token");
        }
        if (guard.dispatchEvent() != null) {
            // Only a dispatched, unleased job, and only for its newest dispatch event: an older,
            // duplicated message must not start an attempt before its time.
            sql.append(WAITS_ON_DISPATCH_EVENT);
        }
        if (guard.attempt() != null) {
            sql.append(" AND j.attempts = :attempt");
        }
        return sql.toString();
    }

    private static String setSql(JobTransitions.Event event) {
        StringBuilder set = new StringBuilder();
        if (event.has(JobTransitions.Effect.TAKE_LEASE)) {
            set.append(", lease_token = :newToken, lease_owner = :owner, lease_expires_at = :leaseUntil");
        }
        if (event.has(JobTransitions.Effect.END_LEASE)) {
            set.append(", lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL");
        }
        if (event.has(JobTransitions.Effect.RELEASE_SLOT)) {
            set.append(", dispatched_at = NULL");
        }
        if (event.has(JobTransitions.Effect.DISPATCH_AT)) {
            set.append(", next_attempt_at = :at, unparseable_streak = :unparseable, next_check_at = NULL, provider_task = NULL,"
                    + " provider_state = NULL, provider = coalesce(CAST(:moveTo AS text), j.provider), waiting_reason = :waitingReason");
        }
        if (event.has(JobTransitions.Effect.SCHEDULE_CHECK)) {
            set.append(", next_check_at = :at, checks = 0, check_claimed_by = NULL, provider_task = coalesce(:task, j.provider_task),"
                    + " provider_request_id = coalesce(:requestId, j.provider_request_id),"
                    + " provider_state = coalesce(:providerState, j.provider_state)");
        }
        if (event.has(JobTransitions.Effect.OPEN_ATTEMPT)) {
            set.append(", attempts = j.attempts + 1, adapter_revision = :revision, revision_role = :role");
        }
        if (event.has(JobTransitions.Effect.REOPEN)) {
            set.append(", finalized_at = NULL, error_category = NULL, error_message = NULL, result = NULL,"
                    + " redrives = j.redrives + 1, dispatch_given_back = 0, max_attempts = greatest(j.max_attempts, j.attempts + :extra),"
                    + " expires_at = greatest(j.expires_at, coalesce(CAST(:expiresAt AS timestamptz), j.expires_at))");
        }
        if (event.has(JobTransitions.Effect.FINALIZE)) {
            set.append(", finalized_at = :now, error_category = :errorCategory, error_message = :errorMessage,"
                    + " next_attempt_at = NULL, result = coalesce(CAST(:result AS jsonb), j.result)");
        }
        return set.toString();
    }

    /** The values {@link #setSql} names. */
    static void setParameters(JobTransitions.Event event, JobTransitions.Change change, MapSqlParameterSource p, Instant now) {
        if (event.has(JobTransitions.Effect.TAKE_LEASE)) {
            p.addValue("newToken", change.leaseToken() != null ? change.leaseToken() : UUID.randomUUID()).addValue("owner", change.leaseOwner())
                    .addValue("leaseUntil", Timestamp.from(now.plus(change.leaseFor())));
        }
        if (event.has(JobTransitions.Effect.DISPATCH_AT)) {
            // moveTo: the pool member a retry moves the job to (Change.retryOn), null: it stays where it is.
            // waitingReason: why the job waits (Change.retryOn's reason), null when it waits for nothing in particular.
            p.addValue("at", Timestamp.from(change.at())).addValue("unparseable", change.unparseable()).addValue("moveTo", change.adapter())
                    .addValue("waitingReason", event == JobTransitions.Event.RETRY ? change.message() : null);
        }
        if (event.has(JobTransitions.Effect.SCHEDULE_CHECK)) {
            p.addValue("at", Timestamp.from(change.at())).addValue("task", change.providerTask())
                    .addValue("requestId", change.providerRequestId()).addValue("providerState", change.providerState());
        }
        if (event.has(JobTransitions.Effect.REOPEN)) {
            p.addValue("extra", change.extraAttempts())
                    .addValue("expiresAt", change.expiresAt() == null ? null : Timestamp.from(change.expiresAt()));
        }
        if (event.has(JobTransitions.Effect.FINALIZE)) {
            p.addValue("errorCategory", change.category()).addValue("errorMessage", change.message())
                    .addValue("result", change.resultJson());
        }
    }
}
