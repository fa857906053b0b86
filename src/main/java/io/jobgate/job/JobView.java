package io.jobgate.job;

import java.io.IOException;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonSerializable;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.jsontype.TypeSerializer;

/** The canonical JSON shape of a job (API v1). */
public final class JobView {

    private JobView() {
    }

    public static String location(Job job) {
        return "/v1/jobs/" + job.id();
    }

    /**
     * The job as the API shows it. Written by Jackson as it is (a {@link JsonSerializable}), member
     * by member into the output: one of these answers every admission, and a tree of maps built only
     * to be written out cost more than writing it.
     */
    public static JsonSerializable of(Job job) {
        return new View(job, null);
    }

    /**
     * The job with its summary (a transcription job that asked for one, docs/summaries.md): {@code summary} is
     * written as it is, as the member {@code summary}.
     */
    public static JsonSerializable of(Job job, Object summary) {
        return new View(job, summary);
    }

    private record View(Job job, Object summary) implements JsonSerializable {

        @Override
        public void serialize(JsonGenerator g, SerializerProvider provider) throws IOException {
            g.writeStartObject();
            g.writeStringField("job_id", job.id().toString());
            g.writeStringField("status", job.status().wire());
            g.writeStringField("tenant_id", job.tenantId());
            g.writeObjectFieldStart("preset");
            g.writeStringField("id", job.presetId());
            g.writeNumberField("version", job.presetVersion());
            g.writeEndObject();
            g.writeStringField("kind", job.kind());
            g.writeStringField("aspect_class", job.aspectClass());
            g.writeStringField("provider", job.provider());
            // The pool the job named: its provider is the member its attempt runs (or ran) on; null: pinned or the default.
            g.writeStringField("pool", job.pool());
            if (job.uploadId() != null) {
                g.writeObjectFieldStart("source");
                g.writeStringField("upload_id", job.uploadId().toString());
                g.writeStringField("sha256", job.sourceSha256());
                g.writeNumberField("bytes", job.sourceBytes());
                g.writeEndObject();
            } else {
                g.writeNullField("source");
            }
            g.writeObjectFieldStart("limits");
            g.writeNumberField("max_attempts", job.maxAttempts());
            g.writeNumberField("max_lifetime_seconds", job.maxLifetimeSeconds());
            g.writeStringField("expires_at", job.expiresAt().toString());
            g.writeEndObject();
            g.writeNumberField("attempts", job.attempts());
            // Waiting for a retry is not a failure: the job shows when it runs next, not an error.
            g.writeStringField("next_attempt_at", job.status() == JobStatus.RETRY_WAIT && job.nextAttemptAt() != null
                    ? job.nextAttemptAt().toString() : null);
            // Why a waiting job waits, when it can only wait: a closed gate, every pool member its tenant may use closed.
            g.writeStringField("waiting_reason", job.status() == JobStatus.RETRY_WAIT || job.status() == JobStatus.QUEUED
                    ? job.waitingReason() : null);
            g.writeStringField("adapter_revision", job.adapterRevision());
            g.writeObjectFieldStart("cost");
            g.writeNumberField("amount_micros", job.costMicros());
            g.writeStringField("amount", amount(job.costMicros()));
            g.writeEndObject();
            g.writeStringField("correlation_id", job.correlationId());
            g.writeStringField("idempotency_key", job.idempotencyKey());
            // The tenant's webhook endpoint the job named (its webhook_url): its status changes go there only.
            g.writeStringField("webhook_endpoint_id", job.webhookEndpointId() == null ? null : job.webhookEndpointId().toString());
            // A summary job names the transcription job it summarises (which shows it as its summary).
            g.writeStringField("parent_job_id", job.parentJobId() == null ? null : job.parentJobId().toString());
            if (summary != null) {
                g.writeFieldName("summary");
                provider.defaultSerializeValue(summary, g);
            }
            if (job.errorCategory() != null) {
                g.writeObjectFieldStart("error");
                g.writeStringField("category", job.errorCategory());
                g.writeStringField("message", job.errorMessage());
                g.writeEndObject();
            } else {
                g.writeNullField("error");
            }
            g.writeStringField("created_at", job.createdAt().toString());
            g.writeStringField("updated_at", job.updatedAt().toString());
            g.writeStringField("finalized_at", job.finalizedAt() == null ? null : job.finalizedAt().toString());
            // A succeeded job shows its output: what it is and where to read it (never its storage key).
            Map<String, Object> output = output(job);
            g.writeFieldName("output");
            provider.defaultSerializeValue(output, g);
            g.writeObjectFieldStart("links");
            g.writeStringField("self", location(job));
            if (output != null) {
                g.writeStringField("output", location(job) + "/output");
            }
            g.writeEndObject();
            g.writeEndObject();
        }

        @Override
        public void serializeWithType(JsonGenerator g, SerializerProvider provider, TypeSerializer typeSer) throws IOException {
            serialize(g, provider);
        }
    }

    /** An amount of micro-units as the API writes it: the decimal amount, without trailing zeros ({@code 1.5}). */
    public static String amount(long micros) {
        return BigDecimal.valueOf(micros, 6).stripTrailingZeros().toPlainString();
    }

    /**
     * An attempt as the API shows it; {@code replyHeads}: with its worker and the stored head of its error reply
     * (operators only, never tenants).
     */
    public static Map<String, Object> attempt(JobStore.Attempt a, boolean replyHeads) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("attempt", a.attempt());
        view.put("adapter", a.adapter());
        view.put("revision", a.revision());
        view.put("started_at", iso(a.startedAt()));
        view.put("ended_at", iso(a.endedAt()));
        view.put("duration_ms", a.durationMs());
        view.put("outcome", a.outcome());
        view.put("error_category", a.errorCategory());
        view.put("error_message", a.errorMessage());
        view.put("http_status", a.httpStatus());
        view.put("provider_request_id", a.providerRequestId());
        view.put("retry_after", a.retryAfter());
        view.put("next_attempt_at", iso(a.nextAttemptAt()));
        view.put("billed_units", a.billedUnits());
        view.put("billed_unit", a.billedUnit());
        if (replyHeads) {
            view.put("worker", a.worker());
            view.put("reply_head", a.replyHead());
        }
        return view;
    }

    private static String iso(java.time.Instant at) {
        return at == null ? null : at.toString();
    }

    /** The promoted output's description, from the job's result record; null unless it succeeded with one. */
    public static Map<String, Object> output(Job job) {
        if (job.status() != JobStatus.SUCCEEDED || job.result() == null) {
            return null;
        }
        com.fasterxml.jackson.databind.JsonNode r = io.jobgate.common.Json.parseObject(
                job.result().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        Map<String, Object> output = new LinkedHashMap<>();
        output.put("media_type", r.path("media_type").asText(null));
        output.put("bytes", r.path("bytes").isNumber() ? r.path("bytes").asLong() : null);
        output.put("sha256", r.path("sha256").asText(null));
        // Images have a size; a transcript has none.
        output.put("width", r.path("width").isNumber() ? r.path("width").asInt() : null);
        output.put("height", r.path("height").isNumber() ? r.path("height").asInt() : null);
        // A video's duration as read from its container (not as ordered).
        if (r.path("duration_ms").isNumber()) {
            output.put("duration_ms", r.path("duration_ms").asLong());
        }
        return output;
    }
}
