package io.jobgate.worker;

import java.net.InetAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.api.ApiProblem;
import io.jobgate.api.Json;
import io.jobgate.infra.Digests;
import io.jobgate.job.JobFinalizer;
import io.jobgate.output.OutputSubject;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.relay.OutboxRelay;
import io.jobgate.upload.MediaTypes;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

/**
 * Rules of the worker route (routes/worker.camel.yaml), one step per method: may this message start
 * an attempt, re-validate the stored request, take the lease and pass the caps and provider gate (one
 * transaction), call the adapter within its deadline, record the outcome. State travels between steps
 * as exchange properties; every write after the lease is conditional on its token.
 */
public final class Worker {

    private static final Logger LOG = LoggerFactory.getLogger(Worker.class);

    /** Exchange properties of the worker route (not seen by adapters: they get a fresh exchange). */
    public static final String ELIGIBLE = "jobgateWorker_eligible";
    static final String JOB = "jobgateWorker_job";
    static final String EVENT = "jobgateWorker_event";
    static final String VERDICT = "jobgateWorker_verdict";
    static final String LEASE = "jobgateWorker_lease";
    public static final String SUBMITTING = "jobgateWorker_submitting";
    static final String CALL = "jobgateWorker_call";
    static final String ATTEMPT = "jobgateWorker_attempt";
    static final String RESULT = "jobgateWorker_result";
    static final String DURATION = "jobgateWorker_durationMs";

    private final JobLeases leases;
    private final JobFinalizer finalizer;
    private final PresetCatalog presets;
    private final ProviderCatalog providers;
    private final S3Client s3;
    private final String bucket;
    private final OutputStore outputs;
    private final Clock clock;
    private final String workerName;
    private final Duration leaseMargin;
    private final Duration gateFullDelay;
    private final AdapterCaller adapters;
    private final String publicBaseUrl;
    private final Duration firstCheck;
    private final AtomicLong acknowledgedWithoutCall = new AtomicLong();
    private volatile Backoff backoff;
    private volatile FaultPoint faults = step -> { };

    /** Test hook: a crash injected at a named step (the process dies there, leaving its lease). */
    @FunctionalInterface
    public interface FaultPoint {
        void at(String step);
    }

    public Worker(AdapterCaller adapters, String publicBaseUrl, JobLeases leases, JobFinalizer finalizer, PresetCatalog presets,
                  ProviderCatalog providers, S3Client s3, String bucket, OutputStore outputs, Clock clock,
                  Duration leaseMargin, Duration gateFullDelay, Backoff backoff, Duration firstCheck) {
        this.adapters = adapters;
        this.firstCheck = firstCheck;
        this.publicBaseUrl = publicBaseUrl;
        this.leases = leases;
        this.finalizer = finalizer;
        this.presets = presets;
        this.providers = providers;
        this.s3 = s3;
        this.bucket = bucket;
        this.outputs = outputs;
        this.clock = clock;
        this.leaseMargin = leaseMargin;
        this.gateFullDelay = gateFullDelay;
        this.backoff = backoff;
        this.workerName = hostName() + "/" + UUID.randomUUID().toString().substring(0, 8);
    }

    public void useBackoff(Backoff replacement) {
        this.backoff = replacement;
    }

    public void injectFaults(FaultPoint point) {
        this.faults = point;
        outputs.injectFaults(point::at);
    }

    public String name() {
        return workerName;
    }

    /** Dispatch messages acknowledged without a provider call (duplicates, stale events, final jobs). */
    public long acknowledgedWithoutCall() {
        return acknowledgedWithoutCall.get();
    }

    /**
     * Step 1: may this dispatch message start an attempt? Otherwise (a final job — a recorded success
     * is never rendered again —, a live lease elsewhere, a stale event) it is acknowledged without a call.
     */
    public void load(Exchange exchange) {
        UUID jobId = UUID.fromString(exchange.getMessage().getHeader(OutboxRelay.JOB_ID, String.class));
        long eventId = exchange.getMessage().getHeader(OutboxRelay.EVENT_ID, Long.class);
        exchange.setProperty(EVENT, eventId);
        Optional<Lease> job = leases.peek(jobId, eventId);
        exchange.setProperty(ELIGIBLE, job.isPresent());
        if (job.isEmpty()) {
            acknowledgeWithoutCall(jobId, leases.whyNoLease(jobId, eventId));
            return;
        }
        exchange.setProperty(JOB, job.get());
    }

