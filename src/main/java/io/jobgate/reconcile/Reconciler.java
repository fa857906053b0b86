package io.jobgate.reconcile;

import io.jobgate.canary.Canaries;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import io.jobgate.job.JobConditions;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobRows;
import io.jobgate.job.JobSchedules;
import io.jobgate.job.WaitingJob;
import io.jobgate.job.JobTransitions;
import io.jobgate.output.OutputSubject;
import io.jobgate.job.JobStatus;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.adapter.AdapterCaller;
import io.jobgate.adapter.AdapterContract;
import io.jobgate.adapter.AdapterResult;
import io.jobgate.job.AttemptCaps;
import io.jobgate.adapter.Backoff;
import io.jobgate.job.ErrorCategory;
import io.jobgate.output.OutputStore;
import io.jobgate.output.StoreResult;
import org.apache.camel.Body;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangeProperty;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Applies what a provider says about a task to the job waiting on it, whoever brought the news:
 * the poller (routes/reconciler.camel.yaml), a webhook, or an operator's repair. The local record
 * is the source of truth; the provider's answer is evidence applied to it, only while the job
 * still waits on the provider, and every end goes through the one finalize.
 */
public final class Reconciler {

    private static final Logger LOG = LoggerFactory.getLogger(Reconciler.class);
    static final Set<JobStatus> WAITING = JobStatus.AT_PROVIDER;

    private final JdbcTemplate jdbc;
    /** The jobs table's queries this uses (built on {@code jdbc}): the check schedule, the rows, one question. */
    private final JobSchedules schedules;
    private final JobRows rows;
    private final JobConditions conditions;
    private final JobTransitions transitions;
    private final JobFinalizer finalizer;
    private final ProviderCatalog providers;
    private final PresetCatalog presets;
    private final AdapterCaller adapters;
    private final OutputStore outputs;
    private final io.jobgate.job.ProviderGates gates;
    private final Clock clock;
    private final Backoff checkBackoff;
    private final Backoff retryBackoff;
    private final int batch;
    /** Jobs whose attempt ran on a canary candidate are asked about through its route, and their outputs held. */
    private final Canaries canaries;
    /** Names this poller on its claims (host and a per-start suffix). */
    private final String owner = io.jobgate.infra.InstanceLiveness.ownerName("reconciler-");
    /** Beyond the lookup's deadline: the answer's own write. */
    static final Duration CLAIM_MARGIN = Duration.ofSeconds(10);
    /** A provider whose settings are gone is asked again after this (its check only says so). */
    static final Duration UNKNOWN_PROVIDER_CLAIM = Duration.ofSeconds(60);

    public Reconciler(JdbcTemplate jdbc, JobTransitions transitions, JobFinalizer finalizer, ProviderCatalog providers,
                      PresetCatalog presets, AdapterCaller adapters, OutputStore outputs, io.jobgate.job.ProviderGates gates,
                      ReconcileSettings settings, Backoff retryBackoff, Canaries canaries) {
        this.jdbc = jdbc;
        this.canaries = canaries;
        this.schedules = new JobSchedules(jdbc);
        this.rows = new JobRows(jdbc);
        this.conditions = new JobConditions(jdbc);
        this.transitions = transitions;
        this.finalizer = finalizer;
        this.providers = providers;
        this.presets = presets;
        this.adapters = adapters;
        this.outputs = outputs;
        this.gates = gates;
        this.clock = transitions.clock();
        this.checkBackoff = settings.checks();
        this.retryBackoff = retryBackoff;
        this.batch = settings.batch();
    }

    /** The name this poller's claims carry. */
    public String owner() {
        return owner;
    }

    /** What applying evidence did. */
    public record Applied(boolean changed, String detail) {
    }

    /** The source the poller's evidence is logged with. */
    static final String POLLER = "poller";

    /**
     * Route step {@code claim-due}: claims the due checks, so no two pollers ask at once. A claim is a
     * short lease, not a postponement: it names this poller and lasts the lookup's own deadline (the
     * provider's call deadline) plus a margin, so the claims of a poller that died between claim and
     * answer are taken over within seconds.
     */
    public List<WaitingJob> claimDue() {
        Map<String, Duration> claims = new LinkedHashMap<>();
        for (Provider p : providers.all()) {
            claims.put(p.name(), p.callDeadline().plus(CLAIM_MARGIN));
        }
        return schedules.claimDueChecks(clock.instant(), claims, UNKNOWN_PROVIDER_CLAIM, owner, batch);
    }

