package io.jobgate.relay;

import java.util.UUID;

import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dispatch message Artemis gave up on (max delivery attempts): its job fails as
 * {@code dead_lettered}, once, through the one finalize; the message is kept for inspection.
 */
public final class DeadLetters {

    private static final Logger LOG = LoggerFactory.getLogger(DeadLetters.class);

    private final JobFinalizer finalizer;

    public DeadLetters(JobFinalizer finalizer) {
        this.finalizer = finalizer;
    }

    public void finalizeDeadLettered(Exchange exchange) {
        Message m = exchange.getMessage();
        String jobId = m.getHeader(OutboxRelay.JOB_ID, String.class);
        Integer deliveries = m.getHeader("JMSXDeliveryCount", Integer.class);
        boolean now = jobId != null && finalizer.finalizeJob(UUID.fromString(jobId), new JobFinalizer.Outcome(
                JobStatus.FAILED, "dead_lettered", "The dispatch message was dead-lettered after " + deliveries
                + " deliveries; it is kept in jobs.dispatch.dead.", JobFinalizer.RefundPolicy.FULL));
        LOG.warn("Dead-lettered dispatch of job {} after {} deliveries; {}", jobId, deliveries,
                now ? "job failed as dead_lettered" : "job was already final");
        m.setHeader("JobgateDeadLettered", true);
        m.setHeader("JobgateFinalizedByDeadLetter", now);
    }
}
