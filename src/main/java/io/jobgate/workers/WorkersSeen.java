package io.jobgate.workers;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The workers of each pull member that called the gateway (table {@code workers_seen}, V41; docs/workers.md,
 * "Operators"): when first and last, and with which call. A worker calls often (a lease round when idle, a heartbeat
 * per task), so a call is written at most once per worker every {@link #EVERY} (a throttle in this instance's memory,
 * one upsert), and {@code last_seen_at} may be that much behind. Recording is never a call's failure: the call has
 * done its work by then, and a worker refused for a bookkeeping row would retry a call that can no longer succeed.
 */
public final class WorkersSeen {

    private static final Logger LOG = LoggerFactory.getLogger(WorkersSeen.class);

    /** At most one write per worker this often. */
    static final Duration EVERY = Duration.ofSeconds(5);
    /** A worker not seen this long is forgotten (retention). */
    static final Duration FORGET_AFTER = Duration.ofDays(7);
    /** The workers whose last write this instance remembers; past it the memory starts afresh (a write each, once). */
    static final int REMEMBERED = 10_000;

    /** The calls a worker makes, as {@code last_call} names them. */
    public static final Set<String> CALLS = Set.of("lease", "heartbeat", "output", "complete", "fail");

    private record Worker(String provider, String workerId) {
    }

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final Map<Worker, Instant> written = new ConcurrentHashMap<>();

    public WorkersSeen(JdbcTemplate jdbc, Clock clock) {
        this.jdbc = jdbc;
        this.clock = clock;
    }

    /** The worker holding {@code task}'s live lease made {@code call} (after its token was accepted). */
    public void saw(WorkerTasks.Task task, String call) {
        if (task.workerId() != null) {
            saw(task.provider(), task.workerId(), call);
        }
    }

    /** Worker {@code workerId} of pull member {@code provider} made {@code call}. */
    public void saw(String provider, String workerId, String call) {
        if (!CALLS.contains(call)) {
            throw new IllegalArgumentException("not a worker's call: " + call);
        }
        Instant now = clock.instant();
        Worker worker = new Worker(provider, workerId);
        Instant last = written.get(worker);
        // A clock set back (last in the future) writes at once rather than waiting for the old time to come again.
        if (last != null && now.isBefore(last.plus(EVERY)) && !now.isBefore(last)) {
            return;
        }
        if (written.size() >= REMEMBERED) {
            written.clear();
        }
        written.put(worker, now);
        lastSeen.put(provider, new LastSeen(now, now));
        try {
            jdbc.update("""
                    INSERT INTO workers_seen (provider, worker_id, first_seen_at, last_seen_at, last_call) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (provider, worker_id) DO UPDATE SET last_seen_at = excluded.last_seen_at, last_call = excluded.last_call""",
                    provider, workerId, Timestamp.from(now), Timestamp.from(now), call);
        } catch (RuntimeException e) {
            written.remove(worker, now); // the next call tries again
            LOG.warn("worker {} of pull member {} not recorded as seen: {}", workerId, provider, e.toString());
        }
    }

    /**
     * Workers whose lease calls wait on this instance ({@code LeaseWaits}, by member): seen now, though their calls
     * reach no statement while they wait. Those past the throttle are written in one statement.
     */
    public void sawWaiting(Map<String, ? extends java.util.Collection<String>> workersByMember) {
        Instant now = clock.instant();
        List<String> providers = new java.util.ArrayList<>();
        List<String> workers = new java.util.ArrayList<>();
        workersByMember.forEach((provider, ids) -> ids.forEach(id -> {
            Worker worker = new Worker(provider, id);
            Instant last = written.get(worker);
            if (last == null || !now.isBefore(last.plus(EVERY)) || now.isBefore(last)) {
                written.put(worker, now);
                lastSeen.put(provider, new LastSeen(now, now));
                providers.add(provider);
                workers.add(id);
            }
        }));
        if (providers.isEmpty()) {
            return;
        }
        try {
            jdbc.update("""
                    INSERT INTO workers_seen (provider, worker_id, first_seen_at, last_seen_at, last_call)
                    SELECT DISTINCT ON (p, w) p, w, ?, ?, 'lease' FROM unnest(?::text[], ?::text[]) AS seen (p, w)
                    ON CONFLICT (provider, worker_id) DO UPDATE SET last_seen_at = excluded.last_seen_at, last_call = excluded.last_call""",
                    Timestamp.from(now), Timestamp.from(now), providers.toArray(String[]::new), workers.toArray(String[]::new));
        } catch (RuntimeException e) {
            for (int i = 0; i < providers.size(); i++) {
                written.remove(new Worker(providers.get(i), workers.get(i)), now);
            }
            LOG.warn("{} waiting workers not recorded as seen: {}", providers.size(), e.toString());
        }
    }

    /**
     * When a worker of {@code provider} was last seen (by any instance, up to {@link #EVERY} behind), if ever; read at
     * most once a second per member.
     */
    public Optional<Instant> lastSeen(String provider) {
        Instant now = clock.instant();
        LastSeen cached = lastSeen.get(provider);
        if (cached != null && !now.isBefore(cached.readAt()) && now.isBefore(cached.readAt().plusSeconds(1))) {
            return Optional.ofNullable(cached.at());
        }
        Timestamp at = jdbc.queryForObject("SELECT max(last_seen_at) FROM workers_seen WHERE provider = ?", Timestamp.class, provider);
        LastSeen read = new LastSeen(now, at == null ? null : at.toInstant());
        lastSeen.put(provider, read);
        return Optional.ofNullable(read.at());
    }

    /** Whether a worker of {@code provider} was seen within {@code within} of now (as {@link #lastSeen} knows it). */
    public boolean seenWithin(String provider, Duration within) {
        return lastSeen(provider).filter(at -> !at.isBefore(clock.instant().minus(within))).isPresent();
    }

    private record LastSeen(Instant readAt, Instant at) {
    }

    private final Map<String, LastSeen> lastSeen = new ConcurrentHashMap<>();

    /** Route step (retention): forgets the workers not seen for {@link #FORGET_AFTER}; header {@code workersForgotten}. */
    public void forget(Exchange exchange) {
        exchange.getMessage().setHeader("workersForgotten", forgetGone());
    }

    /** Forgets the workers not seen for {@link #FORGET_AFTER}; returns how many. */
    public int forgetGone() {
        return jdbc.update("DELETE FROM workers_seen WHERE last_seen_at < ?", Timestamp.from(clock.instant().minus(FORGET_AFTER)));
    }
}
