package io.jobgate.job;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Reads of jobs rows for the background parts (reconciliation, the sweeper, canaries, provider cancels),
 * each as a record that carries its {@link JobStatus}. The API's reads, scoped to a tenant, are
 * {@link JobStore}'s.
 */
public final class JobRows {

    /** A job under a lease, as the sweeper ends leases nobody will finish. */
    public record LeasedJob(UUID jobId, UUID leaseToken, String leaseOwner, JobStatus status, String provider,
                            String adapterRevision, String tenantId, int attempts, int maxAttempts, Instant expiresAt,
                            int unparseableStreak, RevisionRole role) {
    }

    /** A job past its lifetime that nobody works on. */
    public record OverdueJob(UUID jobId, JobStatus status, int attempts) {
    }

    /** A job not final yet. */
    public record OpenJob(UUID jobId, JobStatus status, int attempts, int maxAttempts, Instant expiresAt, int unparseableStreak) {
    }

    /** The provider task of a cancelled job: what a provider cancel asks to stop. */
    public record CancelledTask(String provider, String providerTask, String providerState, String kind) {
    }

    private static final String LEASED_COLUMNS = """
            job_id, lease_token, lease_owner, status, provider, adapter_revision, tenant_id, attempts, max_attempts, expires_at,
            unparseable_streak, """ + RevisionRole.column("jobs");

    private static final String AT_PROVIDER = JobStatus.sqlList(JobStatus.AT_PROVIDER);

    private final JdbcTemplate jdbc;

