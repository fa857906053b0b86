package io.jobgate.worker;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.canary.Canaries;
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.RevisionRole;
import io.jobgate.job.ErrorCategory;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.JobTransitions.Change;
import io.jobgate.job.JobTransitions.Event;
import io.jobgate.job.JobTransitions.Guard;
import io.jobgate.provider.Provider;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The worker's side of the job state machine: which dispatch may start an attempt, and the
 * lease, caps and provider gate of a start in one transaction; every status change is a
 * {@link JobTransitions} event. Lock order, shared with the relay and the finalizer: outbox rows,
 * then the job row, then a provider slot, then tenant and window counters. Every write after the
 * lease is conditional on the lease token, so a worker whose lease the sweeper ended changes nothing.
 */
public final class JobLeases {

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;
    private final JobFinalizer finalizer;
    private final Clock clock;
    private final io.jobgate.job.ProviderSlots slots;
    private final NamedParameterJdbcTemplate named;
    /** Attempts may go to a provider's canary candidate (docs/canary.md); with none running every attempt is stable. */
    private final Canaries canaries;
    /** Questions about one job's row (built on {@code jdbc}). */
    private final io.jobgate.job.JobConditions conditions;

    public JobLeases(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions, JobFinalizer finalizer,
                     Canaries canaries) {
        this.jdbc = jdbc;
        this.canaries = canaries;
        this.transactions = transactions;
        this.transitions = transitions;
        this.finalizer = finalizer;
        this.clock = transitions.clock();
        this.slots = new io.jobgate.job.ProviderSlots(jdbc);
        this.named = new NamedParameterJdbcTemplate(jdbc);
        this.conditions = new io.jobgate.job.JobConditions(jdbc);
    }

    /**
     * The lease columns as the LEASE transition returns them (job row aliased j). A summary job's source is its
     * transcription job's transcript (V34: parent_job_id), JSON as the transcription adapters write it.
     */
    private static final String LEASE_RETURNING = """
            j.job_id, j.preset_id, j.preset_version, j.kind, j.aspect_class, j.provider, j.inputs::text AS inputs,
            j.source_key, j.source_sha256, j.correlation_id,
            coalesce((SELECT u.media_type FROM uploads u WHERE u.upload_id = j.upload_id),
                     CASE WHEN j.parent_job_id IS NOT NULL THEN 'application/json' END) AS source_media_type,
            j.max_attempts, j.expires_at, j.unparseable_streak""";

    private static final String PEEK_COLUMNS = "j.tenant_id, j.attempts, j.lease_token, " + LEASE_RETURNING;

    /** The stored request of a job the dispatch event {@code eventId} may start, read without a lock. */
    public Optional<Lease> peek(UUID jobId, long eventId) {
        return transitions.peek(jobId, Event.LEASE, Guard.dispatchEvent(eventId), PEEK_COLUMNS).map(JobLeases::lease);
    }

    /** Does {@code leaseToken} still hold the job? (Asked before a worker promotes an output.) */
    public boolean holds(UUID jobId, UUID leaseToken) {
        return leaseToken != null && conditions.leasedBy(jobId, leaseToken);
    }

    /**
     * May the answer of {@code attempt}, made under {@code leaseToken}, still become the job's? While its
     * lease holds; and after the lease ran out, while nobody else holds the job and no newer attempt has
     * started (the job waits in {@code submission_unknown} or {@code retry_wait} on this attempt): a late
     * answer the provider billed is the job's evidence, never thrown away.
     */
    public boolean mayFinish(UUID jobId, UUID leaseToken, int attempt) {
        // Through the retrying transactions: asked with an answer in hand, so a database out of reach for a
        // while (a failover, a pool timed out under a wave of answers) is waited for, not the answer dropped.
        return leaseToken != null && Boolean.TRUE.equals(transactions.execute(tx -> conditions.mayFinish(jobId, leaseToken, attempt)));
    }

    /**
     * A late answer's task (its lease ran out while the provider accepted it): the job waits on that
     * task ({@code provider_pending}) if it still waits on this attempt in {@code submission_unknown}.
     */
    public boolean adoptPending(UUID jobId, int attempt, String providerTask, String providerRequestId, String providerState,
                                Instant firstCheck) {
        return transitions.apply(jobId, Event.TASK_FOUND, Guard.onAttempt(attempt, java.util.Set.of(io.jobgate.job.JobStatus.SUBMISSION_UNKNOWN)),
                Change.checkFrom(firstCheck, providerTask, providerRequestId, null, providerState)).isPresent();
    }

