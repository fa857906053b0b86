package io.jobgate.admission;

import io.jobgate.job.Job;
import io.jobgate.job.JobIds;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Optional;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.preset.InputValidator;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;
import io.jobgate.provider.Pricing;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.tenant.Tenant;
import io.jobgate.upload.Upload;
import io.jobgate.upload.UploadStore;

/**
 * The one admission service behind both doors (HTTP and JMS). It validates a request against its
 * preset and prices it; the {@link AdmissionWriter} then writes the job, its outbox event and its
 * ledger debit in one transaction together with the capacity reservations. The unique (tenant,
 * idempotency key) constraint decides between concurrent requests with one key; the loser loads
 * the winner.
 */
public final class AdmissionService {

    private final Clock clock;
    private final PresetCatalog presets;
    private final ProviderCatalog providers;
    private final UploadStore uploads;
    private final JobStore jobs;
    private final AdmissionWriter writer;
    private final AdmissionLimits limits;
    private final WebhookEndpointLookup webhookEndpoints;
    private final AdmissionPlacement placement;

    /** A tenant's enabled webhook endpoint at exactly this URL: what a job's {@code webhook_url} names. */
    @FunctionalInterface
    public interface WebhookEndpointLookup {
        Optional<java.util.UUID> endpointAt(String tenantId, String url);
    }

    public AdmissionService(Clock clock, PresetCatalog presets, ProviderCatalog providers, UploadStore uploads,
                            JobStore jobs, AdmissionWriter writer, AdmissionLimits limits, WebhookEndpointLookup webhookEndpoints,
                            AdmissionPlacement placement) {
        this.placement = placement;
        this.webhookEndpoints = webhookEndpoints;
        this.clock = clock;
        this.presets = presets;
        this.providers = providers;
        this.uploads = uploads;
        this.jobs = jobs;
        this.writer = writer;
        this.limits = limits;
    }

    public record Admission(Job job, boolean replayed) {
    }

    public Admission admit(Tenant tenant, String idempotencyKey, String correlationId, JsonNode body) {
        IdempotencyKeys.check(idempotencyKey);
        String fingerprint = JobRequest.fingerprint(body);
        AdmissionWriter.Candidate candidate;
        try {
            candidate = candidate(tenant, idempotencyKey, correlationId, JobRequest.parse(body, fingerprint));
        } catch (ApiProblem refused) {
            // A key already used wins over today's verdict on the request: replay or reuse.
            Optional<Job> existing = jobs.findByKey(tenant.id(), idempotencyKey);
            if (existing.isPresent()) {
                return replay(existing.get(), fingerprint);
            }
            throw refused;
        }
        if (writer.admit(candidate) == AdmissionWriter.Result.ADMITTED) {
            return new Admission(candidate.job(), false);
        }
        Job winner = jobs.findByKey(tenant.id(), idempotencyKey)
                .orElseThrow(() -> new IllegalStateException("idempotency key taken without a job"));
        return replay(winner, fingerprint);
    }

    private AdmissionWriter.Candidate candidate(Tenant tenant, String idempotencyKey, String correlationId,
                                                JobRequest request) {
        Preset preset = presets.resolve(request.presetId(), request.presetVersion());
        if (Preset.SUMMARY.equals(preset.kind())) {
            throw ApiProblem.of(422, "invalid_request", "Preset '" + preset.id() + "' summarises a transcript: ask for it with a "
                    + "transcription job, {\"summary\": {\"preset_id\": \"" + preset.id() + "\"}}.").with("field", "preset_id");
        }
        String summary = summary(tenant, preset, request.summary());
        PresetCatalog.aspect(preset, request.aspectClass());
        VideoOrder video = VideoOrder.of(preset, request.inputs()); // its own codes, before the generic field checks
        InputValidator.validate(preset, request.inputs());
        java.util.UUID webhookEndpoint = request.webhookUrl() == null ? null
                : webhookEndpoints.endpointAt(tenant.id(), request.webhookUrl()).orElseThrow(() -> ApiProblem.of(422,
                        "unknown_webhook_url", "'webhook_url' names no enabled webhook endpoint of this tenant; register it first"
                        + " (POST /v1/webhooks/endpoints).").with("field", "webhook_url"));
        Upload source = source(tenant, preset, request);
        // The upload's size is known before the provider is: one whose limit it exceeds is never chosen.
        long inputBytes = source == null ? 0 : source.bytes();
        java.util.UUID jobId = JobIds.next(clock);
        // The provider named, the pool named (or the preset's, or the kind's), or the kind's default provider.
        AdmissionPlacement.Placed placed = placement.place(tenant.id(), tenant::whyNot, request.provider(), request.pool(), preset,
                request.aspectClass(), inputBytes, jobId, "", p -> Pricing.costMicros(preset, p, source, video));
        Provider provider = placed.provider();
        long cost = placed.costMicros();
        Instant now = clock.instant().truncatedTo(ChronoUnit.MICROS); // what PostgreSQL stores
        Job job = new Job(jobId, tenant.id(), idempotencyKey, request.fingerprint(), JobStatus.QUEUED,
                preset.id(), preset.version(), preset.kind(), request.aspectClass(), provider.name(),
                source == null ? null : source.id(), source == null ? null : source.sha256(),
                source == null ? 0 : source.bytes(), correlationId, cost, limits.maxAttempts(),
                limits.maxLifetimeSeconds(), now.plusSeconds(limits.maxLifetimeSeconds()), 0, null, null, now, now, null, null, null, null,
                webhookEndpoint, null, placed.pool(), placed.waitingReason());
        return new AdmissionWriter.Candidate(job, Json.write(request.inputs()), source == null ? null : source.objectKey(),
                Pricing.metered(preset, source, video), summary);
    }

