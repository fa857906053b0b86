package io.jobgate.api;

import java.nio.file.Files;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.client.ApiClient;
import io.jobgate.client.ApiException;
import io.jobgate.client.api.DefaultApi;
import io.jobgate.client.model.Job;
import io.jobgate.client.model.JobPage;
import io.jobgate.client.model.JobRequest;
import io.jobgate.client.model.JobStatus;
import io.jobgate.client.model.Problem;
import io.jobgate.common.Digests;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The quick start with a client generated from the OpenAPI document (openapi-generator's java/native,
 * made by the build from docs/openapi.json into target/generated-test-sources, never written by hand):
 * submit an invoice job, poll it until it ended (the bundled simulator renders it), fetch its output.
 * docs/api.md ("The OpenAPI document") shows the same calls.
 */
class OpenApiClientTest extends GatewayTestBase {

    static final EnumSet<JobStatus> TERMINAL = EnumSet.of(JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED);

    @Override
    protected Map<String, String> settings() {
        return GatewayTestSupport.SIMULATING;
    }

    DefaultApi jobgate(String apiKey) {
        ApiClient client = new ApiClient();
        client.updateBaseUri(api.base()); // the document's server is http://localhost:8080
        client.setRequestInterceptor(request -> request.header("Authorization", "Bearer " + apiKey));
        return new DefaultApi(client);
    }

    @Test
    void theGeneratedClientSubmitsPollsAndFetchesAJob() throws Exception {
        DefaultApi jobgate = jobgate(ACME);

        JobRequest request = new JobRequest()
                .presetId("invoice-clean")
                .aspectClass("portrait")
                .inputs(Map.of("supplier_name", "Acme Supplies GmbH", "invoice_id", "INV-42", "currency", "EUR",
                        "line_items", List.of(Map.of("description", "Widgets", "quantity", 4, "unit_price", 12.5))));
        Job job = jobgate.postJobs("order-" + UUID.randomUUID(), request, null);
        assertThat(job.getPreset().getId()).isEqualTo("invoice-clean");
        assertThat(job.getLinks().getSelf()).isEqualTo("/v1/jobs/" + job.getJobId());

        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!TERMINAL.contains(job.getStatus()) && System.nanoTime() < deadline) {
            job = jobgate.getJob(job.getJobId(), 10); // a waiting read: answers when the job ends, or after 10 s
        }
        assertThat(job.getStatus()).as("%s", job).isEqualTo(JobStatus.SUCCEEDED);
        assertThat(job.getOutput().getMediaType()).isEqualTo("image/png");
        assertThat(job.getOutput().getWidth()).isEqualTo(1024);
        assertThat(job.getLinks().getOutput()).isEqualTo("/v1/jobs/" + job.getJobId() + "/output");

        byte[] png = Files.readAllBytes(jobgate.getJobOutput(job.getJobId()).toPath());
        assertThat(png).hasSize(job.getOutput().getBytes().intValue());
        assertThat(Digests.sha256Hex(png)).isEqualTo(job.getOutput().getSha256());

        JobPage page = jobgate.getJobs(JobStatus.SUCCEEDED, 10, null);
        assertThat(page.getJobs()).extracting(Job::getJobId).contains(job.getJobId());
        assertThat(jobgate.getUsage(null, null).getBalance().getAmountMicros()).isNotNull();
    }

    @Test
    void aRefusalIsAnApiExceptionWithTheProblemDocument() {
        UUID nobody = UUID.randomUUID();
        assertThatThrownBy(() -> jobgate(ACME).getJob(nobody, null)).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.getCode()).isEqualTo(404);
            Problem problem = readProblem(e);
            assertThat(problem.getCode()).isEqualTo("job_not_found");
            assertThat(problem.getStatus()).isEqualTo(404);
        });
        assertThatThrownBy(() -> jobgate("no-such-key").getJobs(null, null, null))
                .isInstanceOfSatisfying(ApiException.class, e -> assertThat(readProblem(e).getCode()).isEqualTo("unauthorized"));
    }

    static Problem readProblem(ApiException e) {
        try {
            return new ApiClient().getObjectMapper().readValue(e.getResponseBody(), Problem.class);
        } catch (Exception x) {
            throw new AssertionError(e.getResponseBody(), x);
        }
    }
}
