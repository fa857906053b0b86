package io.jobgate.pool;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.common.ApiProblem;
import io.jobgate.fate.MemberState;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Each pool member's health and drain (table {@code pool_members}, shared by every instance; docs/providers.md,
 * "Cooldown, probe and drain"). A definite failure of a pool job's attempt counts against its member; its threshold
 * of failures within its window cools the member down for every job; when the cooldown ends, the next attempt placed
 * on it is its probe, whose success gives the member its traffic back and whose failure cools it again. An operator's
 * drain keeps new attempts off a member until it is restored. The state placement reads is a snapshot of the table,
 * read again at most once a second (the starts of pool jobs ask it; a change made here is seen at once).
 * Each change of state writes one line to {@code jobgate.pools}. A probe decided before its time ran out makes the
 * jobs that wait on the member for it due at once (its success) or at the new cooldown's end (its failure): they wait
 * for the probe's result, not for its deadline.
 */
public final class PoolHealth {

    private static final Logger POOLS = LoggerFactory.getLogger("jobgate.pools");
    /** How old the snapshot of the table may be before a read reads it again (another instance's changes show by then). */
    static final Duration SNAPSHOT_AGE = Duration.ofSeconds(1);

    /** A member's row as stored. */
    public record Row(String pool, String member, int failures, Instant windowStartedAt, Instant coolingUntil, UUID probeJobId,
                      Instant probeStartedAt, Instant drainedAt, String drainedBy, String drainedReason) {
    }

    /** A member's state now, and until when it holds (a cooldown's end, a probe's time running out), or null. */
    public record State(MemberState state, Instant until) {
        static final State HEALTHY = new State(MemberState.HEALTHY, null);
    }

    private record Key(String pool, String member) {
    }

    private record Snapshot(Map<Key, Row> rows, long readAtNanos) {
    }

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private volatile Snapshot snapshot = new Snapshot(Map.of(), Long.MIN_VALUE);
    private volatile java.util.function.BiConsumer<String, String> onCooled = (pool, member) -> { };
    private volatile java.util.function.Consumer<Instant> dispatchDueAt = at -> { };
    private final io.jobgate.job.JobSchedules schedules;

    private final long snapshotAgeNanos;
    /** When a decided probe's waiting jobs are woken a second time: every instance's snapshot is newer by then. */
    private final Duration rewakeAfter;
    /** Beyond the snapshot's age: a start's read of the state to the write of its wait. */
    static final Duration REWAKE_MARGIN = Duration.ofSeconds(2);

    public PoolHealth(JdbcTemplate jdbc, Clock clock) {
        this(jdbc, clock, SNAPSHOT_AGE);
    }

    PoolHealth(JdbcTemplate jdbc, Clock clock, Duration snapshotAge) {
        this.jdbc = jdbc;
        this.clock = clock;
        this.schedules = new io.jobgate.job.JobSchedules(jdbc);
        this.snapshotAgeNanos = snapshotAge.toNanos();
        this.rewakeAfter = snapshotAge.plus(REWAKE_MARGIN);
    }

    /** Told of each member that begins to cool down (pool, member): the metrics' count. */
    public void onCooled(java.util.function.BiConsumer<String, String> listener) {
        this.onCooled = listener;
    }

    /** Told when jobs waiting on a probe were made due sooner (the relay's timer). */
    public void onDispatchDue(java.util.function.Consumer<Instant> listener) {
        this.dispatchDueAt = listener;
    }

    /**
     * The state of {@code member} of {@code pool} for {@code jobId}'s attempt: a probe the job itself holds is
     * {@code HEALTHY} to it (its attempt is the probe).
     */
    public State state(Pool pool, Pool.Member member, UUID jobId) {
        Row row = snapshot().rows().get(new Key(pool.name(), member.provider()));
        return row == null ? State.HEALTHY : stateOf(row, member, jobId, clock.instant());
    }

    /** Is the member healthy for this job's attempt (nothing to read, nothing to write: the common case)? */
    public boolean healthy(Pool pool, Pool.Member member, UUID jobId) {
        return state(pool, member, jobId).state() == MemberState.HEALTHY;
    }

    static State stateOf(Row row, Pool.Member member, UUID jobId, Instant now) {
        if (row.drainedAt() != null) {
            return new State(MemberState.DRAINED, null);
        }
        if (row.coolingUntil() == null) {
            return State.HEALTHY;
        }
        if (row.coolingUntil().isAfter(now)) {
            return new State(MemberState.COOLING, row.coolingUntil());
        }
        if (row.probeJobId() != null) {
            if (row.probeJobId().equals(jobId)) {
                return State.HEALTHY;
            }
            Instant ends = row.probeStartedAt().plus(probeTime(member));
            if (ends.isAfter(now)) {
                return new State(MemberState.PROBING, ends);
            }
        }
        return new State(MemberState.PROBE_OPEN, null);
    }

    /** How long a probe may run before another attempt may probe the member: its cooldown, at least a minute. */
    static Duration probeTime(Pool.Member member) {
        return member.cooldown().compareTo(Duration.ofMinutes(1)) < 0 ? Duration.ofMinutes(1) : member.cooldown();
    }

