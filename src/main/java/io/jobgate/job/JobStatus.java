package io.jobgate.job;

import java.util.Arrays;
import java.util.Optional;

/**
 * The states of a job. Each comment says which component moves a job out of the state.
 * Terminal states never change again ({@code finalized_at} is set once).
 */
public enum JobStatus {
    /** Accepted; the outbox relay dispatches it, cancel may end it. */
    QUEUED,
    /** A worker holds its lease; the worker moves it on, the sweeper reclaims an expired lease. */
    RUNNING,
    /** The worker is calling the provider; its outcome or the sweeper moves it on. */
    SUBMITTING,
    /** The provider accepted the task; a webhook, the poller or the sweeper finishes it. */
    PROVIDER_PENDING,
    /** A request may or may not have reached the provider; reconciliation asks the provider. */
    SUBMISSION_UNKNOWN,
    /** Waiting for its next attempt (backoff or Retry-After); the relay dispatches it when due. Not a failure. */
    RETRY_WAIT,
    /** Terminal: a checked output is readable. */
    SUCCEEDED,
    /** Terminal: with an error category and message. */
    FAILED,
    /** Terminal: cancelled by its tenant. */
    CANCELLED;

    /** Waiting on the provider: its evidence (webhook, poll, operator repair) applies only to these. */
    public static final java.util.Set<JobStatus> AT_PROVIDER = java.util.EnumSet.of(PROVIDER_PENDING, SUBMISSION_UNKNOWN);

    /** The terminal statuses, those {@link #terminal()} names: a job in one never changes again. */
    public static final java.util.Set<JobStatus> TERMINAL = java.util.Collections.unmodifiableSet(
            Arrays.stream(values()).filter(JobStatus::terminal).collect(java.util.stream.Collectors.toCollection(
                    () -> java.util.EnumSet.noneOf(JobStatus.class))));

    /**
     * The statuses as one SQL parameter, read by {@code string_to_array(?, ',')} (a text array
     * bound the same way by every driver path: JdbcTemplate, named parameters, camel-sql).
     */
    public static String sqlList(java.util.Collection<JobStatus> statuses) {
        // Built on every transition: a walk over the statuses in wire order, no stream or sort.
        StringBuilder list = new StringBuilder();
        for (JobStatus status : BY_WIRE) {
            if (statuses.contains(status)) {
                list.append(list.isEmpty() ? "" : ",").append(status.wire);
            }
        }
        return list.toString();
    }

    /**
     * The statuses as SQL literals in wire order ({@code 'a', 'b'}), for a predicate a partial index names:
     * a parameter there leaves a generic plan unable to prove the index's predicate. Only for SQL text
     * written in this package (everywhere else a status is a parameter: {@link #sqlList}).
     */
    static String sqlLiterals(java.util.Collection<JobStatus> statuses) {
        StringBuilder list = new StringBuilder();
        for (JobStatus status : BY_WIRE) {
            if (statuses.contains(status)) {
                list.append(list.isEmpty() ? "" : ", ").append(status.sqlLiteral());
            }
        }
        return list.toString();
    }

    /**
     * Its wire name as a SQL literal ({@code 'succeeded'}), for a predicate a partial index names (see
     * {@link #sqlLiterals}); written from the enum, never spelled by hand.
     */
    public String sqlLiteral() {
        return "'" + wire + "'";
    }

    private static final JobStatus[] BY_WIRE = Arrays.stream(values()).sorted(java.util.Comparator.comparing(JobStatus::wire))
            .toArray(JobStatus[]::new);

    /** Its name in the database and the API. */
    private final String wire = name().toLowerCase(java.util.Locale.ROOT);

    public boolean terminal() {
        return this == SUCCEEDED || this == FAILED || this == CANCELLED;
    }

    public String wire() {
        return wire;
    }

    public static Optional<JobStatus> fromWire(String value) {
        return Arrays.stream(values()).filter(s -> s.wire().equals(value)).findFirst();
    }
}
