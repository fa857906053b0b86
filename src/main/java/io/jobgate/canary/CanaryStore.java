package io.jobgate.canary;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Every statement on the canary package's tables, {@code canaries} (V20, V31) and {@code canary_actions}, with typed
 * rows; beside them the advisory lock of a candidate's first sample and the read-only counts of a candidate's attempts
 * (and of their evaluations) that its gates, its first sample and the operator's view read. Runs in the caller's
 * transaction when there is one: a start's choice counts its sample in the start's transaction, a stop writes its
 * status in the same transaction as the role of its open jobs.
 */
final class CanaryStore {

    /** A canary's status ({@code canaries.status}). */
    enum Status {
        RUNNING, STOPPED, PROMOTED;

        String wire() {
            return name().toLowerCase(Locale.ROOT);
        }

        static Status fromWire(String value) {
            return valueOf(value.toUpperCase(Locale.ROOT));
        }
    }

    /**
     * A row of {@code canaries}: one candidate revision ever seen, kept after it stops or is promoted.
     *
     * @param revision    the candidate's identity (kind-less)
     * @param revisions   the per-kind revisions its attempts record
     * @param judgedFrom  its gates read attempts started from here (a restart moves it)
     * @param gate        the gate that stopped it, {@code operator}, or null
     * @param closedUntil its own gate, closed by a 429 it got, or null (may be past)
     * @param sampledAt   when its gates first judged a full sample, or null
     */
    record Canary(String revision, String provider, List<String> revisions, Status status, Instant judgedFrom, String gate,
                  String reason, String changedBy, Instant changedAt, Instant createdAt, Instant closedUntil, String closedReason,
                  Instant sampledAt) {
    }

    /** A row of {@code canary_actions}: one change of a canary, who made it and when. */
    record Action(long actionId, String revision, String provider, String action, String gate, String reason, String operator,
                  Instant at, int requeued) {
    }

    /** A revision's finished attempts in a gates' window: how many, how many failed by its fault, rejected outputs, p95. */
    record Window(long sample, long errors, long invalidOutputs, long p95Millis) {
    }

    /** What the evaluator read back of a revision's outputs in a gates' window. */
    record Quality(long evaluated, long fieldsCorrect, long fieldsTotal, long totalsCorrect) {
    }

    /** Every attempt of a candidate's revisions: how many, how many held their output, how many ended in an error. */
    record AttemptTotals(long total, long heldOutputs, long errors) {
    }

    /** Advisory lock class of a canary's first sample (beside {@code UploadStore.OBJECT_LOCK}, {@code InstanceLiveness.LOCK_CLASS}). */
    static final int SAMPLE_LOCK = 27241;

    private static final String COLUMNS = """
            revision, provider, revisions, status, judged_from, gate, reason, changed_by, changed_at, created_at, closed_until,
            closed_reason, sampled_at""";

    /** A changed row as {@link #canary} reads it. */
    private static final String RETURNING = " RETURNING " + COLUMNS;

    private static final String ACTION_COLUMNS = "action_id, revision, provider, action, gate, reason, operator, at, requeued";

    private final JdbcTemplate jdbc;

