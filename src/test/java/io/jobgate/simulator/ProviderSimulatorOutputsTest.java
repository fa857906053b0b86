package io.jobgate.simulator;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the simulator keeps of its renders: an output read is kept within a budget of bytes, the oldest read ones
 * expiring beyond it (the file answers 404, the task still says it succeeded and where its output was); an output not
 * read yet is kept. Before, every output stayed, and the simulator running in the gateway filled its heap.
 */
class ProviderSimulatorOutputsTest {

    final HttpClient http = HttpClient.newHttpClient();

    @Test
    void readOutputsExpireBeyondTheirBudgetOldestFirstAndUnreadOnesAreKept() throws Exception {
        try (ProviderSimulator simulator = ProviderSimulator.start(new ProviderSimulator.Config(0, Duration.ofMillis(10),
                Duration.ofMillis(100), "whsec_dGVzdA==", Map.of()))) {
            String base = "http://127.0.0.1:" + simulator.port();
            JsonNode first = rendered(base, "k-1");
            JsonNode second = rendered(base, "k-2");
            JsonNode unread = rendered(base, "k-3");
            byte[] firstOutput = get(first.path("output").path(0).asText()).body();
            // Room for one read output: reading the second expires the first, the oldest read.
            simulator.readOutputsKeptBytes = firstOutput.length + 1;

            assertThat(get(first.path("output").path(0).asText()).statusCode()).as("read again within the budget").isEqualTo(200);
            assertThat(get(second.path("output").path(0).asText()).statusCode()).isEqualTo(200);
            assertThat(get(first.path("output").path(0).asText()).statusCode()).as("expired: the oldest read").isEqualTo(404);
            JsonNode afterwards = Json.parseObject(get(base + "/v1/predictions/by-key/k-1").body());
            assertThat(afterwards.path("status").asText()).isEqualTo("succeeded");
            assertThat(afterwards.path("output").path(0).asText()).isEqualTo(first.path("output").path(0).asText());

            assertThat(simulator.outputsHeld()[0]).as("the second (read, within the budget) and the unread third").isEqualTo(2);
            assertThat(get(unread.path("output").path(0).asText()).statusCode()).isEqualTo(200);
        }
    }

    /** A transcription task submitted under {@code key}, once it succeeded. */
    JsonNode rendered(String base, String key) throws Exception {
        HttpResponse<byte[]> submitted = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/predictions"))
                .header("Content-Type", "application/json").header("Idempotency-Key", key)
                .POST(HttpRequest.BodyPublishers.ofString("{\"input\": {\"kind\": \"transcription\", \"inputs\": {\"language\": \"en\","
                        + " \"speakers\": 2}, \"source\": {\"bytes\": 32000}}}")).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(submitted.statusCode()).isEqualTo(201);
        String id = Json.parseObject(submitted.body()).path("id").asText();
        await().atMost(Duration.ofSeconds(10)).until(() -> "succeeded".equals(task(base, id).path("status").asText()));
        return task(base, id);
    }

    JsonNode task(String base, String id) throws Exception {
        return Json.parseObject(get(base + "/v1/predictions/" + id).body());
    }

    HttpResponse<byte[]> get(String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
    }
}
