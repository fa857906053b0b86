package io.jobgate.ops;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import io.jobgate.support.ApiClient;
import io.jobgate.support.FakeProvider;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.LegacyClients;
import io.jobgate.support.Samples;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The scripted run whose metrics the tests read, on one gateway with fake providers (one WireMock
 * for the sync image provider {@code fakeimg}, the async {@code fakeasync} and OpenAI's transcription):
 * an image job that succeeds; one answered 429 then success; one answered 400 (terminal_request);
 * one answered 429 until its attempts run out (a 429-caused failure); one answered 503 until they
 * run out (exhausted, neither 429 nor 4xx); an async job finished by the
 * poller (reconciliation lag); a transcription (audio minutes); a refusal through HTTP and one
 * through the JMS intake. Every job ends before {@link #run()} returns.
 */
final class ScriptedRun {

    /** Jobs the run makes, all terminal at its end. */
    static final int TERMINAL_JOBS = 7;

    static final String IMAGES = "/v1/images/generations";

    final WireMockServer fake = FakeProvider.start();
    /** The client of the gateway the run goes through (booted with {@link #settings()}). */
    private ApiClient api;

    /** The gateway's settings: workers, a fast poller and gauges, every fake pointed at the WireMock. */
    Map<String, String> settings() {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.metrics.gauge-period-ms", "200",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl(),
                "jobgate.provider.fakeasync.base-url", fake.baseUrl(),
                "jobgate.provider.openai.base-url", fake.baseUrl() + "/v1",
                "jobgate.provider.openai.api-key", "sk-test-123"));
    }

    void stop() {
        fake.stop();
    }

    void run(ApiClient gateway) throws Exception {
        api = gateway;
        String ok = Jobs.tag();
        String limited = Jobs.tag();
        String bad = Jobs.tag();
        String alwaysLimited = Jobs.tag();
        String unavailable = Jobs.tag();
        String async = Jobs.tag();
        fake.stubFor(post(IMAGES).withRequestBody(containing(ok)).willReturn(aResponse().withStatus(200).withBody(png())));
        fake.stubFor(post(IMAGES).withRequestBody(containing(limited)).inScenario(limited).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")));
        fake.stubFor(post(IMAGES).withRequestBody(containing(limited)).inScenario(limited).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(png())));
        fake.stubFor(post(IMAGES).withRequestBody(containing(bad)).willReturn(aResponse().withStatus(400)
                .withBody("{\"error\": {\"message\": \"bad size\"}}")));
        fake.stubFor(post(IMAGES).withRequestBody(containing(alwaysLimited))
                .willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")));
        fake.stubFor(post(IMAGES).withRequestBody(containing(unavailable)).willReturn(aResponse().withStatus(503)));
        // Async: accepted as a task, the poller's lookup finds it done.
        fake.stubFor(post("/v1/predictions").withRequestBody(containing(async)).willReturn(aResponse().withStatus(201)
                .withBody("{\"id\": \"p-" + async + "\", \"status\": \"starting\"}")));
        fake.stubFor(get("/v1/predictions/p-" + async).willReturn(aResponse().withStatus(200).withBody(
                "{\"id\": \"p-" + async + "\", \"status\": \"succeeded\", \"output\": [\"" + fake.baseUrl() + "/files/" + async
                        + ".png\"], \"metrics\": {\"predict_time\": 2.5}}")));
        fake.stubFor(get("/files/" + async + ".png").willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "image/png").withBody(Samples.png(1024, 1536))));
        fake.stubFor(post("/v1/audio/transcriptions").willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"task\": \"transcribe\", \"language\": \"english\", "
                        + "\"duration\": 2.5, \"text\": \"Hello.\", \"segments\": [{\"id\": 0, \"seek\": 0, \"start\": 0.0, "
                        + "\"end\": 2.5, \"text\": \"Hello.\"}], \"usage\": {\"type\": \"duration\", \"seconds\": 3}}")));

        List<UUID> jobs = new ArrayList<>();
        jobs.add(image(ok, "fakeimg"));
        jobs.add(image(limited, "fakeimg"));
        jobs.add(image(bad, "fakeimg"));
        jobs.add(image(alwaysLimited, "fakeimg"));
        jobs.add(image(unavailable, "fakeimg"));
        jobs.add(image(async, "fakeasync"));
        jobs.add(transcription());
        ApiClient.Response refused = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"no-such-preset\"}");
        assertThat(refused.status()).isEqualTo(422);
        try (LegacyClients.Client legacy = LegacyClients.connect(LegacyClients.Protocol.CORE,
                "127.0.0.1:" + System.getProperty("jobgate.broker.embedded-port"), "acme-legacy", "dev-acme-jms")) {
            LegacyClients.Reply reply = legacy.request(LegacyClients.Request.of("{}", "k-" + UUID.randomUUID(), null)
                    .claiming("globex"), 10_000);
            assertThat(reply).isNotNull();
            assertThat(reply.status()).as(reply.text()).isEqualTo(403);
        }
        jobs.forEach(Jobs::awaitFinal);
        assertThat(jobs).extracting(Jobs::status)
                .containsExactly("succeeded", "succeeded", "failed", "failed", "failed", "succeeded", "succeeded");
        assertThat(jobs).hasSize(TERMINAL_JOBS);
    }

    UUID image(String tag, String provider) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "%s",
                 "inputs": {"supplier_name": "%s", "invoice_id": "M-1", "currency": "EUR", "line_items": []}}"""
                .formatted(provider, tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    UUID transcription() {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(2500));
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static String png() {
        return "{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}";
    }
}
