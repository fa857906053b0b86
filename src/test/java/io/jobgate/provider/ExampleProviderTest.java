package io.jobgate.provider;

import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.matchingJsonPath;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The provider of docs/adding-a-provider.md, end to end: its two files (src/test/resources/example-provider)
 * loaded by the real gateway, its API played by WireMock; a job succeeds with the provider's image
 * as its output, and a refused prompt fails as declined by the provider's error table.
 */
class ExampleProviderTest extends GatewayTestBase {

    static final String EXAMPLE = "src/test/resources/example-provider";

    WireMockServer pixelforge;

    @Override
    protected Map<String, String> settings() throws Exception {
        pixelforge = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.provider.pixelforge.base-url", pixelforge.baseUrl(),
                "jobgate.provider.pixelforge.api-key", "test-key",
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers," + EXAMPLE,
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:" + EXAMPLE + "/*.camel.yaml");
    }

    UUID submit(String supplier) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "pixelforge",
                 "inputs": {"supplier_name": "%s", "invoice_id": "P-1", "currency": "EUR",
                            "line_items": [{"description": "Pixels", "quantity": 1, "unit_price": 1}]}}""".formatted(supplier));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    @Test
    void aJobSucceedsWithTheProvidersImage() {
        String supplier = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        pixelforge.stubFor(post(urlPathEqualTo("/v1/render")).withRequestBody(containing(supplier))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody("{\"image_base64\": \"" + Base64.getEncoder().encodeToString(png) + "\"}")));

        UUID id = submit(supplier);
        Jobs.awaitStatus(id, "succeeded");

        var job = api.get(ACME, "/v1/jobs/" + id).json();
        // The file's label and a digest of the route and the request-shaping settings (derived revision).
        assertThat(job.path("adapter_revision").asText()).matches("pixelforge-1@[0-9a-f]{10}");
        assertThat(job.path("output").path("width").asInt()).isEqualTo(1024);
        assertThat(api.getBytes(ACME, job.path("links").path("output").asText())).isEqualTo(png);
        pixelforge.verify(postRequestedFor(urlPathEqualTo("/v1/render"))
                .withHeader("Authorization", equalTo("Bearer test-key"))
                .withRequestBody(matchingJsonPath("$.width", equalTo("1024")))
                .withRequestBody(matchingJsonPath("$.height", equalTo("1536"))));
    }

    @Test
    void aRefusedPromptFailsAsDeclinedByTheErrorTable() {
        String supplier = Jobs.tag();
        pixelforge.stubFor(post(urlPathEqualTo("/v1/render")).withRequestBody(containing(supplier))
                .willReturn(aResponse().withStatus(400).withHeader("Content-Type", "application/json")
                        .withBody("{\"error\": {\"code\": \"prompt_rejected\", \"message\": \"no\"}}")));

        UUID id = submit(supplier);
        Jobs.awaitStatus(id, "failed");

        var job = api.get(ACME, "/v1/jobs/" + id).json();
        assertThat(job.path("error").path("category").asText()).isEqualTo("declined");
        assertThat(job.path("attempts").asInt()).as("a refusal is not retried").isEqualTo(1);
    }
}