    /**
     * Step 2: the stored request still validates (preset version exists, source upload matches its
     * digest); builds the adapter's envelope. Done before the lease, so that taking the lease, the
     * caps and the provider gate are one transaction.
     */
    public void prepare(Exchange exchange) {
        Lease job = exchange.getProperty(JOB, Lease.class);
        Preset preset;
        Preset.AspectSize size;
        try {
            preset = presets.resolve(job.presetId(), job.presetVersion());
            size = PresetCatalog.aspect(preset, job.aspectClass());
        } catch (ApiProblem problem) {
            verdict(exchange, ErrorCategory.INVALID_REQUEST, "stored request no longer validates: " + problem.getMessage(), false);
            return;
        }
        byte[] source = null;
        if (job.sourceKey() != null) {
            try {
                source = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(job.sourceKey()).build()).asByteArray();
            } catch (NoSuchKeyException e) {
                verdict(exchange, ErrorCategory.INVALID_REQUEST, "source upload " + job.sourceSha256() + " is missing", false);
                return;
            } catch (SdkException e) {
                verdict(exchange, ErrorCategory.TRANSIENT, "object storage unavailable: " + e.getClass().getSimpleName(), true);
                return;
            }
            if (!Digests.sha256Hex(source).equals(job.sourceSha256())) {
                verdict(exchange, ErrorCategory.INVALID_REQUEST, "source upload does not match its digest " + job.sourceSha256(), false);
                return;
            }
        }
        if (providers.find(job.provider()).isEmpty()) {
            verdict(exchange, ErrorCategory.TRANSIENT, "no settings for provider " + job.provider(), true);
            return;
        }
        JsonNode inputs = Json.parseObject(job.inputsJson().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String prompt = preset.template().render(inputs);
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("job_id", job.jobId().toString());
        envelope.put("idempotency_key", AdapterContract.idempotencyKey(job.jobId()));
        envelope.put("preset_id", preset.id());
        envelope.put("preset_version", preset.version());
        envelope.put("kind", preset.kind());
        envelope.put("aspect_class", job.aspectClass());
        envelope.put("width", size == null ? null : size.width());
        envelope.put("height", size == null ? null : size.height());
        envelope.put("output_media_types", preset.outputMediaTypes());
        envelope.put("outputs", preset.outputs());
        envelope.put("prompt", prompt);
        envelope.put("inputs", inputs);
        if (source != null) {
            envelope.put("source", Map.of("sha256", job.sourceSha256(), "media_type", job.sourceMediaType(),
                    "bytes", source.length));
        }
        Map<String, Object> call = new LinkedHashMap<>();
        call.put(AdapterContract.JOB_ID, job.jobId().toString());
        call.put(AdapterContract.IDEMPOTENCY_KEY, AdapterContract.idempotencyKey(job.jobId()));
        call.put(AdapterContract.PRESET_ID, preset.id());
        call.put(AdapterContract.PRESET_VERSION, preset.version());
        call.put(AdapterContract.KIND, preset.kind());
        call.put(AdapterContract.ASPECT_CLASS, job.aspectClass());
        call.put(AdapterContract.WIDTH, size == null ? null : size.width());
        call.put(AdapterContract.HEIGHT, size == null ? null : size.height());
        call.put(AdapterContract.OUTPUT_MEDIA_TYPE, preset.outputMediaTypes().isEmpty() ? null : preset.outputMediaTypes().get(0));
        call.put(AdapterContract.PROMPT, prompt);
        call.put(AdapterContract.PROMPT_JSON, Json.write(prompt));
        call.put(AdapterContract.CORRELATION_ID, job.correlationId());
        if (source != null) {
            call.put(AdapterContract.SOURCE, source);
            call.put(AdapterContract.SOURCE_MEDIA_TYPE, job.sourceMediaType());
            call.put(AdapterContract.SOURCE_FILE_NAME, "source" + MediaTypes.extension(job.sourceMediaType()));
        }
        call.put("envelope", Json.write(envelope));
        exchange.setProperty(CALL, call);
    }

