package io.jobgate.job;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * A job's status event as a status round of the relay takes it from the outbox (one for every admitted
 * job, {@code queued}, and one for every change after it): what followers of the topic {@code jobs.events}
 * receive, and what tenants' webhooks are written from. {@code movedTo}: the pool member a retry moved the job
 * to (docs/providers.md, "Pools"), null when it stays where it was.
 */
public record StatusEvent(long eventId, UUID jobId, String tenantId, String status, int attempt, String errorCategory,
                          Instant at, String movedTo) {

    /** An event of a change that moved no pool job to another member. */
    public StatusEvent(long eventId, UUID jobId, String tenantId, String status, int attempt, String errorCategory, Instant at) {
        this(eventId, jobId, tenantId, status, attempt, errorCategory, at, null);
    }

    /** The Standard Webhooks event type of this change ({@code job.succeeded}, ...). */
    public String webhookType() {
        return "job." + status;
    }

    /**
     * What else a status round writes for the events it took, on the round's own connection and in its
     * transaction: committed with the events' mark only after the broker committed their messages, rolled
     * back with it otherwise (the events are taken again by a later round, and the writes must tolerate
     * that: at least once).
     */
    @FunctionalInterface
    public interface RoundWrites {
        void write(java.sql.Connection round, List<StatusEvent> taken) throws java.sql.SQLException;
    }
}
