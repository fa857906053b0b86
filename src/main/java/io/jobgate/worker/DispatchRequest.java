package io.jobgate.worker;

import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;

import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;

/**
 * The job's stored request as a dispatch message carries it (member {@code request}, written by the relay from
 * the row it claimed): what a worker starts from, read as {@link JobLeases#peek} would have read the job. The
 * start's guard (the same dispatch event, as many attempts) decides whether the job is still as the relay read
 * it; nothing that the guard lets through changes after admission.
 */
public final class DispatchRequest {

    private DispatchRequest() {
    }

    /** The lease-to-be of job {@code jobId} from a dispatch message's body, empty when it carries no request. */
    public static Optional<Lease> lease(UUID jobId, String body) {
        if (body == null || !body.contains("\"request\"")) {
            return Optional.empty();
        }
        JsonNode message;
        try {
            message = Json.MAPPER.readTree(body);
        } catch (java.io.IOException unreadable) {
            return Optional.empty(); // the job is read instead
        }
        JsonNode request = message == null ? null : message.get("request");
        if (request == null || !request.isObject() || !jobId.toString().equals(text(message, "job_id"))) {
            return Optional.empty();
        }
        String expires = text(request, "expires_at");
        return Optional.of(new Lease(jobId, null, text(message, "tenant_id"), text(message, "preset_id"),
                message.path("preset_version").asInt(), text(message, "kind"), text(request, "aspect_class"),
                text(message, "provider"), text(request, "inputs"), text(request, "source_key"), text(request, "source_sha256"),
                text(request, "source_media_type"), text(request, "correlation_id"), message.path("attempt").asInt() - 1,
                request.path("max_attempts").asInt(), expires == null ? null : Instant.parse(expires),
                request.path("unparseable_streak").asInt(), text(request, "pool"), request.path("source_bytes").asLong()));
    }

    private static String text(JsonNode node, String member) {
        JsonNode value = node.get(member);
        return value == null || value.isNull() ? null : value.asText();
    }
}
