package io.jobgate.workers;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Canary revisions of a pull member (docs/workers.md, "Candidate revisions"): an attempt sent to the candidate's
 * route waits for a worker that names the candidate's label when it leases; workers of the stable revision (naming it,
 * or naming none) never lease it.
 */
class CandidateWorkersTest extends GatewayTestBase {

    static final String WORKER_KEY = io.jobgate.support.TestTenants.GPUBOX_WORKER;

    @Override
    protected Map<String, String> settings() throws Exception {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.gpubox.canary.share", "100",
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml,"
                        + "file:src/test/resources/workers/canary/*.camel.yaml"));
    }

    @Test
    void aCandidatesTaskGoesOnlyToAWorkerThatNamesTheCandidate() {
        await("the canary runs").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
                .until(() -> Db.count("SELECT count(*) FROM canaries WHERE provider = 'gpubox' AND status = 'running'") == 1);
        UUID id = submit();
        Jobs.awaitStatus(id, "provider_pending");
        String revision = (String) Db.single("SELECT revision FROM worker_tasks WHERE job_id = ?", id).get("revision");
        assertThat(revision).startsWith("gpubox-1-candidate@");

        assertThat(lease(null).json().path("leases")).as("a worker naming no revision runs the stable one").isEmpty();
        assertThat(lease("gpubox-1").json().path("leases")).as("the stable revision's worker").isEmpty();
        assertThat(lease("gpubox-1@abc").code()).as("a label, not a revision's hash").isEqualTo("invalid_parameter");
        JsonNode leased = lease("gpubox-1-candidate").json().path("leases");
        assertThat(leased).hasSize(1);
        assertThat(leased.get(0).path("job_id").asText()).isEqualTo(id.toString());
        assertThat(leased.get(0).path("revision").asText()).isEqualTo(revision);
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);
    }

    private UUID submit() {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "gpubox",
                 "inputs": {"supplier_name": "Canary", "invoice_id": "C-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    private ApiClient.Response lease(String revision) {
        return api.send(api.request("/v1/workers/gpubox/leases", WORKER_KEY).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"worker_id\": \"w\", \"max\": 4"
                        + (revision == null ? "" : ", \"revision\": \"" + revision + "\"") + "}")).build());
    }
}
