package io.jobgate.worker;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.MovableClock;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A job's lifetime against its retries: a job waiting for a retry when its lifetime runs out ends as
 * {@code expired}, with no further call and no pending dispatch. Its own gateway: every retry waits
 * exactly a minute here (base = cap = 60 s, no jitter), so the job is still waiting when the clock
 * moves past its lifetime (WorkerTest's retries come within 200 ms).
 */
class JobLifetimeTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    final MovableClock clock = movableClock();
    WireMockServer fake;

    @Override
    protected Map<String, String> settings() {
        fake = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.sweeper.enabled", "true",
                "jobgate.sweeper.period-ms", "200",
                "jobgate.worker.backoff-base-ms", "60000",
                "jobgate.worker.backoff-cap-ms", "60000",
                "jobgate.worker.backoff-jitter", "false",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl(),
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers");
    }

    @Test
    void aJobWaitingPastItsLifetimeExpires() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(503)));
        ApiClient.Response accepted = api.postJob(TestTenants.ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""".formatted(tag));
        assertThat(accepted.status()).as(accepted.text()).isEqualTo(202);
        UUID id = UUID.fromString(accepted.json().path("job_id").asText());
        await().atMost(Duration.ofSeconds(10)).until(() -> "retry_wait".equals(Jobs.status(id)));
        clock.advance(Duration.ofHours(1));
        Jobs.awaitStatus(id, "failed");
        clock.reset();

        assertThat(Db.single("SELECT error_category FROM jobs WHERE job_id = ?", id).get("error_category")).isEqualTo("expired");
        assertThat(fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)))).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL", id))
                .as("its pending retry is gone").isZero();
    }
}