    /** Was the job cancelled (by its tenant)? Asked when a worker's lease was lost during its call. */
    public boolean cancelled(UUID jobId) {
        return conditions.cancelled(jobId);
    }

    /** Why a dispatch message cannot start an attempt (for the log line of an acknowledged duplicate). */
    public String whyNoLease(UUID jobId, long eventId) {
        return jdbc.query("""
                SELECT j.status, j.lease_token IS NOT NULL AS leased,
                       (SELECT max(o.event_id) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch') AS newest
                  FROM jobs j WHERE j.job_id = ?""", rs -> {
            if (!rs.next()) {
                return "unknown job";
            }
            String status = rs.getString("status");
            if (JobStatus.fromWire(status).map(JobStatus::terminal).orElse(false)) {
                return "job is already " + status;
            }
            if (rs.getBoolean("leased")) {
                return "another worker holds the lease";
            }
            long newest = rs.getLong("newest");
            return newest != eventId ? "stale dispatch event " + eventId + " (current " + newest + ")" : "job is " + status;
        }, jobId);
    }

    /** What re-validation found before the call: fail now, or wait and try again (no attempt spent). */
    public record Verdict(ErrorCategory category, String message, boolean retry) {
    }

    /** How starting an attempt ended. */
    public sealed interface GatePass permits Submitting, Snoozed, Ended, NotLeased {
    }

    /**
     * The attempt started under {@code lease}: the job is {@code submitting}, its attempt row is open;
     * {@code route}: the revision it runs on (a canary's candidate or the stable one; null: stable).
     */
    public record Submitting(Lease lease, int attempt, Canaries.Choice route) implements GatePass {
    }

    /** The gate was closed or full, or re-validation asked to wait: back to {@code retry_wait} until {@code until}. */
    public record Snoozed(Instant until, String reason) implements GatePass {
    }

    /** The job ended before its call (caps, invalid request). */
    public record Ended(String reason) implements GatePass {
    }

    /** Another worker or a newer event got there first: nothing changed. */
    public record NotLeased(String reason) implements GatePass {
    }

    /**
     * In one transaction: the lease (fresh token, owner, expiry), then what re-validation decided, the
     * job's caps, and the provider's gate — closed until a Retry-After, or full at the provider's
     * concurrency limit, its slots (V19) all held across instances. A closed or full
     * gate snoozes the job without spending an attempt; passing opens the attempt row.
     */
    public GatePass start(UUID jobId, long eventId, String worker, Duration leaseFor, Provider provider,
                          Duration fullDelay, Verdict verdict, Duration deferDelay) {
        return start(jobId, eventId, worker, leaseFor, provider, fullDelay, verdict, deferDelay, null);
    }