    /** Step 3: lease, caps and provider gate in one transaction (see {@link JobLeases#start}). */
    public void start(Exchange exchange) {
        Lease job = exchange.getProperty(JOB, Lease.class);
        exchange.setProperty(SUBMITTING, false);
        Provider provider = providers.find(job.provider()).orElse(null);
        Duration deadline = provider == null ? Duration.ofMinutes(2) : provider.callDeadline();
        JobLeases.Verdict verdict = exchange.getProperty(VERDICT, JobLeases.Verdict.class);
        JobLeases.GatePass pass = leases.start(job.jobId(), exchange.getProperty(EVENT, Long.class), workerName,
                deadline.plus(leaseMargin), provider, jittered(gateFullDelay), verdict,
                backoff.delay(Math.max(1, job.attempts())));
        if (pass instanceof JobLeases.Submitting submitting) {
            exchange.setProperty(LEASE, submitting.lease());
            exchange.setProperty(ATTEMPT, submitting.attempt());
            exchange.setProperty(SUBMITTING, true);
            faults.at("submitting");
        } else if (pass instanceof JobLeases.NotLeased lost) {
            acknowledgeWithoutCall(job.jobId(), lost.reason());
        } else {
            LOG.info("job {} not submitted: {}", job.jobId(), pass);
        }
    }

    private void verdict(Exchange exchange, ErrorCategory category, String message, boolean retry) {
        exchange.setProperty(VERDICT, new JobLeases.Verdict(category, message, retry));
    }

    private void acknowledgeWithoutCall(UUID jobId, String why) {
        LOG.info("dispatch of job {} acknowledged without a call: {}", jobId, why);
        acknowledgedWithoutCall.incrementAndGet();
    }

    /** Step 4: the adapter route, on a fresh exchange, within the provider's call deadline. */
    @SuppressWarnings("unchecked")
    public void callAdapter(Exchange exchange) {
        Lease lease = exchange.getProperty(LEASE, Lease.class);
        Provider provider = providers.find(lease.provider()).orElseThrow();
        Map<String, Object> call = new LinkedHashMap<>(exchange.getProperty(CALL, Map.class));
        Object envelope = call.remove("envelope");
        call.put(AdapterContract.ATTEMPT, exchange.getProperty(ATTEMPT, Integer.class));
        call.put(AdapterContract.WEBHOOK_URL, webhookUrl(provider));
        long started = System.nanoTime();
        AdapterResult result = adapters.call(provider, AdapterContract.SUBMIT, envelope, call);
        if (result.absent()) {
            result = result.failedAs(ErrorCategory.UNPARSEABLE_RESPONSE, "adapter answered 'absent' to a submit");
        }
        exchange.setProperty(RESULT, result);
        exchange.setProperty(DURATION, (System.nanoTime() - started) / 1_000_000);
        faults.at("called");
    }

    private String webhookUrl(Provider provider) {
        return publicBaseUrl + "/v1/providers/" + provider.name() + "/webhook";
    }