    /**
     * Makes {@code jobId}'s attempt the probe of the member (its cooldown over, no other probe running).
     *
     * @return false when another attempt holds the probe (or the member is drained or cooling again)
     */
    public boolean claimProbe(Pool pool, Pool.Member member, UUID jobId) {
        Instant now = clock.instant();
        int claimed = jdbc.update("""
                UPDATE pool_members SET probe_job_id = ?, probe_started_at = ?, updated_at = ?
                 WHERE pool = ? AND member = ? AND drained_at IS NULL AND cooling_until <= ?
                   AND (probe_job_id IS NULL OR probe_job_id = ? OR probe_started_at <= ?)""",
                jobId, Timestamp.from(now), Timestamp.from(now), pool.name(), member.provider(), Timestamp.from(now), jobId,
                Timestamp.from(now.minus(probeTime(member))));
        forget();
        if (claimed == 1) {
            POOLS.info("pool member probe pool={} member={} job={}", pool.name(), member.provider(), jobId);
        }
        return claimed == 1;
    }

    /**
     * A definite failure of {@code jobId}'s attempt on the member (a 5xx or refused connection, a timeout): counted in
     * its window while it is healthy; reaching its threshold cools it down; its probe's failure cools it again.
     */
    public void failed(Pool pool, Pool.Member member, UUID jobId, String cause) {
        if (member.failureThreshold() == 0) {
            return;
        }
        Instant now = clock.instant();
        Timestamp at = Timestamp.from(now);
        // While it cools (cooling_until set until its probe succeeds) only the probe's own failure counts.
        Row row = jdbc.queryForObject("""
                INSERT INTO pool_members (pool, member, failures, window_started_at, updated_at) VALUES (?, ?, 1, ?, ?)
                ON CONFLICT (pool, member) DO UPDATE SET
                    failures = CASE WHEN pool_members.cooling_until IS NOT NULL THEN pool_members.failures
                                    WHEN pool_members.window_started_at <= ? THEN 1 ELSE pool_members.failures + 1 END,
                    window_started_at = CASE WHEN pool_members.cooling_until IS NULL AND pool_members.window_started_at <= ?
                                             THEN EXCLUDED.window_started_at ELSE pool_members.window_started_at END,
                    updated_at = EXCLUDED.updated_at
                RETURNING *""", PoolHealth::row, pool.name(), member.provider(), at, at,
                Timestamp.from(now.minus(member.failureWindow())), Timestamp.from(now.minus(member.failureWindow())));
        boolean probeFailed = row.coolingUntil() != null && jobId.equals(row.probeJobId());
        boolean thresholdReached = row.coolingUntil() == null && row.failures() >= member.failureThreshold();
        if (probeFailed || thresholdReached) {
            Instant until = now.plus(member.cooldown());
            int cooled = jdbc.update("""
                    UPDATE pool_members SET cooling_until = ?, failures = 0, window_started_at = ?, probe_job_id = NULL,
                           probe_started_at = NULL, updated_at = ?
                     WHERE pool = ? AND member = ? AND (cooling_until IS NULL OR probe_job_id = ?)""",
                    Timestamp.from(until), at, at, pool.name(), member.provider(), jobId);
            if (cooled == 1) {
                onCooled.accept(pool.name(), member.provider());
                if (probeFailed) {
                    probeDecided(pool, member, now, until);
                }
                POOLS.warn("pool member cooling pool={} member={} until={} cause=\"{}\" after=\"{}\"", pool.name(), member.provider(),
                        until, cause, probeFailed ? "its probe (job " + jobId + ") failed"
                                : row.failures() + " failures within " + member.failureWindow().toSeconds() + " s");
            }
        }
        forget();
    }

    /** {@code jobId}'s attempt on the member succeeded: when it was the member's probe, the member takes traffic again. */
    public void succeeded(Pool pool, Pool.Member member, UUID jobId) {
        Row row = snapshot().rows().get(new Key(pool.name(), member.provider()));
        if (row == null || row.coolingUntil() == null) {
            return; // healthy already: nothing to write (the common case)
        }
        Timestamp at = Timestamp.from(clock.instant());
        int recovered = jdbc.update("""
                UPDATE pool_members SET cooling_until = NULL, probe_job_id = NULL, probe_started_at = NULL, failures = 0,
                       window_started_at = ?, updated_at = ?
                 WHERE pool = ? AND member = ? AND probe_job_id = ?""", at, at, pool.name(), member.provider(), jobId);
        forget();
        if (recovered == 1) {
            POOLS.info("pool member healthy pool={} member={} probe={} (it takes attempts by its weight again)", pool.name(),
                    member.provider(), jobId);
            probeDecided(pool, member, at.toInstant(), at.toInstant());
        }
    }

