package io.jobgate.job;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;

/**
 * A job waiting on a provider ({@code provider_pending} or {@code submission_unknown}), as reconciliation sees it
 * (read by {@link JobRows}, claimed for a check by {@link JobSchedules}).
 *
 * @param providerState the adapter's own record of its task ({@code JobgateProviderState}), or null
 * @param sourceMillis  the length of its uploaded audio as measured at upload, or null: what a provider that bills
 *                      per second bills, told to its lookup too (a submit whose reply was lost stored no task state)
 * @param unparseableStreak unparseable replies in a row on the stable revision: a lookup's counts as a submit's does
 * @param role          the part the revision of the attempt it waits on plays (a candidate's evidence is never the job's)
 */
public record WaitingJob(UUID jobId, JobStatus status, String provider, String providerTask, String providerRequestId,
                         int attempts, int maxAttempts, Instant expiresAt, int checks, String presetId, int presetVersion,
                         String kind, String tenantId, String aspectClass, String inputsJson, String sourceSha256,
                         String adapterRevision, String providerState, Long sourceMillis, int unparseableStreak,
                         RevisionRole role) {

    /** Its columns of the jobs row (unqualified but the upload's: {@code jobs} as the statement names the table). */
    static String columns(String jobs) {
        return """
                job_id, status, provider, provider_task, provider_request_id, attempts, max_attempts, expires_at, checks,
                preset_id, preset_version, kind, tenant_id, aspect_class, inputs::text AS inputs, source_sha256, adapter_revision,
                provider_state, unparseable_streak, %2$s,
                (SELECT u.duration_ms FROM uploads u WHERE u.tenant_id = %1$s.tenant_id AND u.sha256 = %1$s.source_sha256) AS source_ms"""
                .formatted(jobs, RevisionRole.column(jobs));
    }

    static WaitingJob map(ResultSet rs, int row) throws SQLException {
        java.sql.Timestamp expires = rs.getTimestamp("expires_at");
        return new WaitingJob(rs.getObject("job_id", UUID.class), JobStatus.fromWire(rs.getString("status")).orElseThrow(),
                rs.getString("provider"),
                rs.getString("provider_task"), rs.getString("provider_request_id"), rs.getInt("attempts"),
                rs.getInt("max_attempts"), expires.toInstant(), rs.getInt("checks"), rs.getString("preset_id"),
                rs.getInt("preset_version"), rs.getString("kind"), rs.getString("tenant_id"), rs.getString("aspect_class"),
                rs.getString("inputs"), rs.getString("source_sha256"), rs.getString("adapter_revision"), rs.getString("provider_state"),
                rs.getObject("source_ms") == null ? null : rs.getLong("source_ms"), rs.getInt("unparseable_streak"),
                RevisionRole.fromWire(rs.getString("revision_role")));
    }
}