    /** Step 5: the outcome, recorded under the lease; one log line per attempt. */
    public void record(Exchange exchange) {
        Lease lease = exchange.getProperty(LEASE, Lease.class);
        Provider provider = providers.find(lease.provider()).orElseThrow();
        AdapterResult result = exchange.getProperty(RESULT, AdapterResult.class);
        int attempt = exchange.getProperty(ATTEMPT, Integer.class);
        long durationMs = exchange.getProperty(DURATION, Long.class);
        String outcome;
        String next;
        Instant nextAt = null;
        Boolean retryAfterUnderstood = null;
        if (result.succeeded()) {
            try {
                OutputSubject subject = new OutputSubject(lease.jobId(), lease.tenantId(), attempt, lease.presetId(),
                        lease.presetVersion(), lease.aspectClass(), lease.inputsJson(), lease.sourceSha256(), provider.name(),
                        provider.revision());
                String record = outputs.store(subject, result, provider.callDeadline(),
                        () -> leases.holds(lease.jobId(), lease.token()));
                boolean mine = finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.succeeded(record));
                outcome = mine ? "succeeded" : "lease_lost";
                next = mine ? "succeeded" : "none";
            } catch (OutputStore.Superseded e) {
                outcome = "lease_lost";
                next = "none";
            } catch (OutputStore.OutputUnavailable e) {
                result = result.failedAs(e.category(), e.getMessage());
                Decision d = decide(lease, result, attempt, provider);
                outcome = d.outcome;
                next = d.next;
                nextAt = d.at;
                retryAfterUnderstood = d.retryAfterUnderstood;
            }
        } else if (result.pending()) {
            boolean mine = leases.markPending(lease.jobId(), lease.token(), result.providerTask(), result.providerRequestId(),
                    clock.instant().plus(firstCheck));
            outcome = mine ? "pending" : "lease_lost";
            next = mine ? "provider_pending" : "none";
        } else {
            Decision d = decide(lease, result, attempt, provider);
            outcome = d.outcome;
            next = d.next;
            nextAt = d.at;
            retryAfterUnderstood = d.retryAfterUnderstood;
        }
        leases.closeAttempt(lease.jobId(), attempt, lease.token(), outcome, result, durationMs, nextAt, retryAfterUnderstood);
        AttemptLog.write(new AttemptLog.Line(lease.jobId().toString(), lease.correlationId(), lease.presetId(),
                lease.presetVersion(), lease.aspectClass(), provider.name(), provider.revision(), attempt, durationMs,
                result.httpStatus(), outcome, result.category() == null ? null : result.category().wire(), next));
    }

    private record Decision(String outcome, String next, Instant at, Boolean retryAfterUnderstood) {
        Decision(String outcome, String next, Instant at) {
            this(outcome, next, at, null);
        }

        Decision with(Boolean understood) {
            return new Decision(outcome, next, at, understood);
        }
    }

    /** Fail now, park as unknown, or wait for a retry (within the attempt and lifetime caps). */
    private Decision decide(Lease lease, AdapterResult result, int attempt, Provider provider) {
        ErrorCategory category = result.category();
        switch (category.handling()) {
            case FAIL -> {
                return ended(lease, category, result.message());
            }
            case UNKNOWN -> {
                boolean mine = leases.parkUnknown(lease.jobId(), lease.token(), result.providerRequestId(), clock.instant().plus(firstCheck));
                return new Decision(mine ? "submission_unknown" : "lease_lost", mine ? "submission_unknown" : "none", null);
            }
            default -> {
                int streak = 0;
                if (category == ErrorCategory.UNPARSEABLE_RESPONSE) {
                    AttemptLog.unparseable(lease.jobId().toString(), result.excerpt());
                    streak = lease.unparseableStreak() + 1;
                    if (streak >= 2) {
                        return ended(lease, category, "two unparseable replies in a row; last: " + result.message());
                    }
                }
                Instant now = clock.instant();
                Instant at = now.plus(backoff.delay(attempt));
                Boolean understood = null;
                if (category == ErrorCategory.RATE_LIMITED) {
                    RateLimitWait wait = RateLimitWait.after(result.retryAfter(), now, backoff.delay(attempt),
                            provider.rateLimitBackoff());
                    at = wait.until(); // the provider's word is the minimum delay
                    understood = wait.headerUnderstood();
                    leases.closeGate(provider.name(), at, "HTTP 429 for job " + lease.jobId());
                }
                if (Boolean.FALSE.equals(understood)) {
                    LOG.warn("job {} attempt {}: provider {} sent a Retry-After that cannot be read; waiting its rate-limit backoff of {} s",
                            lease.jobId(), attempt, provider.name(), provider.rateLimitBackoff().toSeconds());
                }
                if (attempt >= lease.maxAttempts()) {
                    return ended(lease, ErrorCategory.EXHAUSTED, attempt + " of " + lease.maxAttempts()
                            + " attempts used; last: " + category.wire() + " (" + result.message() + ")").with(understood);
                }
                if (at.isAfter(lease.expiresAt())) {
                    return ended(lease, ErrorCategory.EXPIRED, "next attempt at " + at + " would pass the job's lifetime ("
                            + lease.expiresAt() + "); last: " + category.wire()).with(understood);
                }
                boolean mine = leases.requeue(lease.jobId(), lease.token(), at, streak, category.wire());
                return new Decision(mine ? "retry_wait" : "lease_lost", mine ? "retry_wait" : "none", mine ? at : null, understood);
            }
        }
    }

    private Decision ended(Lease lease, ErrorCategory category, String message) {
        boolean mine = finalizer.finalizeJob(lease.jobId(), lease.token(), JobFinalizer.Outcome.failed(category.wire(), message));
        return new Decision(mine ? "failed" : "lease_lost", mine ? "failed:" + category.wire() : "none", null);
    }

    private Duration jittered(Duration delay) {
        long half = delay.toMillis() / 2;
        return Duration.ofMillis(half + java.util.concurrent.ThreadLocalRandom.current().nextLong(half + 1));
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            return "worker";
        }
    }

}
