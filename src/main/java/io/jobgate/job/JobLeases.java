package io.jobgate.job;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;

import io.jobgate.job.JobTransitions.Change;
import io.jobgate.job.JobTransitions.Event;
import io.jobgate.job.JobTransitions.Guard;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The worker's one door to a job: what a dispatch may start from, the writes of a start (the lease, a provider slot,
 * the attempt row), and every move a decision on the attempt's answer makes under its lease (requeue, park, wait on
 * the provider's task, finalize, the attempt's close, a 429's gate). The worker decides (with the rulebook in
 * {@code fate/}); this class writes, in typed rows, and is the only place the worker's SQL on {@code jobs} and
 * {@code attempts} lives. Lock order, shared with the relay and the finalizer: outbox rows, then the job row, then a
 * provider slot, then tenant and window counters. Every write after the lease is conditional on the lease token, so a
 * worker whose lease the sweeper ended changes nothing.
 */
public final class JobLeases {

    /** Where a job waits on an attempt whose lease ran out during its call (the sweeper's release). */
    private static final Set<JobStatus> LATE_FINISH_FROM = Set.of(JobStatus.SUBMISSION_UNKNOWN, JobStatus.RETRY_WAIT);

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;
    private final JobFinalizer finalizer;
    private final ProviderGates gates;
    private final CandidateAttempts candidates;
    private final Clock clock;
    private final ProviderSlots slots;
    private final NamedParameterJdbcTemplate named;
    private final JobConditions conditions;

