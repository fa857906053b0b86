package io.jobgate.job;

import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Yes-or-no questions about one job, each read by its key (never through a partial index of open jobs):
 * does a lease still hold it, may a late answer still become its own, is it cancelled, still open, still
 * waiting on its provider on an attempt.
 */
public final class JobConditions {

    private static final String[] AT_PROVIDER = JobStatus.AT_PROVIDER.stream().map(JobStatus::wire).toArray(String[]::new);
    /** Where a late answer of the attempt the job is still on may land once its lease ran out. */
    private static final String LATE_ANSWER_WAITS = JobStatus.sqlList(java.util.EnumSet.of(JobStatus.SUBMISSION_UNKNOWN,
            JobStatus.RETRY_WAIT));

    private final JdbcTemplate jdbc;

    public JobConditions(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Does {@code leaseToken} hold the job? */
    public boolean leasedBy(UUID jobId, UUID leaseToken) {
        // IS NOT DISTINCT FROM, not "=": see JobTransitions' lease guard (the plan reads the job by its key).
        return Boolean.TRUE.equals(jdbc.queryForObject(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND lease_token IS NOT DISTINCT FROM ?)", Boolean.class, jobId, leaseToken));
    }

    /**
     * Does {@code leaseToken} hold the job, or, its lease gone, does the job wait on {@code attempt} without a
     * lease in {@code submission_unknown} or {@code retry_wait}?
     */
    public boolean mayFinish(UUID jobId, UUID leaseToken, int attempt) {
        return Boolean.TRUE.equals(jdbc.queryForObject("""
                SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND (lease_token IS NOT DISTINCT FROM ?
                    OR (lease_token IS NULL AND attempts = ? AND status = ANY (string_to_array(?, ',')))))""",
                Boolean.class, jobId, leaseToken, attempt, LATE_ANSWER_WAITS));
    }

    /** Is the job cancelled? */
    public boolean cancelled(UUID jobId) {
        return Boolean.TRUE.equals(jdbc.queryForObject(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND status = ?)", Boolean.class, jobId,
                JobStatus.CANCELLED.wire()));
    }

    /** Is the job there and not final? */
    public boolean open(UUID jobId) {
        // By the job's key: a plain "finalized_at IS NULL" lets a generic plan read a partial index of open jobs whole.
        Integer open = jdbc.queryForObject("SELECT count(*) FROM jobs WHERE job_id = ? AND CASE WHEN finalized_at IS NULL THEN true END",
                Integer.class, jobId);
        return open == null || open != 0;
    }

    /** Is the job still on {@code attempts}, waiting on its provider ({@link JobStatus#AT_PROVIDER})? */
    public boolean atProviderOn(UUID jobId, int attempts) {
        return Boolean.TRUE.equals(jdbc.queryForObject("""
                SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ? AND attempts = ? AND status = ANY (?::text[]))""",
                Boolean.class, jobId, attempts, AT_PROVIDER));
    }

    /**
     * Locks the job's row (until the caller's transaction ends) if it is still on {@code attempt} in {@code status}
     * and not final; answers whether it was.
     */
    public boolean lockOnAttempt(UUID jobId, int attempt, JobStatus status) {
        // By the job's key ("still open" as a CASE, which cannot select a partial index of open jobs).
        return !jdbc.queryForList("SELECT 1 FROM jobs WHERE job_id = ? AND attempts = ? AND status = ? "
                + "AND CASE WHEN finalized_at IS NULL THEN true END FOR UPDATE", Integer.class, jobId, attempt, status.wire()).isEmpty();
    }
}
