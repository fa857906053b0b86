package io.jobgate.provider;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.GptImageRules;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A provider dropped in while the gateway runs (route reload on): offered only while its settings
 * are valid, its route is loaded and started, and its size table renders the job's class. A route
 * that does not load, or a size table that lacks a class, gets no job (422 at admission, not a job
 * looping in submitting); a fixed file dropped in works at once.
 */
class AdapterDropInTest extends GatewayTestBase {

    static Path routes;
    static Path settings;

    WireMockServer fake;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider(new GptImageRules());
        GptImageRules.install(fake);
        routes = Files.createTempDirectory("dropin-routes");
        settings = Files.createTempDirectory("dropin-settings");
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers," + settings,
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:" + routes + "/*.camel.yaml",
                "camel.main.routes-reload-enabled", "true",
                "camel.main.routes-reload-directory", routes.toString(),
                "camel.main.routes-reload-pattern", "*.camel.yaml",
                "camel.main.routes-reload-remove-all-routes", "false");
    }

    void dropSettings(String sizes) throws Exception {
        Path tmp = settings.resolve("dropin.tmp");
        Files.writeString(tmp, """
                jobgate.provider.dropin.kinds = image
                jobgate.provider.dropin.base-url = %s/v1
                jobgate.provider.dropin.revision = dropin-r1
                jobgate.provider.dropin.price.image-micros = 1000
                %s""".formatted(fake.baseUrl(), sizes));
        Files.move(tmp, settings.resolve("dropin.properties"), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    void dropRoute(String yaml) throws Exception {
        Path tmp = routes.resolve("dropin.tmp");
        Files.writeString(tmp, yaml);
        Files.move(tmp, routes.resolve("dropin.camel.yaml"), java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    ApiClient.Response submit(String aspect) {
        return api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "%s", "provider": "dropin",
                 "inputs": {"supplier_name": "%s", "invoice_id": "D-1", "currency": "EUR",
                            "line_items": [{"description": "Drop", "quantity": 1, "unit_price": 1}]}}""".formatted(aspect, Jobs.tag()));
    }

    static final String ROUTE = """
            - route:
                id: provider-dropin
                routeConfigurationId: provider-adapter
                from:
                  uri: direct:provider-dropin
                  steps:
                    - removeHeaders: {pattern: "*"}
                    - setHeader: {name: CamelHttpMethod, constant: POST}
                    - setHeader: {name: Content-Type, constant: application/json}
                    - setBody:
                        simple: '{"model": "gpt-image-1", "prompt": ${exchangeProperty.JobgatePromptJson}, "size": "${exchangeProperty.JobgateWidth}x${exchangeProperty.JobgateHeight}", "output_format": "png", "n": 1}'
                    - to: "{{jobgate.provider.dropin.base-url}}/images/generations?throwExceptionOnFailure=false"
                    - convertBodyTo: {type: String}
                    - filter:
                        simple: "${header.CamelHttpResponseCode} == 200"
                        steps:
                          - setProperty: {name: JobgateOutputBase64, jsonpath: "$.data[0].b64_json"}
                          - setProperty: {name: JobgateOutcome, constant: succeeded}
            """;

    @Test
    void aDropInWhoseRouteDoesNotLoadOrWhoseSizeTableLacksAClassGetsNoJobUntilAFixedFileIsDroppedIn() throws Exception {
        dropSettings("jobgate.provider.dropin.size.square = 1024x1024\njobgate.provider.dropin.size.landscape = 1536x1024\n");
        dropRoute("- route:\n    id: provider-dropin\n    from: {uri: direct:provider-dropin, steps: [ {setBody: {constant: x}\n");

        // The catalog reads a new settings file at its next rescan (at most every 250 ms): until
        // then the provider is unknown; from then on known, but its route does not run.
        ApiClient.Response refused = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200))
                .until(() -> submit("square"), r -> !"unknown_provider".equals(r.code()));
        assertThat(refused.status()).as(refused.text()).isEqualTo(422);
        assertThat(refused.code()).isEqualTo("provider_not_running");
        assertThat(refused.text()).as("the drop-in that did not load is named with its reason")
                .contains("no adapter route is loaded for direct:provider-dropin")
                .contains("the last route reload failed");

        dropRoute(ROUTE);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(300))
                .until(() -> submit("square").status() == 202);
        ApiClient.Response square = submit("square");
        assertThat(square.status()).as(square.text()).isEqualTo(202);
        UUID id = UUID.fromString(square.json().path("job_id").asText());
        Jobs.awaitFinal(id);
        assertThat(Jobs.status(id)).isEqualTo("succeeded");

        ApiClient.Response portrait = submit("portrait");
        assertThat(portrait.status()).as(portrait.text()).isEqualTo(422);
        assertThat(portrait.code()).isEqualTo("aspect_class_not_rendered");
        assertThat(portrait.json().path("renders").toString()).contains("square").contains("landscape").doesNotContain("portrait");
        // Health is probed in the background (BackgroundHealthCheck): shown within a probe's period.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(api.get(null, "/observe/health?exposureLevel=full&data=true").text())
                .as("health shows, for a provider dropped in after the start, the classes it is left out for")
                .contains("left out for invoice-clean v2 portrait"));

        dropSettings("jobgate.provider.dropin.size.square = 1024x1024\njobgate.provider.dropin.size.landscape = 1536x1024\n"
                + "jobgate.provider.dropin.size.portrait = 1024x1536\n");
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(300)).until(() -> submit("portrait").status() == 202);
        ApiClient.Response fixed = submit("portrait");
        UUID portraitJob = UUID.fromString(fixed.json().path("job_id").asText());
        Jobs.awaitFinal(portraitJob);
        assertThat(Jobs.status(portraitJob)).isEqualTo("succeeded");
    }
}
