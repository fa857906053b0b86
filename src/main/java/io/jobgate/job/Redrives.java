package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

import io.jobgate.common.ApiProblem;
import io.jobgate.job.JobTransitions.Change;
import io.jobgate.job.JobTransitions.Event;
import io.jobgate.job.JobTransitions.Guard;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * An operator's redrive: a failed job (never a cancelled one) gets one more attempt under its id,
 * dispatched through the outbox like any queued job (fairness and limits apply). The state machine's
 * {@link Event#REDRIVE} does the move, the debit of what was refunded and the reservations; this
 * class decides whether it may, and records who did it, when and why ({@code job_redrives}).
 */
public final class Redrives {

    /** Attempts a redrive adds beyond the ones made. */
    static final int EXTRA_ATTEMPTS = 1;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;

    public Redrives(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.transitions = transitions;
    }

    /** What a redrive did: its number, whether it was forced, the micros charged again. */
    public record Redriven(UUID jobId, int redrive, boolean forced, long debitedMicros, Instant at) {
    }

    /**
     * @param force also when the job's lifetime cap has passed: it then gets a new lifetime from now
     * @throws ApiProblem 404 {@code job_not_found}, 409 {@code not_redrivable} (not failed),
     *                    409 {@code redrive_lifetime_exceeded} (past its lifetime, not forced)
     */
    public Redriven redrive(UUID jobId, String operator, String reason, boolean force) {
        return transactions.execute(tx -> {
            Failed job = jdbc.query("""
                    SELECT status, expires_at, max_lifetime_seconds, error_category, error_message
                      FROM jobs WHERE job_id = ?""", (rs, i) -> new Failed(rs.getString("status"),
                    rs.getTimestamp("expires_at").toInstant(), rs.getLong("max_lifetime_seconds"), rs.getString("error_category"),
                    rs.getString("error_message")), jobId).stream().findFirst()
                    .orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + jobId + "."));
            String status = job.status();
            if (!JobStatus.FAILED.wire().equals(status)) {
                throw notRedrivable(jobId, status);
            }
            Instant now = transitions.clock().instant();
            Instant expires = job.expiresAt();
            boolean expired = !expires.isAfter(now);
            if (expired && !force) {
                throw ApiProblem.of(409, "redrive_lifetime_exceeded", "Job " + jobId + " is past its lifetime cap ("
                        + expires + "); send \"force\": true to give it a new lifetime from now.").with("expires_at", expires.toString());
            }
            Instant newLifetime = expired ? now.plusSeconds(job.maxLifetimeSeconds()) : null;
            JobTransitions.Moved moved = transitions.apply(jobId, Event.REDRIVE, Guard.anyone(),
                            Change.redrive(now, EXTRA_ATTEMPTS, newLifetime))
                    .orElseThrow(() -> notRedrivable(jobId, jdbc.queryForObject("SELECT status FROM jobs WHERE job_id = ?",
                            String.class, jobId)));
            int redrive = ((Number) moved.row().get("redrives")).intValue();
            jdbc.update("""
                    INSERT INTO job_redrives (job_id, redrive, operator, reason, forced, previous_category, previous_message,
                                              debited_micros, redriven_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""", jobId, redrive, operator, reason, expired,
                    job.errorCategory(), job.errorMessage(), moved.redebitedMicros(), Timestamp.from(now));
            return new Redriven(jobId, redrive, expired, moved.redebitedMicros(), now);
        });
    }

    /** The job a redrive reads first: a failed one (its status checked), its lifetime and its last error. */
    private record Failed(String status, Instant expiresAt, long maxLifetimeSeconds, String errorCategory, String errorMessage) {
    }

    /** One redrive of a job, as {@code job_redrives} keeps it. */
    public record Redrive(int redrive, String operator, String reason, boolean forced, String previousCategory,
                          String previousMessage, Long debitedMicros, Instant redrivenAt) {
    }

    /** Every redrive of a job, oldest first. */
    public List<Redrive> history(UUID jobId) {
        return jdbc.query("""
                SELECT redrive, operator, reason, forced, previous_category, previous_message, debited_micros, redriven_at
                  FROM job_redrives WHERE job_id = ? ORDER BY redrive""", (rs, i) -> new Redrive(rs.getInt("redrive"),
                rs.getString("operator"), rs.getString("reason"), rs.getBoolean("forced"), rs.getString("previous_category"),
                rs.getString("previous_message"), rs.getObject("debited_micros", Long.class), rs.getTimestamp("redriven_at").toInstant()),
                jobId);
    }

    private static ApiProblem notRedrivable(UUID jobId, String status) {
        String why = JobStatus.CANCELLED.wire().equals(status) ? "it was cancelled by its tenant and stays cancelled"
                : "only a failed job can be redriven";
        return ApiProblem.of(409, "not_redrivable", "Job " + jobId + " is " + status + ": " + why + ".")
                .with("job_status", status);
    }
}