    /**
     * After a start: every job waiting on a provider whose next check lies ahead is made due now
     * (a claim of a live poller elsewhere is left alone), so evidence missed while down arrives in
     * seconds; the poller's batches pace the asking.
     *
     * @return how many jobs were made due
     */
    public int catchUp() {
        int due = schedules.checksDueNow(clock.instant());
        if (due > 0) {
            LOG.info("catch-up on start: {} jobs waiting on providers are asked now", due);
        }
        return due;
    }

    public Optional<WaitingJob> find(UUID jobId) {
        return rows.waiting(jobId);
    }

    public Optional<WaitingJob> findByTask(String provider, String task) {
        return rows.waitingByTask(provider, task);
    }

    /** Asks the provider about one waiting job and applies the answer (an operator's repair, a webhook's "fetch"). */
    public Applied check(WaitingJob job, String source) {
        return apply(askProvider(job), source);
    }

    /**
     * Route step {@code ask-provider}: the adapter's lookup of one waiting job (by its task reference,
     * else by our idempotency key), unless there is none to make or the provider's gate is closed.
     */
    public Lookup askProvider(WaitingJob job) {
        Provider provider = providers.find(job.provider()).orElse(null);
        if (provider == null) {
            return Lookup.noSettings(job);
        }
        if (!provider.supports(AdapterContract.LOOKUP)) {
            return Lookup.noLookup(job, provider);
        }
        Optional<Instant> closed = gates.closedUntil(provider.name());
        if (closed.isEmpty() && candidate(job)) {
            closed = canaries.candidateClosedUntil(job.adapterRevision()); // the candidate's own 429
        }
        if (closed.isPresent()) {
            // A lookup is a request like a submit: a provider that said 429 is left alone until it said.
            return Lookup.gateClosed(job, provider, closed.get());
        }
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put(AdapterContract.JOB_ID, job.jobId().toString());
        // The attempt whose task is asked about: an adapter that named the task after it (job id + attempt) finds it
        // by that name when the submit's reply was lost.
        properties.put(AdapterContract.ATTEMPT, job.attempts());
        // A canary candidate's attempt is asked about through its own route, by its own key (docs/canary.md).
        boolean candidate = candidate(job);
        properties.put(AdapterContract.IDEMPOTENCY_KEY, candidate
                ? Canaries.candidateKey(AdapterContract.idempotencyKey(job.jobId()), job.attempts())
                : AdapterContract.idempotencyKey(job.jobId()));
        properties.put(AdapterContract.PROVIDER_TASK, job.providerTask());
        properties.put(AdapterContract.PROVIDER_STATE, job.providerState());
        properties.put(AdapterContract.PROVIDER_REQUEST_ID, job.providerRequestId());
        // What a per-second provider bills, as its submit was told: its lookup may be all that reaches the answer.
        properties.put(AdapterContract.SOURCE_SECONDS, job.sourceMillis() == null ? null
                : java.math.BigDecimal.valueOf(job.sourceMillis(), 3).stripTrailingZeros().toPlainString());
        properties.put(AdapterContract.KIND, job.kind());
        properties.put(AdapterContract.OUTPUT_MEDIA_TYPE, expectedMediaType(job));
        AdapterResult answer = adapters.call(provider, canaries.adapterUri(provider, job.adapterRevision()), AdapterContract.LOOKUP, null, properties);
        return Lookup.answered(job, provider, answer);
    }

    /** Route step {@code apply-evidence}: what the poller's lookup came to, applied to its job. */
    public Applied applyEvidence(Lookup lookup) {
        return apply(lookup, POLLER);
    }

    /** Route step {@code log-check-failure}: one job's failed check is logged, and the poll goes on with the others. */
    public void checkFailed(@Body Object item, @ExchangeProperty(Exchange.EXCEPTION_CAUGHT) Throwable failure) {
        UUID jobId = item instanceof Lookup lookup ? lookup.job().jobId() : ((WaitingJob) item).jobId();
        LOG.warn("check of job {} failed: {}", jobId, failure.toString());
    }