    public JobRows(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** The job {@code jobId} as reconciliation sees it, whatever its status. */
    public Optional<WaitingJob> waiting(UUID jobId) {
        return jdbc.query("SELECT " + WaitingJob.columns("jobs") + " FROM jobs WHERE job_id = ?", WaitingJob::map, jobId).stream().findFirst();
    }

    /** The job whose provider task is {@code task} at {@code provider}, whatever its status. */
    public Optional<WaitingJob> waitingByTask(String provider, String task) {
        return jdbc.query("SELECT " + WaitingJob.columns("jobs") + " FROM jobs WHERE provider = ? AND provider_task = ?", WaitingJob::map,
                provider, task).stream().findFirst();
    }

    /** Up to {@code limit} jobs leased by any of {@code owners}. */
    public List<LeasedJob> leasedByAny(List<String> owners, int limit) {
        return jdbc.query("SELECT " + LEASED_COLUMNS + " FROM jobs"
                + " WHERE lease_token IS NOT NULL AND lease_owner = ANY (?) LIMIT ?", JobRows::leased,
                owners.toArray(String[]::new), limit);
    }

    /** Up to {@code limit} jobs whose lease ran out before {@code now}, the longest run out first. */
    public List<LeasedJob> leasesExpiredBefore(Instant now, int limit) {
        return jdbc.query("SELECT " + LEASED_COLUMNS + " FROM jobs"
                + " WHERE lease_token IS NOT NULL AND lease_expires_at < ?"
                + " ORDER BY lease_expires_at LIMIT ?", JobRows::leased, Timestamp.from(now), limit);
    }

    /** Every job {@code owner} holds the lease of. */
    public List<LeasedJob> leasedBy(String owner) {
        return jdbc.query("SELECT " + LEASED_COLUMNS + " FROM jobs"
                + " WHERE lease_token IS NOT NULL AND lease_owner = ?", JobRows::leased, owner);
    }

    /**
     * Up to {@code limit} jobs not final, without a lease, past their lifetime at {@code now}, the earliest first:
     * a job waiting on its provider only once its lifetime ended before {@code horizonStart} too.
     */
    public List<OverdueJob> overdue(Instant now, Instant horizonStart, int limit) {
        return jdbc.query("""
                SELECT job_id, status, attempts FROM jobs
                 WHERE finalized_at IS NULL AND expires_at < ? AND lease_token IS NULL
                   AND (status <> ALL (string_to_array(?, ',')) OR expires_at < ?)
                 ORDER BY expires_at LIMIT ?""", (rs, i) -> new OverdueJob(rs.getObject("job_id", UUID.class),
                        status(rs), rs.getInt("attempts")),
                Timestamp.from(now), AT_PROVIDER, Timestamp.from(horizonStart), limit);
    }

    /** The jobs not final whose adapter revision is one of {@code revisions}. */
    public List<OpenJob> openOnRevisions(List<String> revisions) {
        return jdbc.query("""
                SELECT job_id, status, attempts, max_attempts, expires_at, unparseable_streak FROM jobs
                 WHERE finalized_at IS NULL AND adapter_revision = ANY (?)""",
                (rs, i) -> new OpenJob(rs.getObject("job_id", UUID.class), status(rs), rs.getInt("attempts"), rs.getInt("max_attempts"),
                        rs.getTimestamp("expires_at").toInstant(), rs.getInt("unparseable_streak")),
                (Object) revisions.toArray(String[]::new));
    }

    /**
     * The role of the open jobs whose last attempt ran on one of {@code revisions}, as their canary's promotion (stable),
     * restart or stop (candidate) makes it: what the evidence of their attempts means is read from the row.
     *
     * @return the jobs changed
     */
    public int assignRole(List<String> revisions, RevisionRole role) {
        return jdbc.update("UPDATE jobs SET revision_role = ? WHERE finalized_at IS NULL AND adapter_revision = ANY (?)",
                role.wire(), (Object) revisions.toArray(String[]::new));
    }

    /**
     * Closes the open attempt of a lease nobody will finish (its worker's stop, death or expiry), unless already closed.
     *
     * @param outcome {@code lease_expired}, {@code handed_back}, {@code owner_gone}
     */
    public void closeEndedLease(UUID jobId, UUID leaseToken, Instant at, String outcome, String message) {
        jdbc.update("""
                UPDATE attempts SET ended_at = ?, outcome = ?, error_category = ?, error_message = ?
                 WHERE job_id = ? AND lease_token = ? AND ended_at IS NULL""",
                Timestamp.from(at), outcome, ErrorCategory.AMBIGUOUS.wire(), message, jobId, leaseToken);
    }

    /** Closes the open attempt of an ended lease as succeeded: its output was promoted before its record. */
    public void closeSucceededLease(UUID jobId, UUID leaseToken, Instant at, String message) {
        jdbc.update("""
                UPDATE attempts SET ended_at = ?, outcome = 'succeeded', error_message = ?
                 WHERE job_id = ? AND lease_token = ? AND ended_at IS NULL""", Timestamp.from(at), message, jobId, leaseToken);
    }

    /**
     * What a provider billed for the task of {@code attempt}, reported with its end: the attempt's, even when the job
     * has moved on to another since.
     */
    public void recordBilling(UUID jobId, int attempt, java.math.BigDecimal amount, String unit) {
        jdbc.update("UPDATE attempts SET billed_units = ?, billed_unit = ? WHERE job_id = ? AND attempt = ?", amount, unit, jobId,
                attempt);
    }

    /** The stored request of a job (preset, aspect class, inputs, source digest), as its output's manifest names it. */
    public StoredRequest storedRequest(UUID jobId) {
        return jdbc.queryForObject("""
                SELECT preset_id, preset_version, aspect_class, inputs::text AS inputs, source_sha256
                  FROM jobs WHERE job_id = ?""", (rs, i) -> new StoredRequest(rs.getString("preset_id"), rs.getInt("preset_version"),
                rs.getString("aspect_class"), rs.getString("inputs"), rs.getString("source_sha256")), jobId);
    }

    /** A job's stored request, as its output's manifest names it. */
    public record StoredRequest(String presetId, int presetVersion, String aspectClass, String inputsJson, String sourceSha256) {
    }

    /** The provider task of {@code jobId} if it is cancelled and has one. */
    public Optional<CancelledTask> cancelledTask(UUID jobId) {
        return jdbc.query("""
                SELECT provider, provider_task, provider_state, kind FROM jobs
                 WHERE job_id = ? AND status = ? AND provider_task IS NOT NULL""",
                (rs, i) -> new CancelledTask(rs.getString("provider"), rs.getString("provider_task"),
                        rs.getString("provider_state"), rs.getString("kind")),
                jobId, JobStatus.CANCELLED.wire()).stream().findFirst();
    }

    /** The adapter revision the job's last attempt ran on (empty: no such job, or no attempt ran yet). */
    public Optional<String> adapterRevision(UUID jobId) {
        List<String> last = jdbc.queryForList("SELECT adapter_revision FROM jobs WHERE job_id = ?", String.class, jobId);
        return last.isEmpty() ? Optional.empty() : Optional.ofNullable(last.get(0));
    }

    private static LeasedJob leased(ResultSet rs, int row) throws SQLException {
        return new LeasedJob(rs.getObject("job_id", UUID.class), rs.getObject("lease_token", UUID.class),
                rs.getString("lease_owner"), status(rs), rs.getString("provider"), rs.getString("adapter_revision"),
                rs.getString("tenant_id"), rs.getInt("attempts"), rs.getInt("max_attempts"),
                rs.getTimestamp("expires_at").toInstant(), rs.getInt("unparseable_streak"),
                RevisionRole.fromWire(rs.getString("revision_role")));
    }

    private static JobStatus status(ResultSet rs) throws SQLException {
        return JobStatus.fromWire(rs.getString("status")).orElseThrow();
    }
}