    /**
     * As {@link #start(UUID, long, String, Duration, Provider, Duration, Verdict, Duration)}, from the job as
     * {@link #peek} read it ({@code peeked}; null: not read). The usual start — nothing against the request,
     * caps left by the peeked row, a free slot — takes the lease and opens the attempt as one transition
     * ({@link Event#START}: one row version of the job) on the provider's slot; its guard is the peeked state (the
     * same dispatch event, as many attempts), and when it does not hold, no slot is claimed either. Without a canary
     * candidate that is one statement ({@link JobTransitions#startOnFreeSlot}); with one, the slot is claimed first,
     * then the choice is made (it may count the candidate's sample), then START, in one transaction. Anything else
     * goes the long way: the lease, then the checks.
     */
    public GatePass start(UUID jobId, long eventId, String worker, Duration leaseFor, Provider provider,
                          Duration fullDelay, Verdict verdict, Duration deferDelay, Lease peeked) {
        boolean usual = peeked != null && verdict == null && provider != null
                && Outcomes.mayStart(standing(peeked), clock.instant());
        io.jobgate.job.ProviderSlots.Claim triedFirst = null;
        if (usual && !canaries.hasCandidate(provider)) {
            // No canary to choose for: the slot's claim and START are one statement (the choice is the stable revision).
            UUID token = UUID.randomUUID();
            Canaries.Choice route = Canaries.Choice.stable(provider, peeked.kind());
            JobTransitions.SlotStart tried = transitions.startOnFreeSlot(jobId, Guard.dispatchEvent(eventId, peeked.attempts()),
                    Change.start(worker, leaseFor, token, provider.name(), route.revision(), RevisionRole.STABLE), LEASE_RETURNING,
                    provider.name(), provider.maxConcurrency());
            if (tried.started().isPresent()) {
                Map<String, Object> row = tried.started().get().row();
                int attempt = ((Number) row.get("opened_attempt")).intValue();
                return new Submitting(lease(row, attempt - 1), attempt, route);
            }
            if (!tried.qualified()) {
                return new NotLeased(whyNoLease(jobId, eventId));
            }
            // No slot (or the gate closed): the long way takes the lease and snoozes the job on what the claim found;
            // rows missing: the long way makes them, with the job's row locked, and looks again.
            usual = false;
            triedFirst = tried.rowsMissing() ? null : new io.jobgate.job.ProviderSlots.Claim(tried.gateClosedUntil(), false, false);
        }
        boolean claimFirst = usual;
        io.jobgate.job.ProviderSlots.Claim foundFirst = triedFirst;
        return transactions.execute(tx -> {
            io.jobgate.job.ProviderSlots.Claim claimed = foundFirst;
            if (claimFirst) {
                UUID token = UUID.randomUUID();
                claimed = slots.tryClaim(provider.name(), provider.maxConcurrency(), jobId, token, clock.instant());
                if (claimed.claimed()) {
                    // No job row is locked yet (START locks it next): the choice may wait for a candidate's count.
                    Canaries.Choice route = canaries.choose(provider, jobId, peeked.kind(), peeked.attempts(), peeked.maxAttempts(), true);
                    Optional<JobTransitions.Moved> started = transitions.apply(jobId, Event.START,
                            Guard.dispatchEvent(eventId, peeked.attempts()), Change.start(worker, leaseFor, token, provider.name(),
                                    route == null ? provider.revision(peeked.kind()) : route.revision(), role(route)), LEASE_RETURNING);
                    if (started.isEmpty()) {
                        tx.setRollbackOnly(); // the slot claimed for it goes back
                        return new NotLeased(whyNoLease(jobId, eventId));
                    }
                    Map<String, Object> row = started.get().row();
                    int attempt = ((Number) row.get("opened_attempt")).intValue();
                    // The lease as LEASE returns it: the attempts made before this one.
                    return new Submitting(lease(row, attempt - 1), attempt, route);
                }
                if (claimed.rowsMissing()) {
                    claimed = null; // the long way makes them, with the job's row locked, and looks again
                }
            }
            Optional<Lease> taken = transitions.apply(jobId, Event.LEASE, Guard.dispatchEvent(eventId),
                    Change.lease(worker, leaseFor), LEASE_RETURNING).map(m -> lease(m.row()));
            if (taken.isEmpty()) {
                return new NotLeased(whyNoLease(jobId, eventId));
            }
            Lease lease = taken.get();
            Instant now = clock.instant();
            if (verdict != null && !verdict.retry()) {
                return end(lease, verdict.category(), verdict.message());
            }
            if (Outcomes.decide(new Evidence.Starting(), RevisionRole.STABLE, standing(lease), Waits.NONE, now)
                    instanceof Fate.Fail none) {
                return end(lease, none.category(), none.message());
            }
            Instant wakeAt = null;
            String reason = null;
            if (verdict != null) {
                wakeAt = now.plus(deferDelay);
                reason = verdict.message();
            } else {
                // Closed by a Retry-After: no slot claimed. Full: no free slot of the provider's limit (V19).
                io.jobgate.job.ProviderSlots.Claim claim = claimed != null ? claimed
                        : slots.claim(provider.name(), provider.maxConcurrency(), jobId, lease.token(), now);
                if (claim.closedUntil() != null) {
                    wakeAt = claim.closedUntil();
                    reason = "provider " + provider.name() + " gate closed until " + claim.closedUntil();
                } else if (!claim.claimed()) {
                    wakeAt = now.plus(fullDelay);
                    reason = "provider " + provider.name() + " at its concurrency limit " + provider.maxConcurrency();
                }
            }
            if (wakeAt != null) {
                Fate deferred = Outcomes.decide(new Evidence.Deferred(wakeAt, verdict == null ? null : verdict.category(), reason),
                        RevisionRole.STABLE, standing(lease), Waits.NONE, now);
                if (deferred instanceof Fate.Fail late) {
                    return end(lease, late.category(), late.message());
                }
                Fate.Retry retry = (Fate.Retry) deferred;
                requeue(lease.jobId(), lease.token(), retry.at(), retry.unparseableStreak(),
                        retry.last() == null ? null : retry.last().wire());
                return new Snoozed(wakeAt, reason);
            }
            // The stable revision or a canary's candidate (docs/canary.md): decided from the attempt alone. The job's
            // row is locked (LEASE): the choice does not wait for a candidate's count.
            Canaries.Choice route = canaries.choose(provider, jobId, lease.kind(), lease.attempts(), lease.maxAttempts());
            int attempt = transitions.apply(jobId, Event.SUBMIT, Guard.lease(lease.token()),
                            Change.attempt(worker, provider.name(), route == null ? provider.revision(lease.kind()) : route.revision(),
                                    role(route)))
                    .map(m -> ((Number) m.row().get("opened_attempt")).intValue())
                    .orElseThrow(() -> new IllegalStateException("lease of job " + jobId + " lost within its own transaction"));
            return new Submitting(lease, attempt, route);
        });
    }


