package io.jobgate.workers;

import java.net.http.HttpRequest;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.simulator.InvoiceRenderer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Jobs;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * This test as an external worker of pull member {@code gpubox} (src/test/resources/workers), over real HTTP: jobs
 * naming it, its worker calls, and a rendered invoice of the size a lease asks.
 */
final class WorkerClient {

    static final String KEY = io.jobgate.support.TestTenants.GPUBOX_WORKER;

    private final ApiClient api;

    WorkerClient(ApiClient api) {
        this.api = api;
    }

    /** The inputs of every job {@link #submit} sends. */
    static final String INPUTS = """
            {"supplier_name": "Workers", "invoice_id": "W-1", "currency": "EUR",
             "line_items": [{"description": "GPU time", "quantity": 1, "unit_price": 10}]}""";

    /**
     * A job naming the pull member, waiting for a worker: its submit's wait for a worker ran out (the member's
     * {@code call-deadline-ms}, 2 s), so the job waits on its task as on an asynchronous provider's.
     */
    UUID submit(String aspectClass) {
        UUID id = submitted(aspectClass);
        Jobs.awaitStatus(id, "provider_pending");
        return id;
    }

    /** A job naming the pull member, accepted: its submit may still wait for a worker. */
    UUID submitted(String aspectClass) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "%s", "provider": "gpubox", "inputs": %s}""".formatted(aspectClass, INPUTS));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** A lease round of {@code worker} for up to {@code max} tasks: the leases it got. */
    JsonNode lease(String worker, int max) {
        ApiClient.Response r = call("/v1/workers/gpubox/leases", "{\"worker_id\": \"" + worker + "\", \"max\": " + max + "}");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        return r.json().path("leases");
    }

    ApiClient.Response heartbeat(JsonNode lease) {
        return call("/v1/workers/tasks/" + lease.path("task_id").asText() + "/heartbeat",
                "{\"lease_token\": \"" + lease.path("lease_token").asText() + "\"}");
    }

    /** The invoice of the lease's request, {@code width} × {@code height}. */
    static byte[] render(JsonNode lease, int width, int height) {
        return InvoiceRenderer.render(lease.path("request").path("inputs"), width, height, "image/png", false, 1);
    }

    /** The invoice of the size the lease asks. */
    static byte[] render(JsonNode lease) {
        return render(lease, lease.path("request").path("width").asInt(), lease.path("request").path("height").asInt());
    }

    ApiClient.Response putOutput(JsonNode lease, byte[] png) {
        return api.send(api.request("/v1/workers/tasks/" + lease.path("task_id").asText() + "/output", KEY)
                .header("Content-Type", "image/png").header("Lease-Token", lease.path("lease_token").asText())
                .PUT(HttpRequest.BodyPublishers.ofByteArray(png)).build());
    }

    ApiClient.Response complete(JsonNode lease) {
        return call("/v1/workers/tasks/" + lease.path("task_id").asText() + "/complete",
                "{\"lease_token\": \"" + lease.path("lease_token").asText() + "\", \"media_type\": \"image/png\"}");
    }

    ApiClient.Response fail(JsonNode lease, String category) {
        return call("/v1/workers/tasks/" + lease.path("task_id").asText() + "/fail",
                "{\"lease_token\": \"" + lease.path("lease_token").asText() + "\", \"category\": \"" + category + "\"}");
    }

    ApiClient.Response call(String path, String json) {
        return api.send(api.request(path, KEY).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }
}
