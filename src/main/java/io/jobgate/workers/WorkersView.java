package io.jobgate.workers;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.annotation.JsonProperty;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A pull member's workers as an operator sees them (docs/workers.md, "Operators"; {@code GET /v1/admin/workers}): its
 * tasks waiting, leased (and leased under a lease that ran out), ended in the last hour by how; the leases each
 * worker holds; the workers seen and their last call. Read from {@code worker_tasks} through its partial indexes
 * (open tasks, ended tasks) and from {@code workers_seen}, when asked; the gauges read {@link #openTasks} at each
 * metrics refresh.
 */
public final class WorkersView {

    /** How far back the ended tasks are counted. */
    static final Duration ENDED_WINDOW = Duration.ofHours(1);
    /** The most workers seen shown per member, the most recently seen first. */
    static final int MAX_WORKERS = 500;

    /** A member's tasks now: open, and ended within the last hour ({@code succeeded}, {@code failed}, {@code cancelled}). */
    public record Tasks(long waiting, long leased, @JsonProperty("leased_past_expiry") long leasedPastExpiry,
                        @JsonProperty("ended_last_hour") Map<String, Long> endedLastHour) {
    }

    /**
     * The leases a worker holds: live ones, those that ran out (the task goes to the next lease round), and the earliest
     * expiry among them (in the past: one ran out).
     */
    public record Holder(@JsonProperty("worker_id") String workerId, long leases,
                         @JsonProperty("leases_past_expiry") long leasesPastExpiry,
                         @JsonProperty("oldest_lease_expires_at") String oldestLeaseExpiresAt) {
    }

    /** A worker seen: its first and last call (within {@link WorkersSeen#EVERY}), what that was, the leases it holds. */
    public record Seen(@JsonProperty("worker_id") String workerId, @JsonProperty("first_seen_at") String firstSeenAt,
                       @JsonProperty("last_seen_at") String lastSeenAt, @JsonProperty("last_call") String lastCall, long leases) {
    }

    public record Member(String provider, Tasks tasks, List<Holder> leases, List<Seen> workers) {
    }

    private final JdbcTemplate jdbc;
    private final Clock clock;

    public WorkersView(JdbcTemplate jdbc, Clock clock) {
        this.jdbc = jdbc;
        this.clock = clock;
    }

    /** Pull member {@code provider} now. */
    public Member member(String provider) {
        Instant now = clock.instant();
        Timestamp at = Timestamp.from(now);
        OpenTasks open = openTasks(List.of(provider), now).get(provider);
        Map<String, Long> ended = new LinkedHashMap<>();
        for (WorkerTasks.Status status : List.of(WorkerTasks.Status.SUCCEEDED, WorkerTasks.Status.FAILED, WorkerTasks.Status.CANCELLED)) {
            ended.put(status.wire(), 0L);
        }
        jdbc.query("""
                SELECT status, count(*) FROM worker_tasks
                 WHERE provider = ? AND status IN ('succeeded', 'failed', 'cancelled') AND updated_at >= ?
                 GROUP BY status""", rs -> {
            ended.put(rs.getString(1), rs.getLong(2));
        }, provider, Timestamp.from(now.minus(ENDED_WINDOW)));
        List<Holder> holders = jdbc.query("""
                SELECT worker_id, count(*) FILTER (WHERE lease_expires_at >= ?) AS live,
                       count(*) FILTER (WHERE lease_expires_at < ?) AS lapsed, min(lease_expires_at) AS oldest
                  FROM worker_tasks WHERE provider = ? AND status = 'leased'
                 GROUP BY worker_id ORDER BY worker_id""", (rs, i) -> new Holder(rs.getString("worker_id"), rs.getLong("live"),
                rs.getLong("lapsed"), rs.getTimestamp("oldest").toInstant().toString()), at, at, provider);
        Map<String, Long> held = new HashMap<>();
        holders.forEach(h -> held.put(h.workerId(), h.leases()));
        List<Seen> seen = jdbc.query("""
                SELECT worker_id, first_seen_at, last_seen_at, last_call FROM workers_seen WHERE provider = ?
                 ORDER BY last_seen_at DESC, worker_id LIMIT ?""", (rs, i) -> new Seen(rs.getString("worker_id"),
                rs.getTimestamp("first_seen_at").toInstant().toString(), rs.getTimestamp("last_seen_at").toInstant().toString(),
                rs.getString("last_call"), held.getOrDefault(rs.getString("worker_id"), 0L)), provider, MAX_WORKERS);
        return new Member(provider, new Tasks(open.waiting(), open.leased(), open.leasedPastExpiry(), ended), holders, seen);
    }

    /** A member's open tasks: waiting, leased under a live lease, leased under one that ran out. */
    public record OpenTasks(long waiting, long leased, long leasedPastExpiry) {
    }

    /** The open tasks of each of {@code providers} (0 for one with none), in one read of the open tasks' index. */
    public Map<String, OpenTasks> openTasks(List<String> providers, Instant now) {
        Map<String, long[]> counts = new HashMap<>();
        providers.forEach(p -> counts.put(p, new long[3]));
        jdbc.query("""
                SELECT provider, status, lease_expires_at < ? AS lapsed, count(*) FROM worker_tasks
                 WHERE provider = ANY (?) AND status IN ('waiting', 'leased') GROUP BY 1, 2, 3""", rs -> {
            long[] c = counts.get(rs.getString(1));
            int slot = "waiting".equals(rs.getString(2)) ? 0 : rs.getBoolean(3) ? 2 : 1;
            c[slot] += rs.getLong(4);
        }, Timestamp.from(now), providers.toArray(String[]::new));
        Map<String, OpenTasks> open = new LinkedHashMap<>();
        providers.forEach(p -> {
            long[] c = counts.get(p);
            open.put(p, new OpenTasks(c[0], c[1], c[2]));
        });
        return open;
    }

    /** Per member, its workers whose last call came within {@code within} (as {@code workers_seen} has it). */
    public Map<String, Long> workersSeenWithin(List<String> providers, Duration within) {
        Map<String, Long> seen = new LinkedHashMap<>();
        providers.forEach(p -> seen.put(p, 0L));
        jdbc.query("SELECT provider, count(*) FROM workers_seen WHERE provider = ANY (?) AND last_seen_at >= ? GROUP BY provider",
                rs -> {
                    seen.put(rs.getString(1), rs.getLong(2));
                }, providers.toArray(String[]::new), Timestamp.from(clock.instant().minus(within)));
        return seen;
    }
}
