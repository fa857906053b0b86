package io.jobgate.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the drain prints per job is counted once a job: its dispatch message (not also the copy of its exchange the
 * call's hand-off completes after the call) and its output's store (not also the route the store goes on to).
 */
class DrainCountsTest extends GatewayTestBase {

    WireMockServer fake;

    @BeanInject
    CamelContext context;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        return Map.of("jobgate.worker.enabled", "true", "jobgate.provider.fakeimg.base-url", fake.baseUrl());
    }

    @Test
    void aJobsDispatchMessageAndItsOutputsStoreAreCountedOnceEach() throws Exception {
        DrainBench.Calls calls = new DrainBench.Calls();
        context.getManagementStrategy().addEventNotifier(calls);
        calls.start();
        try {
            String tag = "Counted-" + Jobs.tag();
            fake.stubFor(post("/v1/images/generations").withRequestBody(containing(tag)).atPriority(1).willReturn(aResponse()
                    .withStatus(200).withHeader("Content-Type", "application/json").withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                            + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}")));
            ApiClient.Response r = api.postJob(GLOBEX, "order-" + UUID.randomUUID(), """
                    {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                     "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR", "line_items": []}}""".formatted(tag));
            assertThat(r.status()).as(r.text()).isEqualTo(202);
            Jobs.awaitStatus(UUID.fromString(r.json().path("job_id").asText()), "succeeded");
            // The hand-off's send ends with the call's route: by then its copy of the exchange has completed too.
            await().atMost(Duration.ofSeconds(10)).until(() -> count(calls, "call hand-off") == 1);

            assertThat(calls.workerMessages.sum()).as("dispatch messages consumed").isEqualTo(1);
            assertThat(count(calls, "store output")).as("output stores").isEqualTo(1);
            assertThat(count(calls, "s3 put")).as("the output and its manifest").isEqualTo(2);
        } finally {
            context.getManagementStrategy().removeEventNotifier(calls);
            calls.stop();
        }
    }

    private static long count(DrainBench.Calls calls, String step) {
        java.util.concurrent.atomic.LongAdder[] counted = calls.sent.get(step);
        return counted == null ? 0 : counted[0].sum();
    }
}