    /**
     * The summary a transcription job asks for, checked now (before the {@code 202}): a summary preset, its
     * inputs, and a provider that serves summaries and runs or a pool the tenant may use (the one named, or one to
     * choose when it is ordered). Its price is fixed when it is ordered, from the transcript's length. As stored
     * (JSON), or null.
     */
    private String summary(Tenant tenant, Preset preset, JobRequest.Summary asked) {
        if (asked == null) {
            return null;
        }
        if (!"transcription".equals(preset.kind())) {
            throw ApiProblem.of(422, "invalid_request", "Only a transcription job can ask for a summary; preset '" + preset.id()
                    + "' is of kind " + preset.kind() + ".").with("field", "summary");
        }
        Preset summary = presets.resolve(asked.presetId(), asked.presetVersion());
        if (!Preset.SUMMARY.equals(summary.kind())) {
            throw ApiProblem.of(422, "invalid_request", "Preset '" + summary.id() + "' is of kind " + summary.kind()
                    + ", not a summary preset.").with("field", "summary.preset_id");
        }
        InputValidator.validate(summary, asked.inputs());
        placement.check(tenant.id(), tenant::whyNot, asked.provider(), asked.pool(), summary, "summary.");
        java.util.Map<String, Object> stored = new java.util.LinkedHashMap<>();
        stored.put("preset_id", summary.id());
        stored.put("preset_version", summary.version());
        stored.put("provider", asked.provider());
        stored.put("pool", asked.pool());
        stored.put("inputs", asked.inputs());
        return Json.write(stored);
    }

    private Admission replay(Job existing, String fingerprint) {
        if (!existing.requestSha256().equals(fingerprint)) {
            throw ApiProblem.of(422, "idempotency_key_reused", "This Idempotency-Key was used for a different request "
                    + "(job " + existing.id() + "); use a new key for a new request.").with("job_id", existing.id().toString());
        }
        return new Admission(existing, true);
    }

    private Upload source(Tenant tenant, Preset preset, JobRequest request) {
        if (request.uploadId() == null) {
            if (preset.sourceRequired()) {
                throw ApiProblem.invalidInput("upload_id", "Preset '" + preset.id() + "' needs a source upload ("
                        + String.join(", ", preset.sourceMediaTypes()) + "); send its upload_id.");
            }
            return null;
        }
        Upload upload = uploads.find(tenant.id(), request.uploadId())
                .orElseThrow(() -> ApiProblem.of(422, "unknown_upload", "No upload '" + request.uploadId() + "'.")
                        .with("field", "upload_id"));
        if (upload.expired()) {
            throw ApiProblem.of(422, "upload_expired", "Upload '" + request.uploadId() + "' was not used for longer than it is kept; "
                    + "upload the same bytes again (POST /v1/uploads) and send the upload_id it answers.")
                    .with("field", "upload_id");
        }
        if (!preset.sourceMediaTypes().contains(upload.mediaType())) {
            throw ApiProblem.invalidInput("upload_id", "Preset '" + preset.id() + "' takes "
                    + (preset.takesSource() ? String.join(", ", preset.sourceMediaTypes()) : "no source upload")
                    + "; the upload is " + upload.mediaType() + ".");
        }
        return upload;
    }
}
