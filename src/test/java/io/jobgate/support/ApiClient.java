package io.jobgate.support;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** Real HTTP calls against the gateway under test. */
public final class ApiClient {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * HTTP/1.1, as the gateway serves: the JDK client's default (HTTP/2, asked for by an h2c upgrade on a plain
     * connection) twice left a CI run's first request of a class waiting past its own timeout with no
     * connection open, until the run's time ran out (OpenApiContractTest).
     */
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;

    public ApiClient(int port) {
        this.base = "http://127.0.0.1:" + port;
    }

    public record Response(int status, java.net.http.HttpHeaders headers, String text) {
        public JsonNode json() {
            try {
                return JSON.readTree(text);
            } catch (Exception e) {
                throw new AssertionError("not JSON: " + text, e);
            }
        }

        public String header(String name) {
            return headers.firstValue(name).orElse(null);
        }

        public String code() {
            return json().path("code").asText(null);
        }

        public String contentType() {
            return header("Content-Type");
        }
    }

    public String base() {
        return base;
    }

    public Response postJob(String apiKey, String idempotencyKey, String jsonBody) {
        HttpRequest.Builder b = request("/v1/jobs", apiKey).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(jsonBody));
        if (idempotencyKey != null) {
            b.header("Idempotency-Key", idempotencyKey);
        }
        return send(b.build());
    }

    public Response upload(String apiKey, String contentType, byte[] bytes) {
        return send(request("/v1/uploads", apiKey).header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofByteArray(bytes)).build());
    }

    public Response get(String apiKey, String path) {
        return send(request(path, apiKey).GET().build());
    }

    /** The body of a successful GET as bytes (binary outputs). */
    public byte[] getBytes(String apiKey, String path) {
        try {
            HttpResponse<byte[]> r = http.send(request(path, apiKey).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                throw new AssertionError("GET " + path + " answered " + r.statusCode() + ": " + new String(r.body()));
            }
            return r.body();
        } catch (java.io.IOException | InterruptedException e) {
            throw new AssertionError("HTTP call failed: " + path, e);
        }
    }

    public Response post(String apiKey, String path) {
        return send(request(path, apiKey).POST(HttpRequest.BodyPublishers.noBody()).build());
    }

    public HttpRequest.Builder request(String path, String apiKey) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30));
        if (apiKey != null) {
            b.header("Authorization", "Bearer " + apiKey);
        }
        return b;
    }

    public Response send(HttpRequest request) {
        // Bounded here too: a call the client never ends fails its test instead of holding the whole run.
        long seconds = request.timeout().orElse(Duration.ofSeconds(30)).toSeconds() + 15;
        try {
            HttpResponse<String> r = http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                    .get(seconds, java.util.concurrent.TimeUnit.SECONDS);
            return new Response(r.statusCode(), r.headers(), r.body());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("HTTP call not ended by the client within " + seconds + " s: " + request, e);
        } catch (Exception e) {
            throw new AssertionError("HTTP call failed: " + request, e);
        }
    }
}
