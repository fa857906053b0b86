package io.jobgate.worker;

import io.jobgate.adapter.AdapterAnswer;
import io.jobgate.adapter.AdapterContract;
import io.jobgate.adapter.AdapterResult;
import io.jobgate.adapter.Backoff;
import io.jobgate.canary.Canaries;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;
import io.jobgate.output.OutputStore;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.common.Digests;
import io.jobgate.output.OutputSubject;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;
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
 * transaction), the adapter's request, classify its answer. The route calls the adapter and stores
 * the output itself; {@link OutcomeRecorder} records the outcome. State travels between steps as one
 * typed record per step; every write after the lease is conditional on its token.
 */
public final class Worker {

    private static final Logger LOG = LoggerFactory.getLogger(Worker.class);

    /**
     * The route's typed state, one record per step, each under its own exchange property (the
     * route's filters test them): a dispatch that may start ({@link Loaded}), its re-validated
     * request ({@link Prepared}), the started attempt ({@link Started}), what the adapter answered
     * ({@link Called}). Adapters never see them as anything but opaque properties.
     */
    public static final String LOADED = "jobgateLoaded";
    public static final String PREPARED = "jobgatePrepared";
    public static final String STARTED = "jobgateStarted";
    public static final String CALLED = "jobgateCalled";
    /** The started attempt's provider name. */
    public static final String PROVIDER = "jobgateProvider";
    /** The started attempt's adapter route ({@code direct:provider-<name>}, or its canary candidate's), for the route's enrich. */
    public static final String ADAPTER_URI = "jobgateAdapterUri";

    /** A dispatch message that may start an attempt of {@code job}. */
    public record Loaded(Lease job, long eventId) {
    }

    /** The re-validated request: the adapter's envelope and call properties, or a verdict against it. */
    public record Prepared(Lease job, long eventId, AttemptStarts.Verdict verdict, String envelope, Map<String, Object> call) {
    }

    /**
     * The attempt started under {@code lease}: the adapter is called next; {@code route}: the revision it
     * runs on (null: the provider's stable one).
     */
    public record Started(Lease lease, int attempt, Provider provider, long startedNanos, Canaries.Choice route) {
        public String revision() {
            return route == null ? provider.revision(lease.kind()) : route.revision();
        }

        public String adapterUri() {
            return route == null ? provider.adapterUri() : route.adapterUri();
        }

        /** The part its revision plays: a canary candidate's whose output must stay in quarantine, else stable. */
        public io.jobgate.job.RevisionRole role() {
            return route == null ? io.jobgate.job.RevisionRole.STABLE : route.role();
        }

        /** A canary candidate's attempt whose output must stay in quarantine (its revision is not approved). */
        public boolean holdsOutput() {
            return role() == io.jobgate.job.RevisionRole.CANDIDATE;
        }
    }

    /** What the adapter answered, in how long. */
    public record Called(Started started, AdapterResult result, long durationMs) {
    }

    private final JobLeases leases;
    private final AttemptStarts starts;
    private final PresetCatalog presets;
    private final ProviderCatalog providers;
    private final S3Client s3;
    private final String bucket;
    private final OutputStore outputs;
    private final Backoff backoff;
    private final String workerName;
    private final Duration leaseMargin;
    private final Duration gateFullDelay;
    private final String publicBaseUrl;
    private final AtomicLong acknowledgedWithoutCall = new AtomicLong();
    private volatile FaultPoint faults = step -> { };

    /** Test hook: a crash injected at a named step (the process dies there, leaving its lease). */
    @FunctionalInterface
    public interface FaultPoint {
        void at(String step);
    }

