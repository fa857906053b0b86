package io.jobgate.relay;

import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.DeadLetteredDispatches;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.RevisionRole;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dispatch message Artemis gave up on (max delivery attempts). When its job still waits on it, the rulebook
 * ({@link Outcomes}) says what follows: the dispatch goes out again under the job's slot, or the job fails as
 * {@code dead_lettered} through the one finalize. A message the job no longer waits on (an older event, an attempt
 * started, a final job) changes nothing. What the route keeps on {@code jobs.dispatch.dead} says which it was in
 * {@value #OUTCOME}.
 */
public final class DeadLetters {

    private static final Logger LOG = LoggerFactory.getLogger(DeadLetters.class);

    /** What became of the dead letter: {@code given_back}, {@code failed} (its job failed for it) or {@code stale}. */
    public static final String OUTCOME = "JobgateDeadLetterOutcome";

    private final DeadLetteredDispatches dispatches;
    private final JobFinalizer finalizer;
    private final Runnable wakeRelay;
    private final Clock clock;

    public DeadLetters(DeadLetteredDispatches dispatches, JobFinalizer finalizer, Runnable wakeRelay, Clock clock) {
        this.dispatches = dispatches;
        this.finalizer = finalizer;
        this.wakeRelay = wakeRelay;
        this.clock = clock;
    }

    public void handle(Exchange exchange) {
        Message m = exchange.getMessage();
        String jobId = m.getHeader(OutboxRelay.JOB_ID, String.class);
        Long eventId = m.getHeader(OutboxRelay.EVENT_ID, Long.class);
        Integer deliveries = m.getHeader("JMSXDeliveryCount", Integer.class);
        String outcome = jobId == null || eventId == null ? "stale" : decide(UUID.fromString(jobId), eventId);
        switch (outcome) {
            case "given_back" -> LOG.warn("Dead-lettered dispatch of job {} (event {}): no attempt started from it; given back to the outbox",
                    jobId, eventId);
            case "failed" -> LOG.warn("Dead-lettered dispatch of job {} (event {}): the job failed as dead_lettered", jobId, eventId);
            default -> LOG.info("Dead-lettered dispatch of job {} (event {}, delivered {} times here): the job no longer waits on it",
                    jobId, eventId, deliveries);
        }
        m.setHeader(OUTCOME, outcome);
        m.setHeader("JobgateDeadLettered", true);
        m.setHeader("JobgateFinalizedByDeadLetter", "failed".equals(outcome));
    }

    private String decide(UUID jobId, long eventId) {
        Optional<DeadLetteredDispatches.Waiting> waiting = dispatches.waiting(jobId, eventId);
        if (waiting.isEmpty()) {
            return "stale";
        }
        DeadLetteredDispatches.Waiting job = waiting.get();
        Instant now = clock.instant();
        Fate fate = Outcomes.decide(new Evidence.DispatchDeadLettered(job.givenBack()), RevisionRole.STABLE,
                new Standing(job.attempts(), job.maxAttempts(), job.expiresAt(), job.unparseableStreak()), Waits.NONE, now);
        if (fate instanceof Fate.Redispatch) {
            if (!dispatches.giveBack(jobId, eventId, job.givenBack(), now)) {
                return "stale";
            }
            wakeRelay.run();
            return "given_back";
        }
        Fate.Fail fail = (Fate.Fail) fate;
        // Only while the job still waits on the event, as read above (a start from it, a call at the provider: stale).
        boolean failed = finalizer.finalizeJobIf(jobId, new JobTransitions.Guard(null, eventId,
                DeadLetteredDispatches.BEFORE_A_START, null), new JobFinalizer.Outcome(
                JobStatus.FAILED, fail.category().wire(), fail.message(), JobFinalizer.RefundPolicy.FULL));
        return failed ? "failed" : "stale";
    }
}
