package io.jobgate.reconcile;

import io.jobgate.canary.Canaries;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import io.jobgate.job.CandidateAttempts;
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
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.fate.WaitingJobFates;
import io.jobgate.job.RevisionRole;
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

    /** The jobs table's queries this uses: the check schedule, the rows, one question. */
    private final JobSchedules schedules;
    private final JobRows rows;
    private final JobConditions conditions;
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
    /** Writes the rulebook's decisions about waiting jobs. */
    private final WaitingJobFates fates;
    /** Names this poller on its claims (host and a per-start suffix). */
    private final String owner = io.jobgate.infra.InstanceLiveness.ownerName("reconciler-");
    /** Beyond the lookup's deadline: the answer's own write. */
    static final Duration CLAIM_MARGIN = Duration.ofSeconds(10);
    /** A provider whose settings are gone is asked again after this (its check only says so). */
    static final Duration UNKNOWN_PROVIDER_CLAIM = Duration.ofSeconds(60);

    public Reconciler(JdbcTemplate jdbc, JobTransitions transitions, JobFinalizer finalizer, ProviderCatalog providers,
                      PresetCatalog presets, AdapterCaller adapters, OutputStore outputs, io.jobgate.job.ProviderGates gates,
                      ReconcileSettings settings, Backoff retryBackoff, Canaries canaries, CandidateAttempts candidateAttempts) {
        this.schedules = new JobSchedules(jdbc);
        this.fates = new WaitingJobFates(transitions, finalizer, schedules, candidateAttempts, gates, canaries::closeCandidate);
        this.canaries = canaries;
        this.rows = new JobRows(jdbc);
        this.conditions = new JobConditions(jdbc);
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
        // A canary candidate's attempt is asked about through its own route, behind its own gate too (docs/canary.md).
        Canaries.LookupRoute route = canaries.lookupRoute(provider, job.adapterRevision(), job.role());
        Optional<Instant> closed = gates.closedUntil(provider.name()).or(route::closedUntil);
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
        boolean candidate = (job.role() == RevisionRole.CANDIDATE);
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
        AdapterResult answer = adapters.call(provider, route.adapterUri(), AdapterContract.LOOKUP, null, properties);
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
            case NO_SETTINGS -> decided(job, new Evidence.NoAnswer("no settings for provider " + job.provider()));
            case NO_LOOKUP -> decided(job, job.status() == JobStatus.SUBMISSION_UNKNOWN && provider.idempotentSubmit()
                    ? new Evidence.NotAtProvider("provider deduplicates by our idempotency key: a resubmit is safe")
                    : new Evidence.NoAnswer("adapter " + provider.name() + " has no lookup; waiting for a webhook or the lifetime"));
            case GATE_CLOSED -> decided(job, new Evidence.NoAnswer("provider " + provider.name() + " gate closed until "
                    + lookup.gateOpenAt(), lookup.gateOpenAt()));
            case ANSWERED -> lookup.answer().category() == ErrorCategory.RATE_LIMITED && !lookup.answer().declared()
                    ? rateLimited(job, lookup.answer())
                    : apply(job, lookup.answer(), source);
        };
    }

    /**
     * A 429 to a lookup the adapter did not declare to be about the task: the rulebook closes the provider's gate (a
     * candidate's own) like one to a submit, and the job is asked again at the reopening.
     */
    private Applied rateLimited(WaitingJob job, AdapterResult answer) {
        Applied applied = decided(job, new Evidence.LookupRateLimited(answer.retryAfter()));
        LOG.info("reconcile job={} provider {} answered a lookup with 429 (Retry-After {}): {}", job.jobId(), job.provider(),
                answer.retryAfter(), applied.detail());
        return applied;
    }

    /** Applies evidence about the job's provider task; only an answer the adapter declared moves the job. */
    public Applied apply(WaitingJob job, AdapterResult evidence, String source) {
        if (!WAITING.contains(job.status())) {
            return new Applied(false, "job is " + job.status().wire() + ", not waiting on the provider");
        }
        if (evidence.billedAmount() != null) {
            // Billing reported with the task's end belongs to the attempt that submitted it, even
            // when the job has moved on to another since.
            rows.recordBilling(job.jobId(), Math.max(1, job.attempts()), evidence.billedAmount(), evidence.billedUnit());
        }
        if (evidence.fetch() && !source.endsWith(FETCHED)) {
            // The task is done but its news came without the result: asked for it now, not at the poller's next
            // round. A lookup answering "fetch" itself (it should not) is not asked again.
            LOG.info("reconcile job={} source={} evidence=fetch: the result is asked for now ({})", job.jobId(), source,
                    evidence.message());
            return check(job, source + FETCHED);
        }
        Evidence seen;
        if (evidence.fetch()) {
            seen = new Evidence.NoAnswer("the lookup answered 'fetch' too");
        } else if (evidence.succeeded()) {
            seen = stored(job, evidence);
        } else if (evidence.pending()) {
            seen = new Evidence.TaskRunning(evidence.providerTask(), evidence.providerState(),
                    job.status() == JobStatus.SUBMISSION_UNKNOWN);
        } else if (evidence.absent()) {
            seen = new Evidence.NotAtProvider("provider has no such request");
        } else if (evidence.declared() && evidence.category() != null
                && evidence.category().handling() != ErrorCategory.Handling.UNKNOWN) {
            // The provider's own word on its task: decided as the worker decides the same answer to a submit.
            seen = new Evidence.Failure(evidence.category(), evidence.message(), evidence.retryAfter());
        } else {
            seen = new Evidence.NoAnswer("no answer yet: " + (evidence.category() == null ? "?" : evidence.category().wire()));
        }
        Applied applied = seen == null ? new Applied(false, "already moved on") : decided(job, seen);
        LOG.info("reconcile job={} source={} status={} evidence={} changed={} detail={}", job.jobId(), source, job.status().wire(),
                evidence.outcome() != null ? evidence.outcome() : evidence.category() == null ? null : evidence.category().wire(),
                applied.changed(), applied.detail());
        return applied;
    }

    /**
     * A success's output, quarantined and checked (held, for a canary candidate's attempt): what it came to as
     * evidence, or null when the job had moved on meanwhile.
     */
    private Evidence stored(WaitingJob job, AdapterResult evidence) {
        Provider provider = providers.find(job.provider()).orElseThrow();
        OutputSubject subject = OutputSubject.of(job.jobId(), job.tenantId(), Math.max(1, job.attempts()), job.presetId(),
                job.presetVersion(), job.kind(), job.aspectClass(), job.inputsJson(), job.sourceSha256(), provider,
                job.adapterRevision() != null ? job.adapterRevision() : provider.revision(job.kind()));
        StoreResult stored = outputs.store(subject, evidence, provider.callDeadline(),
                () -> conditions.atProviderOn(job.jobId(), job.attempts()), job.role() == RevisionRole.CANDIDATE);
        if (stored instanceof StoreResult.Held held) {
            return new Evidence.HeldOutput(held.record());
        }
        if (stored instanceof StoreResult.Superseded) {
            return null;
        }
        if (stored instanceof StoreResult.Refused refused) {
            // A candidate's refused output is its own failure, a stable one's fails the job.
            return refused.category().handling() == ErrorCategory.Handling.FAIL
                    ? new Evidence.Failure(refused.category(), refused.message(), null)
                    : new Evidence.NoAnswer("output not retrievable yet: " + refused.message());
        }
        return new Evidence.Output(((StoreResult.Promoted) stored).record());
    }

    /** The rulebook's decision on evidence about the job's current attempt, and its writing. */
    private Applied decided(WaitingJob job, Evidence evidence) {
        Duration rateLimitBackoff = providers.find(job.provider()).map(Provider::rateLimitBackoff).orElse(Duration.ZERO);
        Fate fate = Outcomes.decide(evidence, job.role(),
                new Standing(job.attempts(), job.maxAttempts(), job.expiresAt(), job.unparseableStreak()),
                new Waits(retryBackoff.delay(Math.max(1, job.attempts())), rateLimitBackoff,
                        checkBackoff.ceiling(Math.max(1, job.checks())), firstCheck()), clock.instant());
        WaitingJobFates.Applied applied = fates.apply(job, evidence, fate);
        return new Applied(applied.changed(), applied.detail());
    }

    /** Marks the source of evidence asked for because a webhook said "fetch". */
    static final String FETCHED = "-fetch";

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
