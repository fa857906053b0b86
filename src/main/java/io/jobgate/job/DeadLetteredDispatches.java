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

    /** A start's statuses: a job in one of them has started no attempt from its newest dispatch event. */
    public static final java.util.Set<JobStatus> BEFORE_A_START = java.util.EnumSet.of(JobStatus.QUEUED, JobStatus.RETRY_WAIT);

    /**
     * The job still waits on {@code eventId}: the guard of a start from it (a job whose call is at its provider has no
     * lease and keeps its slot too, but started its attempt from that event).
     */
    private static final String WAITING_ON = """
            j.job_id = ? AND j.finalized_at IS NULL AND j.lease_token IS NULL AND j.dispatched_at IS NOT NULL
               AND j.status IN (""" + JobStatus.sqlLiterals(BEFORE_A_START) + """
            )
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
     * The job's dispatch goes out again: a new dispatch event, published under the slot the job holds already (the
     * relay takes no new one for it), counted in {@code dispatch_given_back}. The event is written as a claim that ran
     * out, due when the dead-lettered one was: the relay publishes such a claim again even while its tenant is at its
     * running limit (the job's own slot is part of that count), and ahead of the tenant's later events. One statement,
     * the job's row first (a new event locks no waiting one); {@code updated_at} is left to the transitions.
     *
     * @return false when the job moved on meanwhile (nothing written)
     */
    public boolean giveBack(UUID jobId, long eventId, int givenBackSeen, Instant now) {
        Timestamp at = Timestamp.from(now);
        List<Long> events = jdbc.queryForList("""
                WITH j AS (UPDATE jobs j SET dispatch_given_back = j.dispatch_given_back + 1
                            WHERE""" + " " + WAITING_ON + """
                              AND j.dispatch_given_back = ?
                           RETURNING j.job_id, j.tenant_id)
                INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at, claimed_until)
                SELECT j.job_id, j.tenant_id, 'dispatch',
                       coalesce((SELECT d.available_at FROM outbox d WHERE d.event_id = ?), ?), ?, ? FROM j
                RETURNING event_id""",
                Long.class, jobId, eventId, givenBackSeen, eventId, at, at, at);
        return !events.isEmpty();
    }
}
