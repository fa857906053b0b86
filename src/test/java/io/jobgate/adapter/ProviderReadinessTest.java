package io.jobgate.adapter;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A provider whose readiness call answers 503 four times is not failed job by job: its gate stays
 * closed (health says why), its job waits without spending an attempt; once the call answers 200
 * the gate opens and the job runs.
 */
class ProviderReadinessTest extends GatewayTestBase {

    WireMockServer fake;

    @BeanInject
    ProviderReadiness readiness;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        // Not ready until told otherwise (the first check runs at start).
        fake.stubFor(get("/v1/models").inScenario("ready").whenScenarioStateIs(Scenario.STARTED)
                .willReturn(aResponse().withStatus(503)));
        fake.stubFor(post("/v1/images/generations").willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                .withBody("{\"data\": [{\"b64_json\": \"" + java.util.Base64.getEncoder().encodeToString(Samples.png(1024, 1024)) + "\"}]}")));
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.sweeper.enabled", "true",
                "jobgate.worker.gate-full-delay-ms", "100",
                "jobgate.providers.readiness-period-ms", "3600000",
                "jobgate.providers.readiness-backoff-ms", "20",
                "jobgate.provider.fakeready.base-url", fake.baseUrl(),
                "jobgate.provider.fakeready.readiness-url", fake.baseUrl() + "/v1/models");
    }

    @Test
    void aProviderThatIsNotReadyKeepsItsJobsWaitingAndRunsThemOnceReady() {
        await().atMost(Duration.ofSeconds(20)).until(() -> fake.findAll(getRequestedFor(urlEqualTo("/v1/models"))).size() >= 4);
        assertThat(fake.findAll(getRequestedFor(urlEqualTo("/v1/models")))).allSatisfy(r ->
                assertThat(r.getHeader("Authorization")).isEqualTo("Bearer test-key"));
        await().atMost(Duration.ofSeconds(10)).until(() -> Db.count(
                "SELECT count(*) FROM provider_gates WHERE provider = 'fakeready' AND closed_until > now() AND closed_reason LIKE 'not ready:%'") == 1);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> // probed in the background (BackgroundHealthCheck)
                assertThat(api.get(null, "/observe/health?exposureLevel=full&data=true").text()).contains("not ready: HTTP 503"));

        ApiClient.Response r = api.postJob(ACME, "ready-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "fakeready",
                 "inputs": {"supplier_name": "Ready SA", "invoice_id": "R-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID job = UUID.fromString(r.json().path("job_id").asText());
        // It waits for the reopening: its dispatch postponed to the gate's next check (an hour here),
        // or, had a worker already taken it, back in retry_wait until then.
        await().atMost(Duration.ofSeconds(10)).until(() -> "retry_wait".equals(Jobs.status(job)) || Db.count("""
                SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL
                   AND available_at > now() + interval '30 minutes'""", job) == 1);
        assertThat(Db.count("SELECT attempts FROM jobs WHERE job_id = ?", job)).as("no attempt spent").isZero();
        assertThat(fake.findAll(postRequestedFor(urlEqualTo("/v1/images/generations")))).as("nothing sent while not ready").isEmpty();

        // It recovers: the next check opens the gate, and the job runs at once (not at the next period).
        fake.stubFor(get("/v1/models").inScenario("ready").willReturn(aResponse().withStatus(200)));
        readiness.checkAll();
        assertThat(Db.count("SELECT count(*) FROM provider_gates WHERE provider = 'fakeready' AND closed_until > now()")).isZero();
        Jobs.awaitStatus(job, "succeeded");
        assertThat(fake.findAll(postRequestedFor(urlEqualTo("/v1/images/generations"))
                .withHeader("Authorization", equalTo("Bearer test-key")))).hasSize(1);
    }
}