    /**
     * @param gates      closed for a provider's whole fleet by a stable revision's 429
     * @param candidates a canary candidate's held output, kept on its attempt
     */
    public JobLeases(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions, JobFinalizer finalizer,
                     ProviderGates gates, CandidateAttempts candidates) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.transitions = transitions;
        this.finalizer = finalizer;
        this.gates = gates;
        this.candidates = candidates;
        this.clock = transitions.clock();
        this.slots = new ProviderSlots(jdbc);
        this.named = new NamedParameterJdbcTemplate(jdbc);
        this.conditions = new JobConditions(jdbc);
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
            j.max_attempts, j.expires_at, j.unparseable_streak, j.pool, j.source_bytes""";

    private static final String PEEK_COLUMNS = "j.tenant_id, j.attempts, j.lease_token, " + LEASE_RETURNING;

    // --- What a dispatch may start from -------------------------------------------------------------------------

    /** The stored request of a job the dispatch event {@code eventId} may start, read without a lock. */
    public Optional<Lease> peek(UUID jobId, long eventId) {
        return transitions.peek(jobId, Event.LEASE, Guard.dispatchEvent(eventId), PEEK_COLUMNS).map(JobLeases::lease);
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

    // --- The writes of a start ----------------------------------------------------------------------------------

    /** An attempt opened: the job is {@code submitting} under {@code lease}, attempt {@code attempt}'s row is open. */
    public record Started(Lease lease, int attempt) {
    }

    /**
     * What {@link #startOnFreeSlot} did: the start, when made; else whether START applied to the job (it claims nothing
     * for a job it does not apply to) and what the slot's claim found ({@code found}: null when the provider's slot rows
     * are not all there yet, so none may have been free).
     */
    public record FreeSlotStart(Optional<Started> started, boolean qualified, ProviderSlots.Claim found) {
    }

    /**
     * The usual start on the stable revision, in one statement: a free slot of {@code provider}'s {@code limit} claimed
     * and the lease taken with the attempt opened ({@link Event#START}), guarded by the peeked state (the same dispatch
     * event, {@code attemptsSeen} attempts).
     */
    public FreeSlotStart startOnFreeSlot(UUID jobId, long eventId, int attemptsSeen, String worker, Duration leaseFor, String provider,
                                         int limit, String revision) {
        JobTransitions.SlotStart tried = transitions.startOnFreeSlot(jobId, Guard.dispatchEvent(eventId, attemptsSeen),
                Change.start(worker, leaseFor, UUID.randomUUID(), provider, revision, RevisionRole.STABLE), LEASE_RETURNING,
                provider, limit);
        Optional<Started> started = tried.started().map(JobLeases::started);
        return new FreeSlotStart(started, tried.qualified(),
                tried.rowsMissing() ? null : new ProviderSlots.Claim(tried.gateClosedUntil(), false, false));
    }

    /** A free slot of {@code provider}'s {@code limit} for the lease {@code token} will take, if one is free now (never waits). */
    public ProviderSlots.Claim tryClaim(String provider, int limit, UUID jobId, UUID token) {
        return slots.tryClaim(provider, limit, jobId, token, clock.instant());
    }

    /** A slot of {@code provider}'s {@code limit} for the held lease, its rows made first when missing. */
    public ProviderSlots.Claim claim(String provider, int limit, Lease lease) {
        return slots.claim(provider, limit, lease.jobId(), lease.token(), clock.instant());
    }

    /**
     * {@link Event#START} under {@code token} (its slot claimed already): the lease taken and the attempt opened on
     * {@code revision}, guarded by the peeked state.
     */
    public Optional<Started> start(UUID jobId, long eventId, int attemptsSeen, String worker, Duration leaseFor, UUID token,
                                   String provider, String revision, RevisionRole role) {
        return transitions.apply(jobId, Event.START, Guard.dispatchEvent(eventId, attemptsSeen),
                Change.start(worker, leaseFor, token, provider, revision, role), LEASE_RETURNING).map(JobLeases::started);
    }

    /** The lease alone ({@link Event#LEASE}), before the checks of the long way. */
    public Optional<Lease> lease(UUID jobId, long eventId, String worker, Duration leaseFor) {
        return transitions.apply(jobId, Event.LEASE, Guard.dispatchEvent(eventId), Change.lease(worker, leaseFor), LEASE_RETURNING)
                .map(m -> lease(m.row()));
    }

    /** The attempt opened under the held lease ({@link Event#SUBMIT}) on {@code revision}; its number. */
    public int submit(Lease lease, String worker, String provider, String revision, RevisionRole role) {
        return transitions.apply(lease.jobId(), Event.SUBMIT, Guard.lease(lease.token()), Change.attempt(worker, provider, revision, role))
                .map(m -> ((Number) m.row().get("opened_attempt")).intValue())
                .orElseThrow(() -> new IllegalStateException("lease of job " + lease.jobId() + " lost within its own transaction"));
    }

    /** Runs {@code work} (database writes only: it may run again after a deadlock) in one transaction. */
    public <T> T inOneTransaction(Function<TransactionStatus, T> work) {
        return transactions.execute(work::apply);
    }

    /** As {@link #inOneTransaction(Function)}, for work that never asks to roll back. */
    public <T> T inOneTransaction(java.util.function.Supplier<T> work) {
        return transactions.execute(tx -> work.get());
    }

    // --- During the call ------------------------------------------------------------------------------------------

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

    /** Was the job cancelled (by its tenant)? Asked when a worker's lease was lost during its call. */
    public boolean cancelled(UUID jobId) {
        return conditions.cancelled(jobId);
    }

    /**
     * Answered calls whose answers wait to be finished: their provider slots and window shares go back now
     * ({@link JobTransitions#endCalls}), in one statement for the batch; their jobs stay {@code submitting}.
     *
     * @return how many still held their slot (a call whose lease was lost, or recorded already, frees nothing)
     */
    public int endCalls(List<UUID> jobIds, List<UUID> leaseTokens) {
        return transitions.endCalls(jobIds, leaseTokens);
    }

    // --- A decision's writes, under the lease --------------------------------------------------------------------

    /**
     * Back to {@code retry_wait} with a new dispatch event due at {@code at}: the lease and the job's
     * dispatch slot are released, older unpublished dispatch events of the job dropped.
     *
     * @return false if the lease was lost (nothing changed)
     */
    public boolean requeue(UUID jobId, UUID leaseToken, Instant at, int unparseableStreak, String lastCategory) {
        return requeueOn(jobId, leaseToken, null, at, unparseableStreak, lastCategory);
    }

    /**
     * As {@link #requeue}, the next attempt moved to {@code provider} (a member of the job's pool; null: it stays). The
     * job in {@code retry_wait} holds no dispatch-window share (RETRY gives it back to the provider it held it on), so
     * the relay counts its next dispatch against the member it moved to.
     */
    public boolean requeueOn(UUID jobId, UUID leaseToken, String provider, Instant at, int unparseableStreak, String lastCategory) {
        return requeueOn(jobId, leaseToken, provider, at, unparseableStreak, lastCategory, null);
    }

    /** As above; {@code waitingReason}: why the job waits, shown on it while it does (null: for nothing in particular). */
    public boolean requeueOn(UUID jobId, UUID leaseToken, String provider, Instant at, int unparseableStreak, String lastCategory,
                             String waitingReason) {
        return transitions.apply(jobId, Event.RETRY, Guard.lease(leaseToken),
                Change.retryOn(provider, at, unparseableStreak, lastCategory, waitingReason)).isPresent();
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
     * A late answer's task (its lease ran out while the provider accepted it): the job waits on that
     * task ({@code provider_pending}) if it still waits on this attempt in {@code submission_unknown}.
     */
    public boolean adoptPending(UUID jobId, int attempt, String providerTask, String providerRequestId, String providerState,
                                Instant firstCheck) {
        return transitions.apply(jobId, Event.TASK_FOUND, Guard.onAttempt(attempt, Set.of(JobStatus.SUBMISSION_UNKNOWN)),
                Change.checkFrom(firstCheck, providerTask, providerRequestId, null, providerState)).isPresent();
    }

    /** The job failed under its lease (the one finalize); {@code cause}: what used its caps up, when a 429 did. */
    public boolean fail(UUID jobId, UUID leaseToken, ErrorCategory category, String message, String cause) {
        return finalizer.finalizeJob(jobId, leaseToken, JobFinalizer.Outcome.failed(category.wire(), message).causedBy(cause));
    }

    /** The job succeeded with {@code promoted} under its lease, its attempt closed by the finalize's own statement. */
    public boolean succeed(Lease lease, int attempt, String promoted, AttemptSeen seen) {
        return finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.succeeded(promoted),
                attemptClose(attempt, lease.token(), "succeeded", seen, null, null));
    }

    /**
     * A late answer (its lease ran out during the call) still made the job's while the job waits on this attempt (no
     * newer one started): the one finalize, billed once, the attempt closed as {@code late_succeeded}.
     */
    public boolean succeedLate(Lease lease, int attempt, String promoted, AttemptSeen seen) {
        return finalizer.finalizeJobIf(lease.jobId(), Guard.onAttempt(attempt, LATE_FINISH_FROM), JobFinalizer.Outcome.succeeded(promoted),
                attemptClose(attempt, lease.token(), "late_succeeded", seen, null, null));
    }

    /** Keeps a canary candidate's checked output record (quarantine keys) on its attempt: evaluation evidence. */
    public void recordHeld(UUID jobId, int attempt, String record) {
        candidates.recordHeld(jobId, attempt, record);
    }

    /** A stable revision's 429: the provider's gate closed for its whole fleet until {@code until}. */
    public void closeGate(String provider, Instant until, String reason) {
        gates.close(provider, until, reason);
    }

    /** What a worker saw of its attempt, written on the attempt's row when it is closed. */
    public record AttemptSeen(Integer httpStatus, String providerRequestId, ErrorCategory category, String message,
                              String retryAfter, String excerpt, BigDecimal billedAmount, String billedUnit, long durationMs) {
    }

    /**
     * Closes the attempt row with what this worker saw (kept even when the lease was lost meanwhile), unless
     * it was closed as succeeded already: the sweeper ended its lease with the output this worker had promoted.
     */
    public void closeAttempt(Lease lease, int attempt, String outcome, AttemptSeen seen, Instant nextAttemptAt,
                             Boolean retryAfterUnderstood) {
        JobTransitions.AttemptClose close = attemptClose(attempt, lease.token(), outcome, seen, nextAttemptAt, retryAfterUnderstood);
        named.update("UPDATE attempts SET " + close.set() + " WHERE job_id = :job AND attempt = :closeAttempt AND lease_token = :closeToken"
                        + " AND outcome IS DISTINCT FROM 'succeeded'",
                new MapSqlParameterSource(close.values()).addValue("job", lease.jobId()).addValue("closeAttempt", attempt)
                        .addValue("closeToken", lease.token()));
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
    private JobTransitions.AttemptClose attemptClose(int attempt, UUID token, String outcome, AttemptSeen seen, Instant nextAttemptAt,
                                                     Boolean retryAfterUnderstood) {
        Map<String, Object> values = new HashMap<>();
        values.put("closeEndedAt", Timestamp.from(clock.instant()));
        values.put("closeDuration", seen.durationMs());
        values.put("closeOutcome", outcome);
        values.put("closeHttpStatus", seen.httpStatus());
        values.put("closeRequestId", seen.providerRequestId());
        values.put("closeCategory", seen.category() == null ? null : seen.category().wire());
        values.put("closeMessage", seen.message());
        values.put("closeRetryAfter", seen.retryAfter());
        values.put("closeUnderstood", retryAfterUnderstood);
        values.put("closeNext", nextAttemptAt == null ? null : Timestamp.from(nextAttemptAt));
        values.put("closeExcerpt", seen.excerpt());
        values.put("closeBilled", seen.billedAmount());
        values.put("closeBilledUnit", seen.billedUnit());
        return new JobTransitions.AttemptClose(attempt, token, CLOSE_SET, values);
    }

    // --- Rows as typed records ------------------------------------------------------------------------------------

    /** A START's row: the lease as LEASE returns it (the attempts made before this one) and the attempt it opened. */
    private static Started started(JobTransitions.Moved moved) {
        int attempt = ((Number) moved.row().get("opened_attempt")).intValue();
        return new Started(lease(moved.row(), attempt - 1), attempt);
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
                expires == null ? null : expires.toInstant(), ((Number) r.get("unparseable_streak")).intValue(),
                (String) r.get("pool"), r.get("source_bytes") == null ? 0 : ((Number) r.get("source_bytes")).longValue());
    }
}
