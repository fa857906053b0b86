package io.jobgate.api;

import io.jobgate.job.Job;
import io.jobgate.job.JobStatus;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;

/** The canonical JSON shape of a job (API v1). */
public final class JobView {

    private JobView() {
    }

    public static String location(Job job) {
        return "/v1/jobs/" + job.id();
    }

    public static Map<String, Object> of(Job job) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("job_id", job.id().toString());
        view.put("status", job.status().wire());
        view.put("tenant_id", job.tenantId());
        view.put("preset", ordered("id", job.presetId(), "version", job.presetVersion()));
        view.put("kind", job.kind());
        view.put("aspect_class", job.aspectClass());
        view.put("provider", job.provider());
        if (job.uploadId() != null) {
            view.put("source", ordered("upload_id", job.uploadId().toString(), "sha256", job.sourceSha256(),
                    "bytes", job.sourceBytes()));
        } else {
            view.put("source", null);
        }
        view.put("limits", ordered("max_attempts", job.maxAttempts(), "max_lifetime_seconds", job.maxLifetimeSeconds(),
                "expires_at", job.expiresAt().toString()));
        view.put("attempts", job.attempts());
        // Waiting for a retry is not a failure: the job shows when it runs next, not an error.
        view.put("next_attempt_at", job.status() == JobStatus.RETRY_WAIT && job.nextAttemptAt() != null
                ? job.nextAttemptAt().toString() : null);
        view.put("adapter_revision", job.adapterRevision());
        view.put("cost", ordered("amount_micros", job.costMicros(),
                "amount", BigDecimal.valueOf(job.costMicros(), 6).stripTrailingZeros().toPlainString()));
        view.put("correlation_id", job.correlationId());
        view.put("idempotency_key", job.idempotencyKey());
        if (job.errorCategory() != null) {
            Map<String, Object> error = new LinkedHashMap<>();
            error.put("category", job.errorCategory());
            error.put("message", job.errorMessage());
            view.put("error", error);
        } else {
            view.put("error", null);
        }
        view.put("created_at", job.createdAt().toString());
        view.put("updated_at", job.updatedAt().toString());
        view.put("finalized_at", job.finalizedAt() == null ? null : job.finalizedAt().toString());
        // A succeeded job shows its output: what it is and where to read it (never its storage key).
        Map<String, Object> output = output(job);
        view.put("output", output);
        view.put("links", output == null ? ordered("self", location(job))
                : ordered("self", location(job), "output", location(job) + "/output"));
        return view;
    }

    /** The promoted output's description, from the job's result record; null unless it succeeded with one. */
    static Map<String, Object> output(Job job) {
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

    private static Map<String, Object> ordered(Object... keysAndValues) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return map;
    }
}
