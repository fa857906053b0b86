package io.jobgate.provider;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.job.ErrorCategory;

/**
 * One provider's error table: (HTTP status, error code in the reply body) → category, for every
 * operation of its adapter (image, transcription, lookup), so quota, auth, refusal and rate limit
 * mean the same on every route. Settings:
 * <pre>
 * jobgate.provider.openai.error-code-fields = error.code
 * jobgate.provider.openai.error.429.insufficient_quota = auth: quota exhausted, billing action needed
 * jobgate.provider.openai.error.400.* = terminal_request
 * </pre>
 * A row's code {@code *} matches any code of that status. What no row names falls back on the
 * status alone (429 rate_limited, 401/403 auth, 5xx transient, other 4xx terminal_request).
 *
 * @param codeFields dotted paths into the JSON reply where the provider puts its error code, first found wins
 * @param rows       by {@code <status>.<code>}
 */
public record ProviderErrors(List<String> codeFields, Map<String, Row> rows) {

    public static final ProviderErrors NONE = new ProviderErrors(List.of(), Map.of());

    /** What a reply of a status and code means, and the operator-facing reason. */
    public record Row(ErrorCategory category, String reason) {
    }

    /** What the table says of a reply: the category and a reason naming the provider's code. */
    public record Verdict(ErrorCategory category, String message) {
    }

    static ProviderErrors parse(String prefix, Map<String, String> values) {
        List<String> fields = new ArrayList<>();
        for (String f : values.getOrDefault("error-code-fields", "").split(",")) {
            if (!f.isBlank()) {
                fields.add(f.trim());
            }
        }
        Map<String, Row> rows = new TreeMap<>();
        values.forEach((key, value) -> {
            if (!key.startsWith("error.")) {
                return;
            }
            String[] parts = key.substring("error.".length()).split("\\.", 2);
            if (parts.length != 2 || !parts[0].matches("[1-5][0-9][0-9]") || parts[1].isBlank()) {
                throw new IllegalStateException(prefix + key + " must be error.<status>.<code> (or error.<status>.*)");
            }
            String[] categoryAndReason = value.split(":", 2);
            ErrorCategory category = ErrorCategory.fromWire(categoryAndReason[0].trim()).orElseThrow(() -> new IllegalStateException(prefix + key + " names no error category: '" + value + "'"));
            rows.put(parts[0] + "." + parts[1], new Row(category,
                    categoryAndReason.length > 1 ? categoryAndReason[1].trim() : null));
        });
        return new ProviderErrors(List.copyOf(fields), Map.copyOf(rows));
    }

    /** The table's verdict on a reply, when a row names its status and code (or its status with {@code *}). */
    public Optional<Verdict> classify(String provider, int status, String body) {
        if (rows.isEmpty()) {
            return Optional.empty();
        }
        String code = code(body);
        Row row = code == null ? null : rows.get(status + "." + code);
        if (row == null) {
            row = rows.get(status + ".*");
        }
        if (row == null) {
            return Optional.empty();
        }
        String named = code == null ? "HTTP " + status : "HTTP " + status + " " + code;
        return Optional.of(new Verdict(row.category(), provider + " " + named
                + (row.reason() == null ? "" : ": " + row.reason())));
    }

    private String code(String body) {
        if (body == null || codeFields.isEmpty()) {
            return null;
        }
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(body);
        } catch (Exception e) {
            return null; // not JSON: the status alone decides
        }
        for (String field : codeFields) {
            JsonNode node = root;
            for (String step : field.split("\\.")) {
                node = node.path(step);
            }
            if (node.isValueNode() && !node.isNull() && !node.asText().isBlank()) {
                return node.asText();
            }
        }
        return null;
    }
}
