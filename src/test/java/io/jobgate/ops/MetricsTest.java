package io.jobgate.ops;

import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import io.jobgate.Gateway;
import io.jobgate.support.ApiClient;
import io.jobgate.support.FakeProvider;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A scripted run — a success, a 429 then a success, a refused request, a refused admission — then
 * a scrape of {@code /observe/metrics}: jobgate's series are there with their labels.
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MetricsTest {

    static final String ACME = "dev-acme-key";
    static final String PATH = "/v1/images/generations";

    WireMockServer fake;
    ApiClient api;

    @BeforeAll
    void boot() throws Exception {
        fake = FakeProvider.start();
        api = new ApiClient(GatewayTestSupport.prepare(Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.metrics.gauge-period-ms", "200",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl())));
    }

    @AfterAll
    void stop() {
        fake.stop();
    }

    UUID submit(String tag) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "%s", "invoice_id": "M-1", "currency": "EUR", "line_items": []}}""".formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static String png() {
        return "{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}";
    }

    @Test
    void aScriptedRunShowsInJobgatesSeries() {
        String ok = Jobs.tag();
        String limited = Jobs.tag();
        String bad = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(ok)).willReturn(aResponse().withStatus(200).withBody(png())));
        fake.stubFor(post(PATH).withRequestBody(containing(limited)).inScenario(limited).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")));
        fake.stubFor(post(PATH).withRequestBody(containing(limited)).inScenario(limited).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(png())));
        fake.stubFor(post(PATH).withRequestBody(containing(bad)).willReturn(aResponse().withStatus(400)
                .withBody("{\"error\": {\"message\": \"bad size\"}}")));

        Jobs.awaitStatus(submit(ok), "succeeded");
        Jobs.awaitStatus(submit(limited), "succeeded");
        Jobs.awaitStatus(submit(bad), "failed");
        assertThat(api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"no-such-preset\"}").status()).isEqualTo(422);

        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            ApiClient.Response scrape = api.get(null, "/observe/metrics");
            assertThat(scrape.status()).isEqualTo(200);
            String text = scrape.text();
            assertThat(text)
                    .contains("jobgate_jobs_finished_total{category=\"\",status=\"succeeded\",tenant=\"acme\"}")
                    .contains("jobgate_jobs_finished_total{category=\"terminal_request\",status=\"failed\",tenant=\"acme\"}")
                    .contains("jobgate_attempts_total{outcome=\"succeeded\",provider=\"fakeimg\",tenant=\"acme\"}")
                    .contains("jobgate_attempts_total{outcome=\"rate_limited\",provider=\"fakeimg\",tenant=\"acme\"}")
                    .contains("jobgate_attempts_total{outcome=\"terminal_request\",provider=\"fakeimg\",tenant=\"acme\"}")
                    .contains("jobgate_provider_rate_limited_total{provider=\"fakeimg\",tenant=\"acme\"} 1.0")
                    .contains("jobgate_admission_refusals_total{code=\"unknown_preset\",tenant=\"acme\"} 1.0")
                    .contains("jobgate_queue_oldest_age_seconds{tenant=\"acme\"}")
                    .contains("camel_exchanges_total"); // Camel's own meters stay
        });
    }
}
