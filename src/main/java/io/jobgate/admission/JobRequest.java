package io.jobgate.admission;

import java.util.Iterator;
import java.util.Set;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.common.Digests;

/**
 * A job request as the client sent it (HTTP body or JMS text), with its fingerprint: the digest of
 * the canonical JSON, which tells an idempotent replay from a reused key.
 */
public record JobRequest(String presetId, Integer presetVersion, String aspectClass, String provider, String pool, JsonNode inputs,
                         UUID uploadId, String webhookUrl, Summary summary, String fingerprint) {

    private static final Set<String> MEMBERS = Set.of("preset_id", "preset_version", "aspect_class", "provider", "pool", "inputs",
            "upload_id", "webhook_url", "summary");

    private static final Set<String> SUMMARY_MEMBERS = Set.of("preset_id", "preset_version", "provider", "pool", "inputs");

    /**
     * The summary a transcription job asks for (docs/summaries.md): its preset (kind summary), optionally its
     * version, the provider to run it or the pool of summary providers it may run in, and the preset's inputs;
     * null when the job asks for none.
     */
    public record Summary(String presetId, Integer presetVersion, String provider, String pool, JsonNode inputs) {
    }

    /** The digest of the request's canonical JSON: equal for the same request in any member order. */
    public static String fingerprint(JsonNode body) {
        return Digests.sha256Hex(Json.canonical(body));
    }

    public static JobRequest parse(JsonNode body, String fingerprint) {
        Iterator<String> names = body.fieldNames();
        while (names.hasNext()) {
            String name = names.next();
            if (!MEMBERS.contains(name)) {
                throw ApiProblem.of(422, "invalid_request", "Unknown member '" + name + "'; a job request has "
                        + String.join(", ", new java.util.TreeSet<>(MEMBERS)) + ".").with("field", name);
            }
        }
        String presetId = requiredText(body, "preset_id");
        String aspectClass = optionalText(body, "aspect_class");
        Integer version = version(body, "");
        String provider = optionalText(body, "provider");
        String pool = poolOrProvider(body, "", provider);
        JsonNode inputs = inputs(body, "", "preset's");
        UUID uploadId = null;
        String upload = optionalText(body, "upload_id");
        if (upload != null) {
            try {
                uploadId = UUID.fromString(upload);
            } catch (IllegalArgumentException e) {
                throw ApiProblem.of(422, "unknown_upload", "No upload '" + upload + "'.").with("field", "upload_id");
            }
        }
        String webhookUrl = null;
        JsonNode hook = body.get("webhook_url");
        if (hook != null && !hook.isNull()) {
            if (!hook.isTextual() || hook.asText().isBlank() || hook.asText().length() > 2000) {
                throw invalid("webhook_url", "'webhook_url' must be the URL of one of the tenant's webhook endpoints.");
            }
            webhookUrl = hook.asText();
        }
        return new JobRequest(presetId, version, aspectClass, provider, pool, inputs, uploadId, webhookUrl, summary(body.get("summary")),
                fingerprint);
    }

    private static Summary summary(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isObject()) {
            throw invalid("summary", "'summary' must be an object: {\"preset_id\": ..., \"preset_version\", \"provider\", \"inputs\" optional}.");
        }
        Iterator<String> names = node.fieldNames();
        while (names.hasNext()) {
            String name = names.next();
            if (!SUMMARY_MEMBERS.contains(name)) {
                throw invalid("summary." + name, "Unknown member 'summary." + name + "'; a summary has "
                        + String.join(", ", new java.util.TreeSet<>(SUMMARY_MEMBERS)) + ".");
            }
        }
        String presetId = optionalText(node, "preset_id");
        if (presetId == null) {
            throw invalid("summary.preset_id", "'summary.preset_id' is required: the summary preset (kind summary) to run.");
        }
        String provider = optionalText(node, "provider");
        return new Summary(presetId, version(node, "summary."), provider, poolOrProvider(node, "summary.", provider),
                inputs(node, "summary.", "summary preset's"));
    }

    /** The member {@code pool} of {@code node}, refused beside a provider ({@code at}: where the node is, for the field). */
    private static String poolOrProvider(JsonNode node, String at, String provider) {
        String pool = optionalText(node, "pool");
        if (pool != null && provider != null) {
            // A named provider pins the job (no failover); a pool lets it move: one or the other, never both.
            throw ApiProblem.of(422, "pool_or_provider", "Name either '" + at + "pool' (the job may move among its members) or '"
                    + at + "provider' (the job is pinned to it), not both.").with("field", at + "pool");
        }
        return pool;
    }

    /** The member {@code preset_version} of {@code node} (named {@code at + "preset_version"} in errors): a positive whole number, or null. */
    private static Integer version(JsonNode node, String at) {
        JsonNode v = node.get("preset_version");
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isIntegralNumber() || v.asLong() < 1 || v.asLong() > Integer.MAX_VALUE) {
            throw invalid(at + "preset_version", "'" + at + "preset_version' must be a positive whole number.");
        }
        return v.asInt();
    }

    /** The member {@code inputs} of {@code node} (named {@code at + "inputs"} in errors): an object, empty when absent. */
    private static JsonNode inputs(JsonNode node, String at, String whose) {
        JsonNode inputs = node.get("inputs");
        if (inputs == null || inputs.isNull()) {
            return JsonNodeFactory.instance.objectNode();
        }
        if (!inputs.isObject()) {
            throw ApiProblem.invalidInput(at + "inputs", "'" + at + "inputs' must be a JSON object of the " + whose + " fields.");
        }
        return inputs;
    }

    private static String requiredText(JsonNode body, String field) {
        String value = optionalText(body, field);
        if (value == null) {
            throw invalid(field, "'" + field + "' is required.");
        }
        return value;
    }

    private static String optionalText(JsonNode body, String field) {
        JsonNode node = body.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isTextual() || node.asText().isBlank() || node.asText().length() > 200) {
            throw invalid(field, "'" + field + "' must be a non-empty string of at most 200 characters.");
        }
        return node.asText();
    }

    private static ApiProblem invalid(String field, String detail) {
        return ApiProblem.of(422, "invalid_request", detail).with("field", field);
    }
}
