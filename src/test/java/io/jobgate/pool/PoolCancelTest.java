package io.jobgate.pool;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.putRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Cancelling a pool job cancels it at the member that has its task, not at the member admission placed it on.
 * A video pool "clips" of two fal queues, each a WireMock stand-in of its own: fal (weight 1, placed first) and falb
 * (weight 0, the fallback; its provider file and a copy of the fal adapter named for it in
 * src/test/resources/pools/clips). fal answers the submit with a 503 — a definite failure, so the job moves — and
 * falb accepts the task; the poller finds it still in progress. The tenant's cancel then reaches falb, at the cancel
 * URL of falb's submit reply with falb's key, and fal hears nothing but the submit it refused; the job ends cancelled,
 * debited once at the dearest member's price and refunded in full (docs/video.md, "Cancel"; docs/providers.md,
 * "Pools": money).
 */
class PoolCancelTest extends GatewayTestBase {

    static final String SUBMIT = "/fal-ai/veo3/fast";
    /** Where each stand-in serves a request: what its submit reply names. */
    static final String SERVED = "/q/fal-ai/veo3/requests/";

    WireMockServer a;
    WireMockServer b;

    @Override
    protected Map<String, String> settings() throws Exception {
        a = fakeProvider();
        b = fakeProvider();
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.worker.backoff-jitter", "false",
                "jobgate.provider.fal.base-url", a.baseUrl(),
                "jobgate.provider.fal.api-key", "fal-test-key",
                "jobgate.provider.fal.call-deadline-ms", "2500",
                "jobgate.provider.falb.base-url", b.baseUrl(),
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/pools/clips/providers",
                "jobgate.pools.dirs", "src/test/resources/pools/clips/config",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/pools/clips/adapters/*.camel.yaml"));
    }

    /** A fal submit reply from {@code fake}: the request id and the URLs to use for it, on that fake. */
    static String queued(WireMockServer fake, String id) {
        String at = fake.baseUrl() + SERVED + id;
        return "{\"request_id\": \"" + id + "\", \"status\": \"IN_QUEUE\", \"response_url\": \"" + at + "\", \"status_url\": \""
                + at + "/status\", \"cancel_url\": \"" + at + "/cancel\", \"queue_position\": 0}";
    }

    static List<String> attempts(UUID id) {
        return Db.rows("SELECT attempt, adapter, outcome, error_category FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt")
                .stream().map(r -> r.get("attempt") + ":" + r.get("adapter") + ":" + r.get("outcome") + ":" + r.get("error_category"))
                .toList();
    }

    @Test
    void cancellingAJobThatMovedToAnotherMemberCancelsItThereAndRefundsIt() {
        String tag = Jobs.tag();
        String task = "req-" + tag.toLowerCase();
        a.stubFor(post(urlPathEqualTo(SUBMIT)).willReturn(aResponse().withStatus(503).withHeader("X-Fal-Error-Type", "runner_unavailable")
                .withBody("{\"detail\": \"busy\"}")));
        b.stubFor(post(urlPathEqualTo(SUBMIT)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200)
                .withBody(queued(b, task))));
        b.stubFor(get(SERVED + task + "/status").willReturn(aResponse().withStatus(202).withHeader("Content-Type", "application/json")
                .withBody("{\"status\": \"IN_PROGRESS\", \"request_id\": \"" + task + "\"}")));
        b.stubFor(put(SERVED + task + "/cancel").willReturn(aResponse().withStatus(202).withHeader("Content-Type", "application/json")
                .withBody("{\"status\": \"CANCELLATION_REQUESTED\"}")));

        ApiClient.Response submitted = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clip", "aspect_class": "portrait", "pool": "clips",
                 "inputs": {"duration_seconds": 4, "resolution": "720p", "supplier_name": "%s",
                            "invoice_id": "F-1", "currency": "USD", "total": 99}}""".formatted(tag));
        assertThat(submitted.status()).as(submitted.text()).isEqualTo(202);
        UUID job = UUID.fromString(submitted.json().path("job_id").asText());
        Jobs.awaitStatus(job, "provider_pending");
        // Polled at falb while it renders: the task is falb's, and the job says so.
        await().untilAsserted(() -> assertThat(b.findAll(getRequestedFor(urlEqualTo(SERVED + task + "/status")))).isNotEmpty());
        assertThat(Db.single("SELECT status, provider, pool, provider_task FROM jobs WHERE job_id = ?", job))
                .containsEntry("status", "provider_pending").containsEntry("provider", "falb").containsEntry("pool", "clips")
                .containsEntry("provider_task", task);
        assertThat(attempts(job)).containsExactly("1:fal:retry_wait:transient", "2:falb:pending:null");

        ApiClient.Response cancelled = api.post(ACME, "/v1/jobs/" + job + "/cancel");
        assertThat(cancelled.status()).as(cancelled.text()).isEqualTo(200);
        assertThat(cancelled.json().path("status").asText()).isEqualTo("cancelled");
        assertThat(Jobs.status(job)).isEqualTo("cancelled");

        // Asked at falb, at the cancel URL of falb's submit reply, with falb's key; falb took note.
        List<LoggedRequest> cancels = b.findAll(putRequestedFor(urlEqualTo(SERVED + task + "/cancel")));
        assertThat(cancels).hasSize(1);
        assertThat(cancels.get(0).getHeader("Authorization")).isEqualTo("Key falb-test-key");
        assertThat(api.get(null, "/observe/metrics").text())
                .containsPattern("jobgate_provider_cancels_total\\{[^}]*outcome=\"cancelled\"[^}]*provider=\"falb\"[^}]*} 1\\.0")
                .doesNotContainPattern("jobgate_provider_cancels_total\\{[^}]*provider=\"fal\"[^}]*}");
        // fal heard only the submit it refused: no cancel, no poll.
        assertThat(a.findAll(anyRequestedFor(anyUrl()))).hasSize(1);
        assertThat(a.findAll(postRequestedFor(urlPathEqualTo(SUBMIT)))).hasSize(1);

        // Money: one debit at the dearest member's price (falb: 4 s at 150000), refunded in full for a cancel.
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT -amount_micros FROM ledger WHERE job_id = ? AND entry_type = 'debit'", job)).isEqualTo(600_000);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT amount_micros FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(600_000);

        // A second cancel changes nothing of the money: one refund; fal still never hears of it.
        assertThat(api.post(ACME, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(a.findAll(anyRequestedFor(anyUrl()))).hasSize(1);
    }
}
