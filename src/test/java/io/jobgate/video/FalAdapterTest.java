package io.jobgate.video;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.Gateway;
import io.jobgate.common.Json;
import io.jobgate.reconcile.FalWebhookSignature;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.putRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped fal adapter (routes/providers/fal.camel.yaml) through the real worker, poller and
 * webhook door, against WireMock stubs shaped by fal's queue API: submit → request_id, status,
 * result, cancel, and ED25519-signed webhooks verified with a JWKS.
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FalAdapterTest {

    static final String ACME = "dev-acme-key";
    static final String SUBMIT = "/fal-ai/veo3/fast";

    WireMockServer fal;
    ApiClient api;
    KeyPair signing;

    @BeforeAll
    void boot() throws Exception {
        fal = io.jobgate.support.FakeProvider.start();
        signing = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        byte[] spki = signing.getPublic().getEncoded();
        String x = Base64.getUrlEncoder().withoutPadding().encodeToString(Arrays.copyOfRange(spki, spki.length - 32, spki.length));
        fal.stubFor(get("/.well-known/jwks.json").willReturn(aResponse().withStatus(200)
                .withBody("{\"keys\": [{\"kty\": \"OKP\", \"crv\": \"Ed25519\", \"x\": \"" + x + "\", \"kid\": \"k1\"}]}")));
        api = new ApiClient(GatewayTestSupport.prepare(GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.fal.base-url", fal.baseUrl(),
                "jobgate.provider.fal.api-key", "fal-test-key",
                "jobgate.provider.fal.call-deadline-ms", "1000",
                "jobgate.provider.fal.webhook-jwks-url", fal.baseUrl() + "/.well-known/jwks.json"))));
    }

    @AfterAll
    void stop() {
        fal.stop();
    }

    UUID submit(String tag, int seconds, String resolution) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clip", "aspect_class": "portrait", "provider": "fal",
                 "inputs": {"duration_seconds": %d, "resolution": "%s", "supplier_name": "%s",
                            "invoice_id": "F-1", "currency": "USD", "total": 99}}""".formatted(seconds, resolution, tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    String queued(String id) {
        return "{\"request_id\": \"" + id + "\", \"status\": \"IN_QUEUE\", \"response_url\": \"" + fal.baseUrl()
                + "/fal-ai/veo3/requests/" + id + "\", \"status_url\": \"x\", \"cancel_url\": \"x\", \"queue_position\": 0}";
    }

    void clip(String id, int width, int height, int seconds) {
        fal.stubFor(get("/files/" + id + ".mp4").willReturn(aResponse().withStatus(200).withHeader("Content-Type", "video/mp4")
                .withBody(Mp4ProbeTest.clip(width, height, seconds))));
    }

    String output(String id) {
        return "{\"video\": {\"url\": \"" + fal.baseUrl() + "/files/" + id + ".mp4\", \"content_type\": \"video/mp4\"}}";
    }

    ApiClient.Response webhook(UUID job, String body) throws Exception {
        String requestId = Json.MAPPER.readTree(body).path("request_id").asText();
        String ts = Long.toString(Instant.now().getEpochSecond());
        byte[] raw = body.getBytes(StandardCharsets.UTF_8);
        Signature signer = Signature.getInstance("Ed25519");
        signer.initSign(signing.getPrivate());
        signer.update(FalWebhookSignature.message(requestId, "user-1", ts, raw));
        return api.send(api.request("/v1/providers/fal/webhook?job=" + job, null)
                .header(FalWebhookSignature.REQUEST_ID, requestId).header(FalWebhookSignature.USER_ID, "user-1")
                .header(FalWebhookSignature.TIMESTAMP, ts)
                .header(FalWebhookSignature.SIGNATURE, HexFormat.of().formatHex(signer.sign()))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofByteArray(raw)).build());
    }

    @Test
    void submitsTheDocumentedQueueRequestAndPollingFetchesAPlayableClip() throws Exception {
        String tag = Jobs.tag();
        String id = "req-" + tag.toLowerCase();
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(queued(id))));
        fal.stubFor(get("/fal-ai/veo3/requests/" + id + "/status").willReturn(aResponse().withStatus(200)
                .withBody("{\"status\": \"COMPLETED\", \"request_id\": \"" + id + "\", \"metrics\": {\"inference_time\": 41.5}}")));
        fal.stubFor(get("/fal-ai/veo3/requests/" + id).willReturn(aResponse().withStatus(200).withBody(output(id))));
        clip(id, 720, 1280, 6);
        UUID job = submit(tag, 6, "720p");
        Jobs.awaitFinal(job);
        assertThat(Db.single("SELECT status, provider_task, error_message FROM jobs WHERE job_id = ?", job))
                .containsEntry("status", "succeeded").containsEntry("provider_task", id);

        var sent = fal.findAll(postRequestedFor(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag))).get(0);
        assertThat(sent.getHeader("Authorization")).isEqualTo("Key fal-test-key");
        assertThat(sent.queryParameter("fal_webhook").firstValue()).endsWith("/v1/providers/fal/webhook?job=" + job);
        JsonNode body = Json.MAPPER.readTree(sent.getBodyAsString());
        assertThat(body.path("aspect_ratio").asText()).isEqualTo("9:16");
        assertThat(body.path("duration").asText()).isEqualTo("6s");
        assertThat(body.path("resolution").asText()).isEqualTo("720p");
        assertThat(body.path("prompt").asText()).contains(tag);
        assertThat(Db.single("SELECT billed_units::float8 AS units, billed_unit FROM attempts WHERE job_id = ?", job))
                .containsEntry("units", 41.5).containsEntry("billed_unit", "inference_seconds");
        JsonNode result = Json.MAPPER.readTree((String) Db.single("SELECT result::text AS r FROM jobs WHERE job_id = ?", job).get("r"));
        assertThat(result.path("duration_ms").asLong()).isEqualTo(6000);
        assertThat(result.path("height").asInt()).isEqualTo(1280);
    }

    @Test
    void aSubmitWhoseReplyIsLostIsFoundByItsSignedWebhookAndBilledOnce() throws Exception {
        String tag = Jobs.tag();
        String id = "req-" + tag.toLowerCase();
        // fal queues the request, but the reply comes after our deadline: we can't know the request id.
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200)
                .withFixedDelay(2500).withBody(queued(id))));
        clip(id, 720, 1280, 4);
        UUID job = submit(tag, 4, "720p");
        Jobs.awaitStatus(job, "submission_unknown");

        ApiClient.Response forged = api.send(api.request("/v1/providers/fal/webhook?job=" + job, null)
                .header(FalWebhookSignature.REQUEST_ID, id).header(FalWebhookSignature.USER_ID, "user-1")
                .header(FalWebhookSignature.TIMESTAMP, Long.toString(Instant.now().getEpochSecond()))
                .header(FalWebhookSignature.SIGNATURE, "00".repeat(64))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"request_id\": \"" + id + "\"}")).build());
        assertThat(forged.status()).isEqualTo(401);

        ApiClient.Response hook = webhook(job, "{\"request_id\": \"" + id + "\", \"gateway_request_id\": \"" + id
                + "\", \"status\": \"OK\", \"payload\": " + output(id) + "}");
        assertThat(hook.status()).as(hook.text()).isEqualTo(200);
        assertThat(hook.json().path("matched").asBoolean()).isTrue();
        Jobs.awaitFinal(job);
        assertThat(Db.single("SELECT status, attempts FROM jobs WHERE job_id = ?", job))
                .containsEntry("status", "succeeded").containsEntry("attempts", 1);
        assertThat(fal.findAll(postRequestedFor(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)))).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isZero();
    }

    @Test
    void anErrorWebhookFailsTheJobOnARefusalAndTriesAgainOnAFault() throws Exception {
        // The model refused the input (fal: "Invalid status code: 422"): terminal, refunded, one submit.
        String tag = Jobs.tag();
        String id = "req-" + tag.toLowerCase();
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(queued(id))));
        fal.stubFor(get("/fal-ai/veo3/requests/" + id + "/status").willReturn(aResponse().withStatus(202)
                .withBody("{\"status\": \"IN_PROGRESS\", \"request_id\": \"" + id + "\"}")));
        UUID job = submit(tag, 4, "720p");
        Jobs.awaitStatus(job, "provider_pending");
        ApiClient.Response hook = webhook(job, "{\"request_id\": \"" + id + "\", \"gateway_request_id\": \"" + id
                + "\", \"status\": \"ERROR\", \"error\": \"Invalid status code: 422\", \"payload\": {\"detail\": "
                + "[{\"loc\": [\"body\", \"prompt\"], \"msg\": \"refused\", \"type\": \"value_error\"}]}}");
        assertThat(hook.status()).as(hook.text()).isEqualTo(200);
        Jobs.awaitFinal(job);
        assertThat(Db.single("SELECT status, error_category, error_message FROM jobs WHERE job_id = ?", job))
                .containsEntry("status", "failed").containsEntry("error_category", "terminal_request");
        assertThat((String) Db.single("SELECT error_message FROM jobs WHERE job_id = ?", job).get("error_message"))
                .contains("Invalid status code: 422");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(fal.findAll(postRequestedFor(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)))).hasSize(1);

        // A fault on fal's side (a runner timed out): not the job's fault, so it is submitted again.
        String flaky = Jobs.tag();
        String first = "req-" + flaky.toLowerCase();
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(flaky)).willReturn(aResponse().withStatus(200)
                .withBody(queued(first))));
        fal.stubFor(get("/fal-ai/veo3/requests/" + first + "/status").willReturn(aResponse().withStatus(202)
                .withBody("{\"status\": \"IN_PROGRESS\", \"request_id\": \"" + first + "\"}")));
        UUID retried = submit(flaky, 4, "720p");
        Jobs.awaitStatus(retried, "provider_pending");
        assertThat(webhook(retried, "{\"request_id\": \"" + first + "\", \"gateway_request_id\": \"" + first
                + "\", \"status\": \"ERROR\", \"error\": \"Invalid status code: 504\", \"payload\": null}").status())
                .isEqualTo(200);
        await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
                fal.findAll(postRequestedFor(urlPathEqualTo(SUBMIT)).withRequestBody(containing(flaky))).size() == 2);
        assertThat(Jobs.status(retried)).isNotIn("failed", "cancelled");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", retried)).isZero();
    }

    @Test
    void cancellingARunningVideoJobCancelsItAtFalAndRefundsIt() {
        String tag = Jobs.tag();
        String id = "req-" + tag.toLowerCase();
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(queued(id))));
        fal.stubFor(get("/fal-ai/veo3/requests/" + id + "/status").willReturn(aResponse().withStatus(202)
                .withBody("{\"status\": \"IN_PROGRESS\", \"request_id\": \"" + id + "\"}")));
        fal.stubFor(put("/fal-ai/veo3/requests/" + id + "/cancel").willReturn(aResponse().withStatus(202)
                .withBody("{\"status\": \"CANCELLATION_REQUESTED\"}")));
        UUID job = submit(tag, 8, "1080p");
        Jobs.awaitStatus(job, "provider_pending");

        ApiClient.Response cancelled = api.post(ACME, "/v1/jobs/" + job + "/cancel");
        assertThat(cancelled.status()).as(cancelled.text()).isEqualTo(200);
        assertThat(cancelled.json().path("status").asText()).isEqualTo("cancelled");
        assertThat(fal.findAll(putRequestedFor(urlEqualTo("/fal-ai/veo3/requests/" + id + "/cancel")))).hasSize(1);
        assertThat(Db.single("SELECT amount_micros, units::int AS units, unit FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job))
                .containsEntry("amount_micros", 8 * 100_000L).containsEntry("units", -8).containsEntry("unit", "video_seconds");
        // A second cancel changes nothing: one refund.
        assertThat(api.post(ACME, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(1);
    }

    @Test
    void aJobCancelledWhileItsSubmitIsOnTheWireHasTheTaskFalStartedCancelledToo() {
        String tag = Jobs.tag();
        String id = "req-" + tag.toLowerCase();
        fal.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200)
                .withFixedDelay(700).withBody(queued(id))));
        fal.stubFor(put("/fal-ai/veo3/requests/" + id + "/cancel").willReturn(aResponse().withStatus(200)
                .withBody("{\"status\": \"OK\"}")));
        UUID job = submit(tag, 4, "720p");
        Jobs.awaitStatus(job, "submitting");
        assertThat(api.post(ACME, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);
        await().atMost(java.time.Duration.ofSeconds(15)).untilAsserted(() ->
                assertThat(fal.findAll(putRequestedFor(urlEqualTo("/fal-ai/veo3/requests/" + id + "/cancel")))).hasSize(1));
        assertThat(Db.single("SELECT status, provider_task FROM jobs WHERE job_id = ?", job))
                .containsEntry("status", "cancelled").containsEntry("provider_task", null);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(1);
    }
}
