package io.jobgate.evaluation;

import java.io.PrintStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;

/**
 * {@code java -jar jobgate.jar evaluate --since …}: asks a running gateway what its evaluator read back
 * ({@code GET /v1/admin/evaluations}) and prints one row per preset and revision: jobs, field accuracy,
 * outputs whose totals read right, rejected outputs. The admin key comes from {@code JOBGATE_ADMIN_API_KEY}
 * (or {@code --admin-key}); the demo's {@code dev-admin-key} otherwise.
 */
public final class EvaluateCommand {

    private EvaluateCommand() {
    }

    public static void main(String[] args) throws Exception {
        String url = "http://127.0.0.1:8080";
        String since = null;
        String key = System.getenv().getOrDefault("JOBGATE_ADMIN_API_KEY", "dev-admin-key");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--url" -> url = args[++i];
                case "--since" -> since = args[++i];
                case "--admin-key" -> key = args[++i];
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; see evaluate --help");
            }
        }
        HttpResponse<String> reply = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url.replaceAll("/+$", "")
                        + "/v1/admin/evaluations" + (since == null ? "" : "?since=" + URLEncoder.encode(since, StandardCharsets.UTF_8))))
                .header("Authorization", "Bearer " + key).timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (reply.statusCode() != 200) {
            System.err.println("evaluate: the gateway answered " + reply.statusCode() + ": " + reply.body());
            System.exit(1);
        }
        print(Json.MAPPER.readTree(reply.body()), System.out);
    }

    /** The table of a {@code GET /v1/admin/evaluations} answer. */
    public static void print(JsonNode answer, PrintStream out) {
        out.println("evaluations since " + answer.path("since").asText());
        String format = "%-20s %-32s %6s %8s %9s %9s %9s%n";
        out.printf(Locale.ROOT, format, "preset", "revision", "jobs", "outputs", "accuracy", "totals ok", "rejected");
        for (JsonNode row : answer.path("rows")) {
            JsonNode accuracy = row.path("field_accuracy");
            out.printf(Locale.ROOT, format, row.path("preset_id").asText() + " v" + row.path("preset_version").asInt(),
                    row.path("revision").asText() + (row.path("candidate_outputs").asBoolean() ? " *" : ""),
                    row.path("jobs").asLong(), row.path("outputs").asLong(),
                    accuracy.isNull() || accuracy.isMissingNode() ? "-" : String.format(Locale.ROOT, "%.1f %%", accuracy.asDouble() * 100),
                    row.path("totals_correct").asLong() + "/" + row.path("outputs").asLong(), row.path("rejected_outputs").asLong());
        }
        out.println("accuracy: fields read right of all fields; totals ok: outputs whose subtotal, tax and total all read right;"
                + " * a canary candidate's held outputs");
    }
}