    /**
     * The member's probe was decided at {@code now}: the jobs waiting on the member for the probe's end (placed while it
     * ran, told to wait at most its time from now) are due at {@code dueAt} — now after a success, the new cooldown's end
     * after a failure. A job waiting for its gate's reopening before then wakes with them and, finding the gate still
     * closed, waits again: cheap, and rare (a 429 does not count against a member).
     */
    private void probeDecided(Pool pool, Pool.Member member, Instant now, Instant dueAt) {
        wake(pool, member, now, dueAt, "");
        // A start that read the state before the decision (its snapshot up to SNAPSHOT_AGE old, on any instance) may
        // write its wait for the old deadline after this wake: once every snapshot is newer than the decision, wake again.
        java.util.concurrent.CompletableFuture.runAsync(() -> {
            try {
                wake(pool, member, now, dueAt, " (again, for starts that read the state before it)");
            } catch (RuntimeException e) {
                POOLS.warn("pool member probe decided pool={} member={}: the second wake failed ({}); its stragglers wait for the"
                        + " probe's deadline", pool.name(), member.provider(), e.toString());
            }
        }, java.util.concurrent.CompletableFuture.delayedExecutor(rewakeAfter.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS));
    }

    private void wake(Pool pool, Pool.Member member, Instant now, Instant dueAt, String which) {
        int woken = schedules.poolWaitsDueAt(pool.name(), member.provider(), now.plus(probeTime(member)), dueAt);
        if (woken > 0) {
            dispatchDueAt.accept(dueAt);
            POOLS.info("pool member probe decided pool={} member={} jobs_due={} at={}{}", pool.name(), member.provider(), woken, dueAt,
                    which);
        }
    }

    /** An operator drains the member: no new attempts on it; the jobs it has finish there. */
    public Row drain(Pool pool, String provider, String operator, String reason) {
        member(pool, provider);
        Timestamp at = Timestamp.from(clock.instant());
        Row row = jdbc.queryForObject("""
                INSERT INTO pool_members (pool, member, drained_at, drained_by, drained_reason, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (pool, member) DO UPDATE SET
                    drained_at = coalesce(pool_members.drained_at, EXCLUDED.drained_at), drained_by = EXCLUDED.drained_by,
                    drained_reason = EXCLUDED.drained_reason, updated_at = EXCLUDED.updated_at
                RETURNING *""", PoolHealth::row, pool.name(), provider, at, operator, reason, at);
        forget();
        POOLS.warn("pool member drained pool={} member={} by=\"{}\" reason=\"{}\"", pool.name(), provider, operator,
                reason == null ? "" : reason);
        return row;
    }

    /** An operator brings a drained member back: it takes attempts again by its weight. */
    public Optional<Row> restore(Pool pool, String provider, String operator, String reason) {
        member(pool, provider);
        Timestamp at = Timestamp.from(clock.instant());
        List<Row> rows = jdbc.query("""
                UPDATE pool_members SET drained_at = NULL, drained_by = NULL, drained_reason = NULL, updated_at = ?
                 WHERE pool = ? AND member = ? RETURNING *""", PoolHealth::row, at, pool.name(), provider);
        forget();
        POOLS.info("pool member restored pool={} member={} by=\"{}\" reason=\"{}\"", pool.name(), provider, operator,
                reason == null ? "" : reason);
        return rows.stream().findFirst();
    }

    /** Every member's stored row, now (the admin view's read, not the snapshot). */
    public Map<String, Map<String, Row>> rows() {
        Map<String, Map<String, Row>> byPool = new HashMap<>();
        for (Row row : jdbc.query("SELECT * FROM pool_members", PoolHealth::row)) {
            byPool.computeIfAbsent(row.pool(), p -> new HashMap<>()).put(row.member(), row);
        }
        return byPool;
    }

    private static Pool.Member member(Pool pool, String provider) {
        return pool.member(provider).orElseThrow(() -> ApiProblem.of(404, "pool_member_not_found", "Pool '" + pool.name()
                + "' has no member '" + provider + "'; its members: " + String.join(", ", pool.providers()) + ".").with("field", "member"));
    }

    private Snapshot snapshot() {
        Snapshot current = snapshot;
        long now = System.nanoTime();
        if (current.readAtNanos() != Long.MIN_VALUE && now - current.readAtNanos() < snapshotAgeNanos) {
            return current;
        }
        Map<Key, Row> rows = new HashMap<>();
        for (Row row : jdbc.query("SELECT * FROM pool_members", PoolHealth::row)) {
            rows.put(new Key(row.pool(), row.member()), row);
        }
        Snapshot read = new Snapshot(Map.copyOf(rows), now);
        snapshot = read;
        return read;
    }

    /** The next read of the state reads the table again (a change made here is seen at once; a test's reset). */
    void forget() {
        snapshot = new Snapshot(Map.of(), Long.MIN_VALUE);
    }

    private static Row row(ResultSet rs, int i) throws SQLException {
        String probe = rs.getString("probe_job_id");
        return new Row(rs.getString("pool"), rs.getString("member"), rs.getInt("failures"), instant(rs, "window_started_at"),
                instant(rs, "cooling_until"), probe == null ? null : UUID.fromString(probe), instant(rs, "probe_started_at"),
                instant(rs, "drained_at"), rs.getString("drained_by"), rs.getString("drained_reason"));
    }

    private static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
