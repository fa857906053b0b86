package io.jobgate.fate;

import io.jobgate.job.CandidateAttempts;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobSchedules;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.ProviderGates;
import io.jobgate.job.RevisionRole;
import io.jobgate.job.WaitingJob;
import java.time.Instant;
import java.util.Set;

/**
 * Writes the rulebook's decision about a job waiting on its provider's task (evidence from the poller, a webhook,
 * an operator's repair), through the state machine. Every write holds only while the job is still on the attempt
 * the evidence is about: evidence read before the job moved on to its next attempt changes nothing but that.
 */
public final class WaitingJobFates {

    /** Closes a canary candidate's own gate (its 429): the canary's, bound where the gateway is wired. */
    @FunctionalInterface
    public interface CandidateGate {
        void close(String revision, Instant until, String reason);
    }

    /** What applying came to: whether the job moved, and what was decided (logged, answered to a webhook). */
    public record Applied(boolean changed, String detail) {
    }

    private final JobTransitions transitions;
    private final JobFinalizer finalizer;
    private final JobSchedules schedules;
    private final CandidateAttempts candidateAttempts;
    private final ProviderGates gates;
    private final CandidateGate candidateGate;

    public WaitingJobFates(JobTransitions transitions, JobFinalizer finalizer, JobSchedules schedules,
                           CandidateAttempts candidateAttempts, ProviderGates gates, CandidateGate candidateGate) {
        this.transitions = transitions;
        this.finalizer = finalizer;
        this.schedules = schedules;
        this.candidateAttempts = candidateAttempts;
        this.gates = gates;
        this.candidateGate = candidateGate;
    }

    /** Applies {@code fate}, decided on {@code evidence} about {@code job}'s current attempt. */
    public Applied apply(WaitingJob job, Evidence evidence, Fate fate) {
        Fate.RateLimit rateLimit = fate.rateLimit();
        if (rateLimit != null && rateLimit.candidateGate()) {
            candidateGate.close(job.adapterRevision(), rateLimit.until(), "HTTP 429 for job " + job.jobId());
        } else if (rateLimit != null) {
            gates.close(job.provider(), rateLimit.until(), "HTTP 429 for job " + job.jobId());
        }
        if (fate instanceof Fate.CheckAgain again) {
            schedules.checkAt(job, again.at());
            return new Applied(false, again.why());
        }
        if (fate instanceof Fate.Succeed succeed) {
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job), JobFinalizer.Outcome.succeeded(succeed.record()));
            return new Applied(won, won ? "succeeded" : "already moved on");
        }
        if (fate instanceof Fate.TaskFound found) {
            boolean moved = transitions.apply(job.jobId(), JobTransitions.Event.TASK_FOUND, onItsAttempt(job),
                    JobTransitions.Change.checkFrom(found.firstCheck(), found.task(), null, null, found.state())).isPresent();
            return new Applied(moved, "provider has the task: provider_pending");
        }
        boolean candidate = job.role() == RevisionRole.CANDIDATE;
        Evidence.Failure failure = evidence instanceof Evidence.Failure f ? f : null;
        String held = evidence instanceof Evidence.HeldOutput h ? h.record() : null;
        String category = failure == null ? null : failure.category().wire();
        String what = failure != null ? failure.category().wire() + " (" + failure.message() + ")"
                : evidence instanceof Evidence.NotAtProvider absent ? absent.why() : "candidate output held in quarantine";
        String message = failure != null ? failure.message() : what;
        String outcome = held != null ? "candidate_output" : "retry_wait";
        if (fate instanceof Fate.Fail fail) {
            if (candidate) {
                // The candidate's evidence is its gates' and its evaluation's, whatever becomes of the job.
                candidateAttempts.record(job.jobId(), job.attempts(), outcome, held, category, message);
            }
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job),
                    JobFinalizer.Outcome.failed(fail.category().wire(), fail.message()).causedBy(fail.cause()));
            return new Applied(won, won ? "failed: " + fail.category().wire() + ": " + what : "already moved on");
        }
        if (!(fate instanceof Fate.Retry retry)) {
            throw new IllegalStateException("evidence about a task decided " + fate + ": only a worker's or a start's decides so");
        }
        boolean moved = candidate
                ? candidateAttempts.requeue(job.jobId(), job.attempts(), job.status(), outcome, held, category, message,
                retry.at(), retry.unparseableStreak())
                : transitions.apply(job.jobId(), JobTransitions.Event.RESUBMIT, JobTransitions.Guard.onAttempt(job.attempts(),
                Set.of(job.status())), JobTransitions.Change.retryAt(retry.at(), retry.unparseableStreak(),
                retry.last() == null ? null : retry.last().wire())).isPresent();
        return new Applied(moved, moved ? "retry_wait at " + retry.at() + (candidate ? " for the stable revision" : "") + ": " + what
                : "already moved on");
    }

    /**
     * Evidence is about the task of the attempt the job was on when it was read (claimed, or found by a webhook's
     * task): once the job moved on to another attempt, it changes nothing. A failure of the old task must not fail,
     * nor a "not found" resubmit, a job whose next attempt is at the provider.
     */
    private static JobTransitions.Guard onItsAttempt(WaitingJob job) {
        return JobTransitions.Guard.onAttempt(job.attempts(), JobStatus.AT_PROVIDER);
    }
}