    CanaryStore(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    // --- The canaries table ----------------------------------------------------------------------

    Optional<Canary> find(String revision) {
        return first(jdbc.query("SELECT " + COLUMNS + " FROM canaries WHERE revision = ?", CanaryStore::canary, revision));
    }

    List<Canary> newestFirst() {
        return jdbc.query("SELECT " + COLUMNS + " FROM canaries ORDER BY created_at DESC", CanaryStore::canary);
    }

    /** The provider's newest canary (the one the operator's calls act on). */
    Optional<Canary> newest(String provider) {
        return first(jdbc.query("SELECT " + COLUMNS + " FROM canaries WHERE provider = ? ORDER BY created_at DESC LIMIT 1",
                CanaryStore::canary, provider));
    }

    /** Each provider's newest canary. */
    List<Canary> newestOfEachProvider() {
        return jdbc.query("SELECT DISTINCT ON (provider) " + COLUMNS + " FROM canaries ORDER BY provider, created_at DESC",
                CanaryStore::canary);
    }

    List<Canary> running() {
        return jdbc.query("SELECT " + COLUMNS + " FROM canaries WHERE status = 'running'", CanaryStore::canary);
    }

    /** The row of a candidate seen for the first time: running, changed by {@code drop-in}. @return false when it has one already */
    boolean addRunning(String revision, String provider, List<String> revisions, Instant at) {
        Timestamp now = Timestamp.from(at);
        return jdbc.update("""
                INSERT INTO canaries (revision, provider, revisions, status, judged_from, changed_by, changed_at, created_at)
                VALUES (?, ?, ?, 'running', ?, 'drop-in', ?, ?) ON CONFLICT DO NOTHING""",
                revision, provider, revisions.toArray(String[]::new), now, now, now) == 1;
    }

    /** A running or promoted canary stops. @return its row as stopped, or empty when it was neither (nothing changed) */
    Optional<Canary> stop(String revision, String gate, String reason, String operator, Instant at) {
        return first(jdbc.query("""
                UPDATE canaries SET status = 'stopped', gate = ?, reason = ?, changed_by = ?, changed_at = ?
                 WHERE revision = ? AND status IN ('running', 'promoted')""" + RETURNING,
                CanaryStore::canary, gate, reason, operator, Timestamp.from(at), revision));
    }

    /** A running or stopped canary is promoted. @return its row as promoted, or empty when it was neither */
    Optional<Canary> promote(String revision, String reason, String operator, Instant at) {
        return first(jdbc.query("""
                UPDATE canaries SET status = 'promoted', gate = NULL, reason = ?, changed_by = ?, changed_at = ?
                 WHERE revision = ? AND status IN ('running', 'stopped')""" + RETURNING,
                CanaryStore::canary, reason, operator, Timestamp.from(at), revision));
    }

    /**
     * A stopped or promoted canary runs again, judged only from {@code at} on and before a full sample again.
     *
     * @return its row as running, or empty when it was neither
     */
    Optional<Canary> restart(String revision, String reason, String operator, Instant at) {
        Timestamp now = Timestamp.from(at);
        return first(jdbc.query("""
                UPDATE canaries SET status = 'running', gate = NULL, reason = ?, changed_by = ?, changed_at = ?, judged_from = ?,
                       sampled_at = NULL
                 WHERE revision = ? AND status IN ('stopped', 'promoted')""" + RETURNING,
                CanaryStore::canary, reason, operator, now, now, revision));
    }

    /** Its gates judged a full sample while it runs: from now on the share alone decides. */
    void markSampled(String revision, Instant at) {
        jdbc.update("UPDATE canaries SET sampled_at = ? WHERE revision = ? AND status = 'running' AND sampled_at IS NULL",
                Timestamp.from(at), revision);
    }

    /** The candidate of the per-kind {@code revision} is closed until {@code until} (never shortened). */
    void closeCandidate(String revision, Instant until, String reason) {
        jdbc.update("""
                UPDATE canaries SET closed_until = greatest(coalesce(closed_until, '-infinity'), ?), closed_reason = ?
                 WHERE ? = ANY (revisions)""", Timestamp.from(until), reason, revision);
    }

    /** Until when the candidate of the per-kind {@code revision} is closed, if it is at {@code now}. */
    Optional<Instant> closedUntil(String revision, Instant now) {
        return jdbc.queryForList("SELECT closed_until FROM canaries WHERE ? = ANY (revisions) AND closed_until > ?", Timestamp.class,
                revision, Timestamp.from(now)).stream().findFirst().map(Timestamp::toInstant);
    }

    // --- A candidate's first sample --------------------------------------------------------------

    /** Waits for the sample lock of the canary {@code revision}, held until the transaction ends. */
    void lockSample(String revision) {
        jdbc.queryForList("SELECT pg_advisory_xact_lock(?, hashtext(?))", SAMPLE_LOCK, revision);
    }

    /** Takes the sample lock of the canary {@code revision} if no other transaction holds it. */
    boolean tryLockSample(String revision) {
        return Boolean.TRUE.equals(jdbc.queryForObject("SELECT pg_try_advisory_xact_lock(?, hashtext(?))", Boolean.class,
                SAMPLE_LOCK, revision));
    }

    /**
     * Attempts of {@code revisions} started since {@code since} (under the sample lock: as they start), those the gates
     * never count (lease lost, ended with their job) excepted.
     */
    long attemptsStarted(List<String> revisions, String provider, Instant since) {
        Long started = jdbc.queryForObject("""
                SELECT count(*) FROM attempts
                 WHERE adapter_revision = ANY (?) AND adapter = ? AND started_at >= ?
                   AND (outcome IS NULL OR outcome NOT IN ('lease_lost', 'ended_with_job'))""",
                Long.class, revisions.toArray(String[]::new), provider, Timestamp.from(since));
        return started == null ? 0 : started;
    }

    // --- What the gates and the operator's view read of a candidate's attempts ------------------

    /**
     * The finished attempts of {@code revisions} started since {@code since}, those the gates never count excepted.
     *
     * @param notItsFault error categories that are no error of the revision (comma-separated)
     */
    Window window(List<String> revisions, String provider, Instant since, String notItsFault) {
        return jdbc.queryForObject("""
                SELECT count(*) AS sample,
                       count(*) FILTER (WHERE error_category IS NOT NULL
                                          AND error_category <> ALL (string_to_array(?, ','))) AS errors,
                       count(*) FILTER (WHERE error_category = 'invalid_output') AS invalid,
                       coalesce(percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms), 0) AS p95
                  FROM attempts
                 WHERE adapter_revision = ANY (?) AND adapter = ? AND started_at >= ? AND ended_at IS NOT NULL
                   AND outcome NOT IN ('lease_lost', 'ended_with_job')""",
                (rs, n) -> new Window(rs.getLong("sample"), rs.getLong("errors"), rs.getLong("invalid"), rs.getLong("p95")),
                notItsFault, revisions.toArray(String[]::new), provider, Timestamp.from(since));
    }

    /** The evaluator's scores of the outputs of attempts of {@code revisions} started since {@code since}. */
    Quality quality(List<String> revisions, String provider, Instant since) {
        return jdbc.queryForObject("""
                SELECT count(*) AS evaluated, coalesce(sum(e.fields_correct), 0) AS correct, coalesce(sum(e.fields_total), 0) AS total,
                       count(*) FILTER (WHERE e.totals_correct) AS totals
                  FROM evaluations e JOIN attempts a ON a.job_id = e.job_id AND a.attempt = e.attempt
                 WHERE e.revision = ANY (?) AND e.provider = ? AND e.evaluated_at IS NOT NULL AND a.started_at >= ?""",
                (rs, n) -> new Quality(rs.getLong("evaluated"), rs.getLong("correct"), rs.getLong("total"), rs.getLong("totals")),
                revisions.toArray(String[]::new), provider, Timestamp.from(since));
    }

    AttemptTotals attemptTotals(List<String> revisions) {
        return jdbc.queryForObject("""
                SELECT count(*) AS total, count(*) FILTER (WHERE outcome = 'candidate_output') AS held_outputs,
                       count(*) FILTER (WHERE error_category IS NOT NULL) AS errors
                  FROM attempts WHERE adapter_revision = ANY (?)""",
                (rs, n) -> new AttemptTotals(rs.getLong("total"), rs.getLong("held_outputs"), rs.getLong("errors")),
                (Object) revisions.toArray(String[]::new));
    }

    // --- canary_actions: the record of changes and the status topic's outbox ---------------------

    void addAction(String revision, String provider, String action, String gate, String reason, String operator, Instant at,
                   int requeued) {
        jdbc.update("""
                INSERT INTO canary_actions (revision, provider, action, gate, reason, operator, at, requeued)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)""", revision, provider, action, gate, reason, operator, Timestamp.from(at), requeued);
    }

    /** The actions of the canary {@code revision}, oldest first. */
    List<Action> actions(String revision) {
        return jdbc.query("SELECT " + ACTION_COLUMNS + " FROM canary_actions WHERE revision = ? ORDER BY action_id", CanaryStore::action,
                revision);
    }

    /** Actions not published to the status topic yet, oldest first. */
    List<Action> unpublished(int limit) {
        return jdbc.query("SELECT " + ACTION_COLUMNS + " FROM canary_actions WHERE published_at IS NULL ORDER BY action_id LIMIT ?",
                CanaryStore::action, limit);
    }

    void markPublished(long actionId, Instant at) {
        jdbc.update("UPDATE canary_actions SET published_at = ? WHERE action_id = ?", Timestamp.from(at), actionId);
    }

    // --- Rows ------------------------------------------------------------------------------------

    private static Canary canary(ResultSet rs, int n) throws SQLException {
        return new Canary(rs.getString("revision"), rs.getString("provider"),
                List.copyOf(Arrays.asList((String[]) rs.getArray("revisions").getArray())), Status.fromWire(rs.getString("status")),
                instant(rs, "judged_from"), rs.getString("gate"), rs.getString("reason"), rs.getString("changed_by"),
                instant(rs, "changed_at"), instant(rs, "created_at"), instant(rs, "closed_until"), rs.getString("closed_reason"),
                instant(rs, "sampled_at"));
    }

    private static Action action(ResultSet rs, int n) throws SQLException {
        return new Action(rs.getLong("action_id"), rs.getString("revision"), rs.getString("provider"), rs.getString("action"),
                rs.getString("gate"), rs.getString("reason"), rs.getString("operator"), instant(rs, "at"), rs.getInt("requeued"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }

    private static <T> Optional<T> first(List<T> rows) {
        return rows.stream().findFirst();
    }
}
