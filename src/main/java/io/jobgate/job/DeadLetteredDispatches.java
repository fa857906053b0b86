package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

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

    /** The statuses a start leaves: a job in one of them has started no attempt from its newest dispatch event. */
    public static final java.util.Set<JobStatus> BEFORE_A_START = JobTransitions.Event.LEASE.from();

    private static final String COLUMNS = "j.attempts, j.max_attempts, j.expires_at, j.unparseable_streak, j.dispatch_given_back";

    private final JobTransitions transitions;
    private final NamedParameterJdbcTemplate jdbc;

    public DeadLetteredDispatches(JobTransitions transitions, JdbcTemplate jdbc) {
        this.transitions = transitions;
        this.jdbc = new NamedParameterJdbcTemplate(jdbc);
    }

    /**
     * The job as the dead-lettered event {@code eventId} left it, read under a start's own guard; empty when the job has
     * moved on (a stale message: a job whose call is at its provider has no lease and keeps its slot too, but started
     * its attempt from that event).
     */
    public Optional<Waiting> waiting(UUID jobId, long eventId) {
        return transitions.peek(jobId, JobTransitions.Event.LEASE, JobTransitions.Guard.dispatchEvent(eventId), COLUMNS)
                .map(row -> new Waiting(((Number) row.get("attempts")).intValue(), ((Number) row.get("max_attempts")).intValue(),
                        ((Timestamp) row.get("expires_at")).toInstant(), ((Number) row.get("unparseable_streak")).intValue(),
                        ((Number) row.get("dispatch_given_back")).intValue()));
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
        MapSqlParameterSource p = new MapSqlParameterSource().addValue("job", jobId).addValue("event", eventId)
                .addValue("from", JobStatus.sqlList(BEFORE_A_START)).addValue("seen", givenBackSeen)
                .addValue("now", Timestamp.from(now));
        List<Long> events = jdbc.queryForList("""
                WITH j AS (UPDATE jobs j SET dispatch_given_back = j.dispatch_given_back + 1
                            WHERE j.job_id = :job AND j.status = ANY (string_to_array(:from, ','))"""
                + TransitionSql.WAITS_ON_DISPATCH_EVENT + """
                              AND j.dispatch_given_back = :seen
                           RETURNING j.job_id, j.tenant_id)
                INSERT INTO outbox (job_id, tenant_id, event_type, available_at, created_at, claimed_until)
                SELECT j.job_id, j.tenant_id, 'dispatch',
                       coalesce((SELECT d.available_at FROM outbox d WHERE d.event_id = :event), :now), :now, :now FROM j
                RETURNING event_id""", p, Long.class);
        return !events.isEmpty();
    }
}