    /** The role of the revision chosen for an attempt: a candidate's whose outputs are not approved, else stable. */
    private static RevisionRole role(Canaries.Choice route) {
        return route != null && !route.approved() ? RevisionRole.CANDIDATE : RevisionRole.STABLE;
    }

    /** Where a leased (or peeked) job stands against its caps: the attempts before the one it would start. */
    private static Standing standing(Lease lease) {
        return new Standing(lease.attempts(), lease.maxAttempts(), lease.expiresAt(), lease.unparseableStreak());
    }

    private Ended end(Lease lease, ErrorCategory category, String message) {
        boolean ended = finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.failed(category.wire(), message));
        return new Ended(ended ? category.wire() + ": " + message : "lease lost");
    }

    /**
     * Back to {@code retry_wait} with a new dispatch event due at {@code at}: the lease and the job's
     * dispatch slot are released, older unpublished dispatch events of the job dropped.
     *
     * @return false if the lease was lost (nothing changed)
     */
    public boolean requeue(UUID jobId, UUID leaseToken, Instant at, int unparseableStreak, String lastCategory) {
        return transitions.apply(jobId, Event.RETRY, Guard.lease(leaseToken),
                Change.retryAt(at, unparseableStreak, lastCategory)).isPresent();
    }

    /**
     * A request that may or may not have reached the provider: {@code submission_unknown}, resolved by
     * asking the provider (reconciliation), never by blind resubmission. Lease and slot are released.
     */
    public boolean parkUnknown(UUID jobId, UUID leaseToken, String providerRequestId, Instant firstCheck) {
        return transitions.apply(jobId, Event.UNKNOWN, Guard.lease(leaseToken),
                Change.checkFrom(firstCheck, null, providerRequestId, ErrorCategory.AMBIGUOUS.wire())).isPresent();
    }

    /**
     * The provider accepted the task: {@code provider_pending} with its reference (a webhook finds the
     * job by it; the poller asks from {@code firstCheck} on) and the adapter's record of it
     * ({@code providerState}, may be null); the slot stays held.
     */
    public boolean markPending(UUID jobId, UUID leaseToken, String providerTask, String providerRequestId, String providerState,
                               Instant firstCheck) {
        return transitions.apply(jobId, Event.ACCEPTED, Guard.lease(leaseToken),
                Change.checkFrom(firstCheck, providerTask, providerRequestId, null, providerState)).isPresent();
    }

    /**
     * Answered calls whose answers wait to be finished: their provider slots and window shares go back now
     * ({@link JobTransitions#endCalls}), in one statement for the batch; their jobs stay {@code submitting}.
     *
     * @return how many still held their slot (a call whose lease was lost, or recorded already, frees nothing)
     */
    public int endCalls(java.util.List<UUID> jobIds, java.util.List<UUID> leaseTokens) {
        return transitions.endCalls(jobIds, leaseTokens);
    }

    /** Runs {@code work} (database writes only: it may run again after a deadlock) in one transaction. */
    public <T> T inOneTransaction(java.util.function.Supplier<T> work) {
        return transactions.execute(tx -> work.get());
    }

    /**
     * Closes the attempt row with what this worker saw (kept even when the lease was lost meanwhile), unless
     * it was closed as succeeded already: the sweeper ended its lease with the output this worker had promoted.
     */
    public void closeAttempt(UUID jobId, int attempt, UUID token, String outcome, AdapterResult result, long durationMs,
                             Instant nextAttemptAt, Boolean retryAfterUnderstood) {
        JobTransitions.AttemptClose close = attemptClose(attempt, token, outcome, result, durationMs, nextAttemptAt,
                retryAfterUnderstood);
        named.update("UPDATE attempts SET " + close.set() + " WHERE job_id = :job AND attempt = :closeAttempt AND lease_token = :closeToken"
                        + " AND outcome IS DISTINCT FROM 'succeeded'",
                new MapSqlParameterSource(close.values()).addValue("job", jobId).addValue("closeAttempt", attempt)
                        .addValue("closeToken", token));
    }

    /** The attempt columns a worker's record writes; one text for its own close and a transition's. */
    private static final String CLOSE_SET = """
            ended_at = :closeEndedAt, duration_ms = :closeDuration, outcome = :closeOutcome, http_status = :closeHttpStatus,
            provider_request_id = :closeRequestId, error_category = :closeCategory, error_message = :closeMessage,
            retry_after = :closeRetryAfter, retry_after_understood = :closeUnderstood, next_attempt_at = :closeNext,
            response_excerpt = :closeExcerpt, billed_units = :closeBilled, billed_unit = :closeBilledUnit""";

    /**
     * What this worker saw of {@code attempt}, as a close a transition writes with its own writes
     * ({@link JobTransitions.AttemptClose}): a success's finalize closes its attempt in the same statement.
     */
    public JobTransitions.AttemptClose attemptClose(int attempt, UUID token, String outcome, AdapterResult result, long durationMs,
                                                    Instant nextAttemptAt, Boolean retryAfterUnderstood) {
        Map<String, Object> values = new java.util.HashMap<>();
        values.put("closeEndedAt", Timestamp.from(clock.instant()));
        values.put("closeDuration", durationMs);
        values.put("closeOutcome", outcome);
        values.put("closeHttpStatus", result.httpStatus());
        values.put("closeRequestId", result.providerRequestId());
        values.put("closeCategory", result.category() == null ? null : result.category().wire());
        values.put("closeMessage", result.message());
        values.put("closeRetryAfter", result.retryAfter());
        values.put("closeUnderstood", retryAfterUnderstood);
        values.put("closeNext", nextAttemptAt == null ? null : Timestamp.from(nextAttemptAt));
        values.put("closeExcerpt", result.excerpt());
        values.put("closeBilled", result.billedAmount());
        values.put("closeBilledUnit", result.billedUnit());
        return new JobTransitions.AttemptClose(attempt, token, CLOSE_SET, values);
    }

    private static Lease lease(Map<String, Object> r) {
        return lease(r, ((Number) r.get("attempts")).intValue());
    }

    private static Lease lease(Map<String, Object> r, int attempts) {
        Timestamp expires = (Timestamp) r.get("expires_at");
        return new Lease((UUID) r.get("job_id"), (UUID) r.get("lease_token"), (String) r.get("tenant_id"),
                (String) r.get("preset_id"), ((Number) r.get("preset_version")).intValue(), (String) r.get("kind"),
                (String) r.get("aspect_class"), (String) r.get("provider"), (String) r.get("inputs"), (String) r.get("source_key"),
                (String) r.get("source_sha256"), (String) r.get("source_media_type"), (String) r.get("correlation_id"),
                attempts, ((Number) r.get("max_attempts")).intValue(),
                expires == null ? null : expires.toInstant(), ((Number) r.get("unparseable_streak")).intValue());
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }

    static Instant instant(ResultSet rs, int column) throws SQLException {
        Timestamp ts = rs.getTimestamp(column);
        return ts == null ? null : ts.toInstant();
    }
}