    /** Applies what a lookup came to: the adapter's answer, or the reason the provider was not asked. */
    public Applied apply(Lookup lookup, String source) {
        WaitingJob job = lookup.job();
        Provider provider = lookup.provider();
        return switch (lookup.reply()) {
            case NO_SETTINGS -> schedule(job, "no settings for provider " + job.provider());
            case NO_LOOKUP -> job.status() == JobStatus.SUBMISSION_UNKNOWN && provider.idempotentSubmit()
                    ? resubmit(job, "provider deduplicates by our idempotency key: a resubmit is safe")
                    : schedule(job, "adapter " + provider.name() + " has no lookup; waiting for a webhook or the lifetime");
            case GATE_CLOSED -> scheduleAt(job, lookup.gateOpenAt(),
                    "provider " + provider.name() + " gate closed until " + lookup.gateOpenAt());
            case ANSWERED -> lookup.answer().category() == ErrorCategory.RATE_LIMITED && !lookup.answer().declared()
                    ? rateLimited(job, provider, lookup.answer())
                    : apply(job, lookup.answer(), source);
        };
    }

    /**
     * A 429 to a lookup closes the provider's gate like one to a submit (its {@code Retry-After},
     * else the check back-off, else the provider's rate-limit back-off for an unreadable header),
     * and the job is asked again at the reopening.
     */
    private Applied rateLimited(WaitingJob job, Provider provider, AdapterResult answer) {
        Instant now = clock.instant();
        io.jobgate.adapter.RateLimitWait wait = io.jobgate.adapter.RateLimitWait.after(answer.retryAfter(), now,
                checkBackoff.ceiling(Math.max(1, job.checks())), provider.rateLimitBackoff());
        if (candidate(job)) {
            // A canary candidate's 429 closes the candidate only: the stable revision's jobs go on.
            canaries.closeCandidate(job.adapterRevision(), wait.until(), "HTTP 429 to a lookup of job " + job.jobId());
            return scheduleAt(job, wait.until(), "canary candidate rate limited: asked again at " + wait.until());
        }
        gates.close(provider.name(), wait.until(), "HTTP 429 to a lookup of job " + job.jobId());
        LOG.info("reconcile job={} provider {} answered a lookup with 429 (Retry-After {}): gate closed until {}", job.jobId(),
                provider.name(), answer.retryAfter(), wait.until());
        return scheduleAt(job, wait.until(), "rate limited: asked again at " + wait.until());
    }

