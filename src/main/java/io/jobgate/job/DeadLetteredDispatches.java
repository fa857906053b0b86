package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A dispatch message the broker dead-lettered, as its job sees it: whether the job still waits on that message's
 * event (its newest dispatch event, dispatched, not leased, not final), and giving the job a new dispatch event when
 * the rulebook says so (V45 counts them).
 */
public final class DeadLetteredDispatches {

    /**
     * A job that still waits on the dead-lettered event.
     *
     * @param attempts  the attempts made before it (none started from this event)
     * @param givenBack the job's dispatches given back so far
     */
    public record Waiting(int attempts, int maxAttempts, Instant expiresAt, int unparseableStreak, int givenBack) {
    }

    /** The job still waits on {@code eventId} (the guard of a start from it), with what the rulebook weighs. */
    private static final String WAITING_ON = """
            j.job_id = ? AND j.finalized_at IS NULL AND j.lease_token IS NULL AND j.dispatched_at IS NOT NULL
               AND ? = (SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch')""";

    private final JdbcTemplate jdbc;

    public DeadLetteredDispatches(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** The job as the dead-lettered event {@code eventId} left it; empty when the job has moved on (a stale message). */
    public Optional<Waiting> waiting(UUID jobId, long eventId) {
        List<Waiting> rows = jdbc.query("SELECT j.attempts, j.max_attempts, j.expires_at, j.unparseable_streak, j.dispatch_given_back"
                + " FROM jobs j WHERE " + WAITING_ON, (rs, i) -> new Waiting(rs.getInt(1), rs.getInt(2),
                rs.getTimestamp(3).toInstant(), rs.getInt(4), rs.getInt(5)), jobId, eventId);
        return rows.stream().findFirst();
    }

    /**
     * The job's dispatch goes out again: a new dispatch event due {@code now}, published under the slot the job
     * holds already (the relay takes no new one for it), counted in {@code dispatch_given_back}. One statement, the
     * job's row first (the lock order of docs/design: a new event locks no waiting one).
     *
     * @return false when the job moved on meanwhile (nothing written)
     */
    public boolean giveBack(UUID jobId, long eventId, int givenBackSeen, Instant now) {
        Timestamp at = Timestamp.from(now);
        List<Long> events = jdbc.queryForList("""
                WITH j AS (UPDATE jobs j SET dispatch_given_back = j.dispatch_given_back + 1, updated_at = ?
                            WHERE""" + " " + WAITING_ON + """
                              AND j.dispatch_given_back = ?
                           RETURNING j.job_id, j.tenant_id)
                INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at)
                SELECT j.job_id, j.tenant_id, 'dispatch', ?, ? FROM j RETURNING event_id""",
                Long.class, at, jobId, eventId, givenBackSeen, at, at);
        return !events.isEmpty();
    }
}