    /**
     * @param s3      where the job's source upload is read back from (in {@code bucket}), checked against its digest
     * @param outputs the output route's entry: a successful answer's output is begun here, finished by the recorder
     * @param backoff the delay before the next try of a job whose re-validation asked to wait (object storage down)
     */
    public Worker(WorkerSettings settings, JobLeases leases, AttemptStarts starts, PresetCatalog presets, ProviderCatalog providers, S3Client s3,
                  String bucket, OutputStore outputs, Backoff backoff) {
        this.publicBaseUrl = settings.publicBaseUrl();
        this.leaseMargin = settings.leaseMargin();
        this.gateFullDelay = settings.gateFullDelay();
        this.leases = leases;
        this.starts = starts;
        this.presets = presets;
        this.providers = providers;
        this.s3 = s3;
        this.bucket = bucket;
        this.outputs = outputs;
        this.backoff = backoff;
        this.workerName = io.jobgate.infra.InstanceLiveness.ownerName("");
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
     * Step 1: the stored request this dispatch message may start an attempt from. A message that may not (a final
     * job, a live lease elsewhere, a stale event) is acknowledged without a call: here when the job is read, else
     * at the start, whose guard is the read's.
     */
    public void load(Exchange exchange) {
        UUID jobId = UUID.fromString(exchange.getMessage().getHeader(OutboxRelay.JOB_ID, String.class));
        long eventId = exchange.getMessage().getHeader(OutboxRelay.EVENT_ID, Long.class);
        // The stored request as the relay read it, when the message carries it (a message of an older relay does
        // not): no read of the job here; a stale or duplicate message is found by the start's guard instead.
        Optional<Lease> job = DispatchRequest.lease(jobId, exchange.getMessage().getBody(String.class));
        if (job.isEmpty()) {
            job = leases.peek(jobId, eventId);
        }
        if (job.isEmpty()) {
            acknowledgeWithoutCall(jobId, leases.whyNoLease(jobId, eventId));
            return;
        }
        exchange.setProperty(LOADED, new Loaded(job.get(), eventId));
    }

    /**
     * Step 2: the stored request still validates (preset version exists, source upload matches its
     * digest); builds the adapter's envelope. Done before the lease, so that taking the lease, the
     * caps and the provider gate are one transaction.
     */
    public void revalidate(Exchange exchange) {
        Loaded loaded = exchange.getProperty(LOADED, Loaded.class);
        Lease job = loaded.job();
        Preset preset;
        try {
            preset = presets.resolve(job.presetId(), job.presetVersion());
            PresetCatalog.aspect(preset, job.aspectClass());
            VideoOrder.stored(preset, job.inputsJson());
        } catch (ApiProblem problem) {
            verdict(exchange, loaded, ErrorCategory.INVALID_REQUEST, "stored request no longer validates: " + problem.getMessage(), false);
            return;
        }
        byte[] source = null;
        if (job.sourceKey() != null) {
            try {
                source = s3.getObjectAsBytes(GetObjectRequest.builder().bucket(bucket).key(job.sourceKey()).build()).asByteArray();
            } catch (NoSuchKeyException e) {
                verdict(exchange, loaded, ErrorCategory.INVALID_REQUEST, "source upload " + job.sourceSha256() + " is missing", false);
                return;
            } catch (SdkException e) {
                verdict(exchange, loaded, ErrorCategory.TRANSIENT, "object storage unavailable: " + e.getClass().getSimpleName(), true);
                return;
            }
            if (!Digests.sha256Hex(source).equals(job.sourceSha256())) {
                verdict(exchange, loaded, ErrorCategory.INVALID_REQUEST, "source upload does not match its digest " + job.sourceSha256(), false);
                return;
            }
        }
        Optional<Provider> provider = providers.find(job.provider());
        if (provider.isEmpty()) {
            verdict(exchange, loaded, ErrorCategory.TRANSIENT, "no settings for provider " + job.provider(), true);
            return;
        }
        String misfit = ProviderCatalog.misfit(provider.get(), preset, job.aspectClass());
        if (misfit != null) {
            // Its settings changed since admission: never ask for a size it does not declare.
            verdict(exchange, loaded, ErrorCategory.INVALID_REQUEST, "provider " + job.provider() + " no longer renders this job: "
                    + misfit, false);
            return;
        }
        // The exact size is the adapter's (its size table; video: at the ordered resolution), never the preset's.
        String resolution = VideoOrder.resolutionOf(preset.kind(), job.inputsJson());
        Integer durationSeconds = VideoOrder.durationOf(preset.kind(), job.inputsJson());
        PixelSize size = provider.get().size(job.aspectClass(), resolution).orElse(null);
        JsonNode inputs = Json.parseObject(job.inputsJson().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String prompt = preset.template().render(inputs);
        String language = preset.hints().language(inputs);
        String vocabulary = preset.hints().vocabulary(inputs);
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
        if (durationSeconds != null) {
            envelope.put("duration_seconds", durationSeconds);
            envelope.put("resolution", resolution);
        }
        envelope.put("prompt", prompt);
        if (language != null) {
            envelope.put("language", language);
        }
        if (vocabulary != null) {
            envelope.put("vocabulary_hint", vocabulary);
        }
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
        call.put(AdapterContract.LANGUAGE, language);
        call.put(AdapterContract.VOCABULARY_HINT, vocabulary);
        call.put(AdapterContract.CORRELATION_ID, job.correlationId());
        call.put(AdapterContract.DURATION_SECONDS, durationSeconds);
        call.put(AdapterContract.RESOLUTION, resolution);
        if (source != null) {
            call.put(AdapterContract.SOURCE, source);
            call.put(AdapterContract.SOURCE_MEDIA_TYPE, job.sourceMediaType());
            call.put(AdapterContract.SOURCE_FILE_NAME, "source" + MediaTypes.extension(job.sourceMediaType()));
            call.put(AdapterContract.SOURCE_BUCKET, bucket);
            call.put(AdapterContract.SOURCE_KEY, job.sourceKey());
            Long audioMillis = io.jobgate.upload.AudioDuration.millis(job.sourceMediaType(), source);
            call.put(AdapterContract.SOURCE_SECONDS, audioMillis == null ? null
                    : java.math.BigDecimal.valueOf(audioMillis, 3).stripTrailingZeros().toPlainString());
        }
        exchange.setProperty(PREPARED, new Prepared(job, loaded.eventId(), null, Json.write(envelope), call));
    }

    /** Step 3: lease, caps and provider gate in one transaction (see {@link AttemptStarts#start}). */
    public void start(Exchange exchange) {
        Prepared prepared = exchange.getProperty(PREPARED, Prepared.class);
        Lease job = prepared.job();
        Provider provider = providers.find(job.provider()).orElse(null);
        Duration deadline = provider == null ? Duration.ofMinutes(2) : provider.callDeadline();
        AttemptStarts.GatePass pass = starts.start(job.jobId(), prepared.eventId(), workerName,
                deadline.plus(leaseMargin), provider, jittered(gateFullDelay), prepared.verdict(),
                backoff.delay(Math.max(1, job.attempts())), job);
        if (pass instanceof AttemptStarts.Submitting submitting) {
            faults.at("submitting");
            exchange.setProperty(STARTED, new Started(submitting.lease(), submitting.attempt(), provider, System.nanoTime(),
                    submitting.route()));
        } else if (pass instanceof AttemptStarts.NotLeased lost) {
            acknowledgeWithoutCall(job.jobId(), lost.reason());
        } else {
            LOG.info("job {} not submitted: {}", job.jobId(), pass);
        }
    }

    private void verdict(Exchange exchange, Loaded loaded, ErrorCategory category, String message, boolean retry) {
        exchange.setProperty(PREPARED, new Prepared(loaded.job(), loaded.eventId(),
                new AttemptStarts.Verdict(category, message, retry), null, null));
    }

    private void acknowledgeWithoutCall(UUID jobId, String why) {
        LOG.info("dispatch of job {} acknowledged without a call: {}", jobId, why);
        acknowledgedWithoutCall.incrementAndGet();
    }

    /**
     * Step 4: the adapter's request, on this exchange: the envelope as the body, no headers (a
     * transport header would go out to the provider as an HTTP header), the contract's properties.
     * The route then calls {@code direct:provider-<name>}.
     */
    public void adapterRequest(Exchange exchange) {
        Started started = exchange.getProperty(STARTED, Started.class);
        Prepared prepared = exchange.getProperty(PREPARED, Prepared.class);
        Map<String, Object> call = new LinkedHashMap<>(prepared.call());
        call.put(AdapterContract.ATTEMPT, started.attempt());
        call.put(AdapterContract.WEBHOOK_URL, webhookUrl(started.provider()));
        if (started.holdsOutput()) {
            call.put(AdapterContract.IDEMPOTENCY_KEY, Canaries.candidateKey((String) call.get(AdapterContract.IDEMPOTENCY_KEY),
                    started.attempt()));
        }
        AdapterContract.request(exchange, started.provider(), AdapterContract.SUBMIT, prepared.envelope(), call);
        // The revision this attempt runs on: a canary candidate's route is told its own, not the stable one's.
        exchange.setProperty(AdapterContract.ADAPTER_REVISION, started.revision());
        exchange.setProperty(PROVIDER, started.provider().name());
        exchange.setProperty(ADAPTER_URI, started.adapterUri());
    }

    /** Step 5: what the adapter answered ({@link AdapterAnswer}; an exception it threw included). */
    public void classify(Exchange exchange) {
        Started started = exchange.getProperty(STARTED, Started.class);
        AdapterResult result = exchange.getProperty(AdapterAnswer.ANSWER, AdapterResult.class);
        if (result.absent()) {
            result = result.failedAs(ErrorCategory.UNPARSEABLE_RESPONSE, "adapter answered 'absent' to a submit");
        }
        Called called = new Called(started, result, (System.nanoTime() - started.startedNanos()) / 1_000_000);
        exchange.setProperty(CALLED, called);
        faults.at("called");
        if (result.succeeded()) {
            // The output goes through direct:store-output next, promoted only while this lease holds.
            Lease lease = started.lease();
            outputs.begin(exchange, OutputSubject.of(lease.jobId(), lease.tenantId(), started.attempt(), lease.presetId(),
                    lease.presetVersion(), lease.kind(), lease.aspectClass(), lease.inputsJson(), lease.sourceSha256(),
                    started.provider(), started.revision()), result, started.provider().callDeadline(),
                    () -> leases.mayFinish(lease.jobId(), lease.token(), started.attempt()), started.holdsOutput());
        }
    }

    private String webhookUrl(Provider provider) {
        return publicBaseUrl + "/v1/providers/" + provider.name() + "/webhook";
    }

    private Duration jittered(Duration delay) {
        long half = delay.toMillis() / 2;
        return Duration.ofMillis(half + java.util.concurrent.ThreadLocalRandom.current().nextLong(half + 1));
    }


}