    /** Applies evidence about the job's provider task; only an answer the adapter declared moves the job. */
    public Applied apply(WaitingJob job, AdapterResult evidence, String source) {
        if (!WAITING.contains(job.status())) {
            return new Applied(false, "job is " + job.status().wire() + ", not waiting on the provider");
        }
        if (evidence.billedAmount() != null) {
            // Billing reported with the task's end belongs to the attempt that submitted it, even
            // when the job has moved on to another since.
            jdbc.update("UPDATE attempts SET billed_units = ?, billed_unit = ? WHERE job_id = ? AND attempt = ?",
                    evidence.billedAmount(), evidence.billedUnit(), job.jobId(), Math.max(1, job.attempts()));
        }
        if (evidence.fetch()) {
            // The task is done but its news came without the result: asked for it now, not at the poller's next
            // round. A lookup answering "fetch" itself (it should not) is not asked again.
            if (source.endsWith(FETCHED)) {
                return schedule(job, "the lookup answered 'fetch' too");
            }
            LOG.info("reconcile job={} source={} evidence=fetch: the result is asked for now ({})", job.jobId(), source,
                    evidence.message());
            return check(job, source + FETCHED);
        }
        Applied applied;
        boolean candidate = candidate(job);
        if (evidence.succeeded()) {
            applied = succeed(job, evidence);
        } else if (candidate && (evidence.absent() || (evidence.declared() && evidence.category() != null
                && evidence.category().handling() != ErrorCategory.Handling.UNKNOWN))) {
            // A canary candidate's task failed or was lost: the candidate's failure, never the job's.
            applied = candidateFailed(job, evidence.absent() ? null : evidence.category(),
                    evidence.absent() ? "provider has no such request" : evidence.message());
        } else if (evidence.pending()) {
            applied = stillPending(job, evidence);
        } else if (evidence.absent()) {
            applied = resubmit(job, "provider has no such request");
        } else if (evidence.declared() && evidence.category().handling() == ErrorCategory.Handling.FAIL) {
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job),
                    JobFinalizer.Outcome.failed(evidence.category().wire(), evidence.message()));
            applied = new Applied(won, won ? "failed: " + evidence.category().wire() : "already moved on");
        } else if (evidence.declared() && evidence.category().handling() == ErrorCategory.Handling.RETRY) {
            applied = resubmit(job, "provider task failed (" + evidence.category().wire() + ")");
        } else {
            applied = schedule(job, "no answer yet: " + (evidence.category() == null ? "?" : evidence.category().wire()));
        }
        LOG.info("reconcile job={} source={} status={} evidence={} changed={} detail={}", job.jobId(), source, job.status().wire(),
                evidence.outcome() != null ? evidence.outcome() : evidence.category() == null ? null : evidence.category().wire(),
                applied.changed(), applied.detail());
        return applied;
    }

    private Applied succeed(WaitingJob job, AdapterResult evidence) {
        Provider provider = providers.find(job.provider()).orElseThrow();
        boolean hold = !canaries.approved(job.adapterRevision());
        OutputSubject subject = OutputSubject.of(job.jobId(), job.tenantId(), Math.max(1, job.attempts()), job.presetId(),
                job.presetVersion(), job.kind(), job.aspectClass(), job.inputsJson(), job.sourceSha256(), provider,
                job.adapterRevision() != null ? job.adapterRevision() : provider.revision(job.kind()));
        StoreResult stored = outputs.store(subject, evidence, provider.callDeadline(), () -> stillWaiting(job), hold);
        if (stored instanceof StoreResult.Held held) {
            return candidateOutput(job, held.record());
        }
        if (stored instanceof StoreResult.Superseded) {
            return new Applied(false, "already moved on");
        }
        if (stored instanceof StoreResult.Refused refused) {
            if (hold && refused.category().handling() == ErrorCategory.Handling.FAIL) {
                return candidateFailed(job, refused.category(), refused.message()); // a candidate's refused output: its own
            }
            if (refused.category().handling() == ErrorCategory.Handling.FAIL) {
                boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job),
                        JobFinalizer.Outcome.failed(refused.category().wire(), refused.message()));
                return new Applied(won, "output refused: " + refused.message());
            }
            return schedule(job, "output not retrievable yet: " + refused.message());
        }
        String record = ((StoreResult.Promoted) stored).record();
        boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job), JobFinalizer.Outcome.succeeded(record));
        return new Applied(won, won ? "succeeded" : "already moved on");
    }

    /**
     * A canary candidate's task succeeded: its checked output stays in quarantine (recorded on its attempt)
     * and the job is due now for an attempt on the stable revision, within its caps.
     */
    private Applied candidateOutput(WaitingJob job, String heldRecord) {
        Instant now = clock.instant();
        Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(job.attempts(), job.maxAttempts(), job.expiresAt(), now,
                "a canary candidate's output is not the job's");
        if (capped.isPresent()) {
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job), JobFinalizer.Outcome.failed(
                    capped.get().category().wire(), capped.get().message()));
            return new Applied(won, capped.get().category().wire() + ": candidate output held");
        }
        // Only while the job is still on the candidate's attempt: evidence read before it moved on changes nothing.
        boolean moved = canaries.requeueHeld(job.jobId(), job.attempts(), job.status(), heldRecord);
        return new Applied(moved, moved ? "candidate output held in quarantine; retry_wait for the stable revision"
                : "candidate output held in quarantine; the job had moved on");
    }

    /**
     * A canary candidate's task failed (its declared failure, any category; its output refused; the provider
     * lost it): recorded on its attempt for its gates, and the job is due now for an attempt on the stable
     * revision, within its lifetime. Only stable attempts fail jobs.
     */
    private Applied candidateFailed(WaitingJob job, ErrorCategory category, String message) {
        Instant now = clock.instant();
        Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(job.attempts(), job.maxAttempts(), job.expiresAt(), now,
                "a canary candidate's task failed");
        if (capped.isPresent()) {
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job), JobFinalizer.Outcome.failed(
                    capped.get().category().wire(), capped.get().message()));
            return new Applied(won, capped.get().category().wire() + ": candidate task failed");
        }
        boolean moved = canaries.requeueFailed(job.jobId(), job.attempts(), job.status(),
                category == null ? null : category.wire(), message);
        return new Applied(moved, moved ? "candidate task failed (" + (category == null ? "lost" : category.wire())
                + "); retry_wait for the stable revision" : "candidate task failed; the job had moved on");
    }

    /** Is the job waiting on a canary candidate's task (its outputs held, its failures its own)? */
    private boolean candidate(WaitingJob job) {
        return canaries.isCandidate(job.adapterRevision());
    }

    /** Marks the source of evidence asked for because a webhook said "fetch". */
    static final String FETCHED = "-fetch";


    private boolean stillWaiting(WaitingJob job) {
        return conditions.atProviderOn(job.jobId(), job.attempts());
    }

    /**
     * Evidence is about the task of the attempt the job was on when it was read (claimed, or found by
     * a webhook's task): once the job moved on to another attempt, it changes nothing but that
     * attempt's billing. A failure of the old task must not fail, nor a "not found" resubmit, a job
     * whose next attempt is at the provider.
     */
    private static JobTransitions.Guard onItsAttempt(WaitingJob job) {
        return JobTransitions.Guard.onAttempt(job.attempts(), WAITING);
    }

    private Applied stillPending(WaitingJob job, AdapterResult evidence) {
        if (job.status() == JobStatus.SUBMISSION_UNKNOWN) {
            boolean moved = transitions.apply(job.jobId(), JobTransitions.Event.TASK_FOUND, onItsAttempt(job),
                    JobTransitions.Change.checkFrom(nextCheck(0), evidence.providerTask(), null, null, evidence.providerState())).isPresent();
            return new Applied(moved, "provider has the task: provider_pending");
        }
        return schedule(job, "provider still working");
    }

    /** The provider never got it or its task failed: a new attempt is safe (within the caps). */
    private Applied resubmit(WaitingJob job, String why) {
        Instant at = clock.instant().plus(retryBackoff.delay(Math.max(1, job.attempts())));
        Optional<AttemptCaps.Ending> capped = AttemptCaps.nextAttempt(job.attempts(), job.maxAttempts(), job.expiresAt(), at, why);
        if (capped.isPresent()) {
            boolean won = finalizer.finalizeJobIf(job.jobId(), onItsAttempt(job), JobFinalizer.Outcome.failed(
                    capped.get().category().wire(), capped.get().message()));
            return new Applied(won, capped.get().category().wire() + ": " + why);
        }
        boolean moved = transitions.apply(job.jobId(), JobTransitions.Event.RESUBMIT,
                JobTransitions.Guard.onAttempt(job.attempts(), Set.of(job.status())),
                JobTransitions.Change.retryAt(at, 0, ErrorCategory.AMBIGUOUS.wire())).isPresent();
        return new Applied(moved, "retry_wait: " + why);
    }

    private Applied schedule(WaitingJob job, String why) {
        return scheduleAt(job, nextCheck(job.checks()), why);
    }

    private Applied scheduleAt(WaitingJob job, Instant at, String why) {
        schedules.checkAt(job, at);
        return new Applied(false, why);
    }

    private Instant nextCheck(int checks) {
        return clock.instant().plus(checkBackoff.ceiling(Math.max(1, checks)));
    }

    private String expectedMediaType(WaitingJob job) {
        try {
            Preset preset = presets.resolve(job.presetId(), job.presetVersion());
            return preset.outputMediaTypes().isEmpty() ? null : preset.outputMediaTypes().get(0);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The first check of a job that just started waiting on its provider. */
    public Duration firstCheck() {
        return checkBackoff.ceiling(1);
    }
}
