package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The scheduling columns of jobs, written outside a status change: when a job waiting on its provider
 * is checked next ({@code next_check_at}, the poller's claim {@code check_claimed_by}), and when a job in
 * {@code retry_wait} is shown as due ({@code next_attempt_at}). Status changes are {@link JobTransitions}'s;
 * nothing here changes a status, and every write is conditional on the status it was meant for.
 */
public final class JobSchedules {

    /**
     * The waiting statuses written into the SQL as literals, the way the partial index {@code
     * jobs_checks_due} (V4) names them: a parameter here leaves a generic plan unable to prove the
     * index's predicate, and it walks every open job instead (a cost that grows with the backlog).
     */
    static final String WAITING_PREDICATE = "status IN (" + JobStatus.sqlLiterals(JobStatus.AT_PROVIDER)
            + ") AND finalized_at IS NULL";

    /**
     * The due checks, oldest first, claimed for a poll (parameters: see {@link #claimDueChecks}). Public
     * for the plan test (it must read the index {@code jobs_checks_due}).
     */
    public static final String CLAIM_DUE = """
            UPDATE jobs j
               SET next_check_at = CAST(? AS timestamptz) + make_interval(secs => coalesce(
                       (SELECT d.seconds FROM unnest(?::text[], ?::float8[]) AS d(provider, seconds) WHERE d.provider = j.provider),
                       ?)),
                   check_claimed_by = ?, checks = j.checks + 1
              FROM (SELECT job_id FROM jobs
                     WHERE %s AND next_check_at <= ?
                     ORDER BY next_check_at LIMIT ? FOR UPDATE SKIP LOCKED) due
             WHERE j.job_id = due.job_id
            RETURNING %s""".formatted(WAITING_PREDICATE, WaitingJob.columns("j").replace("job_id,", "j.job_id,"));

    private final JdbcTemplate jdbc;

    public JobSchedules(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * Claims up to {@code batch} due checks of jobs waiting on a provider, oldest first, skipping rows another
     * poller holds: each is marked {@code owner}'s, counted ({@code checks + 1}), and due again after its
     * provider's claim length ({@code claims}; {@code otherwise} for a provider not named there).
     */
    public List<WaitingJob> claimDueChecks(Instant now, Map<String, Duration> claims, Duration otherwise, String owner,
                                           int batch) {
        return jdbc.query(CLAIM_DUE, WaitingJob::map,
                Timestamp.from(now), claims.keySet().toArray(String[]::new),
                claims.values().stream().map(d -> d.toMillis() / 1000.0).toArray(Double[]::new),
                otherwise.toMillis() / 1000.0, owner, Timestamp.from(now), batch);
    }

    /**
     * Every job waiting on a provider whose next check lies after {@code now}, and that no poller has
     * claimed, is due at {@code now}.
     *
     * @return how many jobs were made due
     */
    public int checksDueNow(Instant now) {
        return jdbc.update(
                "UPDATE jobs SET next_check_at = ? WHERE " + WAITING_PREDICATE + " AND next_check_at > ? AND check_claimed_by IS NULL",
                Timestamp.from(now), Timestamp.from(now));
    }

    /**
     * The next check of {@code job} is at {@code at}, and its claim ends; only while it is still in the
     * status and on the attempt it was read with.
     */
    public void checkAt(WaitingJob job, Instant at) {
        // No "finalized_at IS NULL": the waiting status implies it, and the planner could use it to
        // read a partial index of open jobs whole instead of this one job by its key.
        jdbc.update("UPDATE jobs SET next_check_at = ?, check_claimed_by = NULL WHERE job_id = ? AND status = ? AND attempts = ?",
                Timestamp.from(at), job.jobId(), job.status().wire(), job.attempts());
    }

    /**
     * The checks claimed by {@code owners} (pollers whose process is gone) of jobs not final are due at
     * {@code now}, unclaimed.
     *
     * @return how many
     */
    public int releaseCheckClaims(List<String> owners, Instant now) {
        return jdbc.update("""
                UPDATE jobs SET next_check_at = ?, check_claimed_by = NULL
                 WHERE check_claimed_by = ANY (?) AND finalized_at IS NULL""", Timestamp.from(now), owners.toArray(String[]::new));
    }

    /**
     * The jobs of pool {@code pool} waiting on its member {@code member} for something that ended early — the member's
     * probe, decided before its time ran out — are due at {@code at}: each not-yet-relayed dispatch event due after
     * {@code at} and no later than {@code waitedUntil} (what the job was told to wait for), and the job's shown next
     * attempt with it. A job waiting for something later (its gate's reopening) keeps its time. One statement.
     *
     * @return how many jobs were made due sooner
     */
    public int poolWaitsDueAt(String pool, String member, Instant waitedUntil, Instant at) {
        // Outbox rows before job rows, the lock order of the relay and finalize.
        Integer moved = jdbc.queryForObject("""
                WITH moved AS (
                    UPDATE outbox o SET available_at = ?
                      FROM jobs j
                     WHERE o.published_at IS NULL AND o.event_type = 'dispatch' AND o.available_at > ? AND o.available_at <= ?
                       AND j.job_id = o.job_id AND j.pool = ? AND j.provider = ? AND j.finalized_at IS NULL
                    RETURNING o.job_id),
                shown AS (
                    UPDATE jobs j SET next_attempt_at = ?
                      FROM moved m WHERE j.job_id = m.job_id AND j.status = ? AND j.next_attempt_at > ?)
                SELECT count(*) FROM moved""", Integer.class, Timestamp.from(at), Timestamp.from(at), Timestamp.from(waitedUntil),
                pool, member, Timestamp.from(at), JobStatus.RETRY_WAIT.wire(), Timestamp.from(at));
        return moved == null ? 0 : moved;
    }

    /**
     * A job in {@code retry_wait} whose next attempt was shown later is shown due at {@code now} (its dispatch
     * event was made due in the same transaction by the caller).
     */
    public int retryShownDue(UUID jobId, Instant now) {
        return jdbc.update("UPDATE jobs SET next_attempt_at = ? WHERE job_id = ? AND status = ? AND next_attempt_at > ?",
                Timestamp.from(now), jobId, JobStatus.RETRY_WAIT.wire(), Timestamp.from(now));
    }
}
