package io.jobgate.job;

import java.time.Instant;
import java.util.Set;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The evidence of a canary candidate's attempt, kept on its attempt row for the candidate's gates and its evaluation
 * (its checked output held in quarantine, or its failure), never its job's; and, while the job is still on that
 * attempt, the job's move to a new attempt on the stable revision (docs/canary.md).
 */
public final class CandidateAttempts {

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;
    private final JobConditions conditions;

    public CandidateAttempts(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.transitions = transitions;
        this.conditions = new JobConditions(jdbc);
    }

    /** Keeps a candidate's checked output record (quarantine keys) on its attempt: evaluation evidence. */
    public void recordHeld(UUID jobId, int attempt, String record) {
        jdbc.update("UPDATE attempts SET held_output = CAST(? AS jsonb) WHERE job_id = ? AND attempt = ?", record, jobId, attempt);
    }

    /**
     * Records what the candidate's attempt came to, whatever became of its job (a job that ended on its caps keeps its
     * candidate's evidence too).
     *
     * @param outcome    {@code candidate_output} for a held output, else {@code retry_wait}
     * @param heldRecord the held output's record, or null
     * @param category   the candidate's failure category, or null
     */
    public void record(UUID jobId, int attempt, String outcome, String heldRecord, String category, String message) {
        jdbc.update("""
                UPDATE attempts SET outcome = ?, held_output = coalesce(CAST(? AS jsonb), held_output),
                       error_category = coalesce(?, error_category), error_message = coalesce(?, error_message)
                 WHERE job_id = ? AND attempt = ?""", outcome, heldRecord, category,
                message == null || message.length() <= 500 ? message : message.substring(0, 500), jobId, attempt);
    }

    /**
     * A candidate's task (attempt {@code attempt}) ended while its job waits on the provider: if the job is still on
     * that attempt, in {@code from}, the attempt records its evidence ({@link #record}) and the job takes
     * {@code resubmit}, due at {@code at}, for an attempt on the stable revision. One transaction, the job's row
     * locked first (a job waiting on its provider has no unpublished dispatch event for the transition to lock), so
     * stale evidence — a poller's lookup that started before the job moved on to its next attempt — changes nothing.
     *
     * @param unparseableStreak the stable revision's streak, carried on (a candidate's reply never counts in it)
     * @return false when the job had moved on (nothing changed)
     */
    public boolean requeue(UUID jobId, int attempt, JobStatus from, String outcome, String heldRecord, String category,
                           String message, Instant at, int unparseableStreak) {
        return Boolean.TRUE.equals(transactions.execute(tx -> {
            if (!conditions.lockOnAttempt(jobId, attempt, from)) {
                return false;
            }
            record(jobId, attempt, outcome, heldRecord, category, message);
            return transitions.apply(jobId, JobTransitions.Event.RESUBMIT, JobTransitions.Guard.from(Set.of(from)),
                    JobTransitions.Change.retryAt(at, unparseableStreak, category)).isPresent();
        }));
    }
}
