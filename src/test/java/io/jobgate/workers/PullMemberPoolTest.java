package io.jobgate.workers;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.simulator.InvoiceRenderer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A pull member in a pool (docs/workers.md, "In a pool"): when none of its workers was seen within its
 * {@code worker-absent-seconds} it counts as down — a submit is refused as a provider that is down refuses it (no task
 * written), so a pool job moves to another member; a task no worker ever leased is withdrawn, and its job moves the
 * same way. While a worker is seen, jobs wait for it; a task a worker leased is never withdrawn (never two renders).
 */
class PullMemberPoolTest extends GatewayTestBase {

    static final String WORKER_KEY = io.jobgate.support.TestTenants.GPUBOX_WORKER;
    static final int ABSENT_SECONDS = 30;

    final io.jobgate.support.MovableClock clock = movableClock();
    WireMockServer b;

    @Override
    protected Map<String, String> settings() throws Exception {
        b = fakeProvider();
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.poolb.base-url", b.baseUrl(),
                "jobgate.provider.gpubox.worker-absent-seconds", Integer.toString(ABSENT_SECONDS),
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/pools/providers,"
                        + "src/test/resources/workers/providers",
                "jobgate.pools.dirs", "src/test/resources/workers/failover",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/pools/adapters/*.camel.yaml,"
                        + "file:src/test/resources/workers/adapters/*.camel.yaml"));
    }

    @BeforeEach
    void poolbRenders() {
        b.resetAll();
        b.stubFor(post("/v1/images/generations").willReturn(aResponse().withStatus(200).withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}")));
    }

    @AfterEach
    void realTime() {
        clock.reset();
    }

    @Test
    void withNoWorkerSeenASubmitIsRefusedAndThePoolJobRendersOnAnotherMember() {
        clock.advance(Duration.ofMinutes(10)); // past every worker an earlier test showed
        UUID id = submit();
        Jobs.awaitStatus(id, "succeeded");
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome")).containsExactly("gpubox:retry_wait", "poolb:succeeded");
        assertThat(Db.count("SELECT count(*) FROM worker_tasks WHERE job_id = ?", id)).as("no task: none can render it later").isZero();
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
    }

    @Test
    void aTaskNoWorkerLeasedIsWithdrawnWhenItsWorkersAreGoneAndItsJobMoves() {
        assertThat(lease().path("leases")).as("a worker shows itself, nothing to lease yet").isEmpty();
        UUID id = submit();
        Jobs.awaitStatus(id, "provider_pending");
        clock.advance(Duration.ofSeconds(ABSENT_SECONDS + 1)); // and no worker calls since
        Jobs.awaitStatus(id, "succeeded");
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome"))
                .containsExactly("gpubox:pending", "gpubox:retry_wait", "poolb:succeeded");
        assertThat(Db.single("SELECT status, leases FROM worker_tasks WHERE job_id = ?", id))
                .containsEntry("status", "failed").containsEntry("leases", 0);
        assertThat(lease().path("leases")).as("a withdrawn task is no one's").isEmpty();
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
    }

    @Test
    void aTaskAWorkerLeasedIsNeverWithdrawnAndTheOtherMemberNeverHearsOfIt() {
        lease(); // a worker seen
        UUID id = submit();
        Jobs.awaitStatus(id, "provider_pending");
        JsonNode leased = lease().path("leases").get(0);
        assertThat(leased.path("job_id").asText()).isEqualTo(id.toString());
        String task = leased.path("task_id").asText();
        String token = leased.path("lease_token").asText();
        // Its worker silent past worker-absent-seconds, the poller looking it up (every 400 ms at most): the job stays.
        clock.advance(Duration.ofSeconds(ABSENT_SECONDS + 1));
        long checks = Db.count("SELECT checks FROM jobs WHERE job_id = ?", id);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
                .until(() -> Db.count("SELECT checks FROM jobs WHERE job_id = ?", id) >= checks + 2);
        assertThat(Jobs.status(id)).isEqualTo("provider_pending");
        // Its lease (60 s) outlived the silence: the worker stores and completes.
        clock.reset();
        byte[] png = InvoiceRenderer.render(leased.path("request").path("inputs"), 1024, 1536, "image/png", false, 1);
        assertThat(api.send(api.request("/v1/workers/tasks/" + task + "/output", WORKER_KEY).header("Content-Type", "image/png")
                .header("Lease-Token", token).PUT(HttpRequest.BodyPublishers.ofByteArray(png)).build()).status()).isEqualTo(200);
        assertThat(call("/v1/workers/tasks/" + task + "/complete", "{\"lease_token\": \"" + token + "\", \"media_type\": \"image/png\"}")
                .status()).isEqualTo(200);
        Jobs.awaitStatus(id, "succeeded");
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(b.findAll(anyRequestedFor(anyUrl()))).as("poolb never hears of a job a worker leased").isEmpty();
    }

    private UUID submit() {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "pool": "gpuboxes",
                 "inputs": {"supplier_name": "Pull pools", "invoice_id": "P-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        assertThat(r.json().path("provider").asText()).isEqualTo("gpubox");
        return UUID.fromString(r.json().path("job_id").asText());
    }

    private JsonNode lease() {
        return call("/v1/workers/gpubox/leases", "{\"worker_id\": \"pool-worker\", \"max\": 4}").json();
    }

    private ApiClient.Response call(String path, String json) {
        return api.send(api.request(path, WORKER_KEY).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }
}
