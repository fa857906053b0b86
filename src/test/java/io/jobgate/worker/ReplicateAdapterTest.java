package io.jobgate.worker;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import io.jobgate.common.Json;
import io.jobgate.common.WebhookSignature;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped Replicate adapter (routes/providers/replicate.camel.yaml) through the real worker,
 * webhook door and poller, against WireMock stubs shaped by Replicate's API reference: the
 * official-model create call, prediction objects, RFC 7807 errors and Standard Webhooks signatures.
 */
class ReplicateAdapterTest extends GatewayTestBase {

    static final String SECRET = "whsec_" + Base64.getEncoder().encodeToString("replicate-test-secret-0123".getBytes(StandardCharsets.UTF_8));
    static final String CREATE = "/v1/models/black-forest-labs/flux-1.1-pro/predictions";

    WireMockServer replicate;

    @Override
    protected Map<String, String> settings() throws Exception {
        replicate = fakeProvider(new io.jobgate.support.FluxProRules());
        // Requests no test stubs for itself meet flux-1.1-pro's documented input rules.
        io.jobgate.support.FluxProRules.install(replicate);
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.replicate.base-url", replicate.baseUrl() + "/v1",
                "jobgate.provider.replicate.api-token", "r8_test_token",
                "jobgate.provider.replicate.webhook-secret", SECRET));
    }

    UUID submit(String tag) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "replicate",
                 "inputs": {"supplier_name": "%s", "invoice_id": "RP-1", "currency": "USD",
                            "line_items": [{"description": "Render", "quantity": 1, "unit_price": 2}]}}""".formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    String prediction(String id, String status, String output, String error) {
        return "{\"id\": \"" + id + "\", \"model\": \"black-forest-labs/flux-1.1-pro\", \"version\": \"hidden\","
                + " \"input\": {}, \"output\": " + output + ", \"data_removed\": false, \"error\": " + (error == null ? "null" : "\"" + error + "\"")
                + ", \"status\": \"" + status + "\", \"created_at\": \"2026-11-30T10:00:00Z\""
                + (status.equals("succeeded") ? ", \"metrics\": {\"predict_time\": 4.2, \"total_time\": 5.0}" : "")
                + ", \"urls\": {\"get\": \"" + replicate.baseUrl() + "/v1/predictions/" + id + "\", \"cancel\": \"x\", \"web\": \"x\"}}";
    }

    void file(String name) {
        replicate.stubFor(get("/delivery/" + name).willReturn(aResponse().withStatus(200).withHeader("Content-Type", "image/png")
                .withBody(Samples.png(960, 1440))));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, error_category, error_message, provider_task FROM jobs WHERE job_id = ?", id);
    }

    @Test
    void createsAPredictionOfTheDocumentedShapeAndASignedWebhookFinishesIt() throws Exception {
        String tag = Jobs.tag();
        String id = "p" + tag.toLowerCase();
        replicate.stubFor(post(CREATE).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(201)
                .withBody(prediction(id, "starting", "null", null))));
        replicate.stubFor(get("/v1/predictions/" + id).willReturn(aResponse().withStatus(200).withBody(prediction(id, "processing", "null", null))));
        UUID job = submit(tag);
        Jobs.awaitStatus(job, "provider_pending");
        assertThat(job(job).get("provider_task")).isEqualTo(id);

        var create = replicate.findAll(postRequestedFor(urlEqualTo(CREATE)).withRequestBody(containing(tag))).get(0);
        assertThat(create.getHeader("Authorization")).isEqualTo("Bearer r8_test_token");
        JsonNode body = Json.MAPPER.readTree(create.getBodyAsString());
        // portrait at flux-1.1-pro's own size (its size table), not gpt-image-1's 1024x1536
        assertThat(body.path("input").path("width").asInt()).isEqualTo(960);
        assertThat(body.path("input").path("height").asInt()).isEqualTo(1440);
        assertThat(body.path("input").path("aspect_ratio").asText()).isEqualTo("custom");
        assertThat(body.path("input").path("prompt").asText()).contains(tag);
        assertThat(body.path("webhook").asText()).endsWith("/v1/providers/replicate/webhook");
        assertThat(body.path("webhook_events_filter").get(0).asText()).isEqualTo("completed");

        file(id + ".png");
        String done = prediction(id, "succeeded", "\"" + replicate.baseUrl() + "/delivery/" + id + ".png\"", null);
        String ts = Long.toString(Instant.now().getEpochSecond());
        ApiClient.Response hook = api.send(api.request("/v1/providers/replicate/webhook", null)
                .header("webhook-id", "msg_" + id).header("webhook-timestamp", ts)
                .header("webhook-signature", "v1," + Base64.getEncoder().encodeToString(
                        WebhookSignature.sign(SECRET, "msg_" + id, ts, done.getBytes(StandardCharsets.UTF_8))))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(done)).build());
        assertThat(hook.status()).as(hook.text()).isEqualTo(200);
        Jobs.awaitStatus(job, "succeeded");
        assertThat(Db.single("SELECT billed_units, billed_unit FROM attempts WHERE job_id = ?", job))
                .containsEntry("billed_unit", "predict_seconds");
    }

    @Test
    void pollingFindsAFailedPredictionAndTheJobFailsAsDeclined() {
        String tag = Jobs.tag();
        String id = "p" + tag.toLowerCase();
        replicate.stubFor(post(CREATE).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(201)
                .withBody(prediction(id, "starting", "null", null))));
        replicate.stubFor(get("/v1/predictions/" + id).willReturn(aResponse().withStatus(200)
                .withBody(prediction(id, "failed", "null", "NSFW content detected"))));
        UUID job = submit(tag);
        Jobs.awaitStatus(job, "failed");
        assertThat(job(job)).containsEntry("error_category", "declined").containsEntry("error_message", "NSFW content detected");
    }

    @Test
    void aThrottledCreateIsRetriedAndAListOutputIsFetched() {
        String tag = Jobs.tag();
        String id = "p" + tag.toLowerCase();
        replicate.stubFor(post(CREATE).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("ok").willReturn(aResponse().withStatus(429).withHeader("Content-Type", "application/problem+json")
                        .withBody("{\"title\": \"Request was throttled\", \"detail\": \"Request was throttled. Your rate limit resets in ~1s.\", \"status\": 429}")));
        replicate.stubFor(post(CREATE).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                .willReturn(aResponse().withStatus(201).withBody(prediction(id, "starting", "null", null))));
        file(id + "-0.png");
        replicate.stubFor(get("/v1/predictions/" + id).willReturn(aResponse().withStatus(200)
                .withBody(prediction(id, "succeeded", "[\"" + replicate.baseUrl() + "/delivery/" + id + "-0.png\"]", null))));
        UUID job = submit(tag);
        Jobs.awaitStatus(job, "succeeded");
        assertThat(job(job)).containsEntry("attempts", 2);
        assertThat(Db.single("SELECT error_category FROM attempts WHERE job_id = ? AND attempt = 1", job))
                .containsEntry("error_category", "rate_limited");
    }

    /**
     * flux-1.1-pro takes width and height 256-1440 in multiples of 32: every class of both invoice
     * presets succeeds at the sizes Replicate's size table declares (today's main asked for 1024x1536).
     */
    @Test
    void everyClassOfBothInvoicePresetsSucceedsAtFluxsExactSizes() throws Exception {
        Map<String, int[]> sizes = Map.of("square", new int[] {1024, 1024}, "landscape", new int[] {1440, 960},
                "portrait", new int[] {960, 1440});
        Map<String, String> types = Map.of("invoice-clean", "image/png", "invoice-scan", "image/jpeg");
        Map<UUID, String> jobs = new java.util.LinkedHashMap<>();
        for (String preset : types.keySet()) {
            for (String aspect : sizes.keySet()) {
                ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                        {"preset_id": "%s", "aspect_class": "%s", "provider": "replicate",
                         "inputs": {"supplier_name": "%s", "invoice_id": "RP-2", "currency": "EUR",
                                    "line_items": [{"description": "Render", "quantity": 1, "unit_price": 2}]}}"""
                        .formatted(preset, aspect, Jobs.tag()));
                assertThat(r.status()).as(r.text()).isEqualTo(202);
                jobs.put(UUID.fromString(r.json().path("job_id").asText()), preset + " " + aspect);
            }
        }
        for (Map.Entry<UUID, String> e : jobs.entrySet()) {
            UUID id = e.getKey();
            int[] size = sizes.get(e.getValue().split(" ")[1]);
            Jobs.awaitFinal(id);
            Map<String, Object> row = Db.single("SELECT status, error_message, result::text AS result FROM jobs WHERE job_id = ?", id);
            assertThat(row).as(e.getValue() + ": %s", row).containsEntry("status", "succeeded");
            JsonNode result = Json.MAPPER.readTree((String) row.get("result"));
            assertThat(result.path("media_type").asText()).as(e.getValue()).isEqualTo(types.get(e.getValue().split(" ")[0]));
            assertThat(new int[] {result.path("width").asInt(), result.path("height").asInt()}).as(e.getValue()).isEqualTo(size);
        }
    }
}
