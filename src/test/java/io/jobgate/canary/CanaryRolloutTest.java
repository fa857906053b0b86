package io.jobgate.canary;

import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.Gateway;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.FakeProvider;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.GptImageRules;
import io.jobgate.support.Jobs;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Canary candidates end to end (docs/canary.md), on the real PostgreSQL, Artemis and S3 of the test
 * gateway, with candidate route files dropped in while it runs (hot reload). Two providers of one
 * fake image API: {@code canarybad}, whose candidate answers 500s, and {@code canaryok}, whose
 * candidate is healthy and gets promoted.
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CanaryRolloutTest {

    static final String ACME = "dev-acme-key";
    static final String ADMIN = "dev-admin-key";
    static final long PRICE = 1000;

    static Path routes;
    static Path settings;
    WireMockServer fake;
    ApiClient api;

    @BeforeAll
    void boot() throws Exception {
        fake = FakeProvider.start(new GptImageRules());
        GptImageRules.install(fake);
        fake.stubFor(post("/v1/images/broken").willReturn(aResponse().withStatus(500)
                .withHeader("Content-Type", "application/json").withBody("{\"error\": {\"message\": \"candidate broke\"}}")));
        routes = Files.createTempDirectory("jobgate-canary-routes");
        settings = Files.createTempDirectory("jobgate-canary-settings");
        // canarybad: a gate trips after 4 finished candidate attempts; a retry waits long enough that
        // only the rollback brings it forward.
        provider("canarybad", """
                jobgate.provider.canarybad.canary.share = 50
                jobgate.provider.canarybad.canary.min-sample = 4
                """);
        provider("canaryok", """
                jobgate.provider.canaryok.canary.share = 50
                jobgate.provider.canaryok.canary.min-sample = 1000
                """);
        Files.writeString(routes.resolve("canarybad.camel.yaml"), route("provider-canarybad", "direct:provider-canarybad", "canarybad",
                "images/generations", "medium"));
        Files.writeString(routes.resolve("canaryok.camel.yaml"), route("provider-canaryok", "direct:provider-canaryok", "canaryok",
                "images/generations", "medium"));
        api = new ApiClient(GatewayTestSupport.prepare(Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "15000",
                "jobgate.worker.backoff-cap-ms", "15000",
                "jobgate.canary.period-ms", "200",
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers," + settings,
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:" + routes + "/*.camel.yaml",
                "camel.main.routes-reload-enabled", "true",
                "camel.main.routes-reload-directory", routes.toString(),
                "camel.main.routes-reload-pattern", "*.camel.yaml",
                "camel.main.routes-reload-remove-all-routes", "false")));
    }

    @AfterAll
    void stop() {
        fake.stop();
    }

    void provider(String name, String canary) throws Exception {
        Files.writeString(settings.resolve(name + ".properties"), """
                jobgate.provider.%1$s.kinds = image
                jobgate.provider.%1$s.base-url = %2$s/v1
                jobgate.provider.%1$s.revision = %1$s-1
                jobgate.provider.%1$s.price.image-micros = %3$d
                jobgate.provider.%1$s.size.square = 1024x1024
                jobgate.provider.%1$s.max-concurrency = 32
                %4$s""".formatted(name, fake.baseUrl(), PRICE, canary));
    }

    static String route(String id, String from, String provider, String path, String quality) {
        return """
                - route:
                    id: %1$s
                    routeConfigurationId: provider-adapter
                    from:
                      uri: %2$s
                      steps:
                        - removeHeaders: {pattern: "*"}
                        - setHeader: {name: CamelHttpMethod, constant: POST}
                        - setHeader: {name: Content-Type, constant: application/json}
                        - setBody:
                            simple: '{"model": "gpt-image-1", "prompt": ${exchangeProperty.JobgatePromptJson}, "size": "${exchangeProperty.JobgateWidth}x${exchangeProperty.JobgateHeight}", "quality": "%5$s", "output_format": "png", "n": 1}'
                        - to: "{{jobgate.provider.%3$s.base-url}}/%4$s?throwExceptionOnFailure=false"
                        - convertBodyTo: {type: String}
                        - filter:
                            simple: "${header.CamelHttpResponseCode} == 200"
                            steps:
                              - setProperty: {name: JobgateOutputBase64, jsonpath: "$.data[0].b64_json"}
                              - setProperty: {name: JobgateOutcome, constant: succeeded}
                """.formatted(id, from, provider, path, quality);
    }

    /** A candidate route file dropped in while the gateway runs (written aside, then moved: one reload event). */
    void dropCandidate(String provider, String path, String quality) throws Exception {
        Path tmp = routes.resolve(provider + "-candidate.tmp");
        Files.writeString(tmp, route("provider-" + provider + "-candidate", "direct:provider-" + provider + "-candidate", provider,
                path, quality));
        Files.move(tmp, routes.resolve(provider + "-candidate.camel.yaml"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
    }

    /** The provider's canary as the admin API lists it, once its candidate route runs. */
    JsonNode awaitCanary(String provider) {
        return await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
            ApiClient.Response r = api.get(ADMIN, "/v1/admin/canaries");
            assertThat(r.status()).as(r.text()).isEqualTo(200);
            for (JsonNode c : r.json().path("canaries")) {
                if (c.path("provider").asText().equals(provider)) {
                    return c;
                }
            }
            return null;
        }, c -> c != null && c.path("route_loaded").asBoolean());
    }

    List<UUID> submit(String provider, int n) {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                    {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "%s",
                     "inputs": {"supplier_name": "%s", "invoice_id": "C-%d", "currency": "EUR",
                                "line_items": [{"description": "Canary", "quantity": 1, "unit_price": 1}]}}"""
                    .formatted(provider, Jobs.tag(), i));
            assertThat(r.status()).as(r.text()).isEqualTo(202);
            ids.add(UUID.fromString(r.json().path("job_id").asText()));
        }
        return ids;
    }

    static String in(List<UUID> ids) {
        return "(" + String.join(",", ids.stream().map(id -> "'" + id + "'").toList()) + ")";
    }

    ApiClient.Response admin(String path, String body) {
        return api.send(api.request(path, ADMIN).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    /** Every job succeeded once, charged once, never refunded; every attempt row kept (as many as the job counted). */
    void finishedExactly(List<UUID> ids) {
        ids.forEach(Jobs::awaitFinal);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND job_id IN " + in(ids))).isEqualTo(ids.size());
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE entry_type = 'debit' AND job_id IN " + in(ids))).isEqualTo(ids.size());
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE entry_type <> 'debit' AND job_id IN " + in(ids))).isZero();
        assertThat(-((Number) Db.single("SELECT sum(amount_micros) AS s FROM ledger WHERE job_id IN " + in(ids)).get("s")).longValue())
                .isEqualTo(ids.size() * PRICE);
        assertThat(Db.count("SELECT count(*) FROM jobs j WHERE j.job_id IN " + in(ids)
                + " AND j.attempts <> (SELECT count(*) FROM attempts a WHERE a.job_id = j.job_id)"))
                .as("every attempt a job made is kept").isZero();
    }

    @Test
    void aCandidateAnswering500sIsStoppedByItsGateAndItsJobsFinishOnTheStableRevisionUnderTheirIds() throws Exception {
        dropCandidate("canarybad", "images/broken", "medium");
        JsonNode canary = awaitCanary("canarybad");
        assertThat(canary.path("status").asText()).isEqualTo("running");
        String candidate = canary.path("revisions").get(0).asText();
        assertThat(candidate).startsWith("canarybad-1-candidate@");

        List<UUID> ids = submit("canarybad", 24);
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
                "stopped".equals(Db.single("SELECT status FROM canaries WHERE provider = 'canarybad'").get("status")));
        finishedExactly(ids);

        Map<String, Object> stop = Db.single("""
                SELECT gate, operator, requeued, published_at FROM canary_actions WHERE provider = 'canarybad' AND action = 'stopped'""");
        assertThat(stop.get("gate")).isEqualTo("error_rate");
        assertThat(stop.get("operator")).isEqualTo("canary-gates");
        long onCandidate = Db.count("SELECT count(DISTINCT job_id) FROM attempts WHERE adapter_revision = ? AND job_id IN " + in(ids),
                candidate);
        assertThat(onCandidate).as("the share sent some first attempts to the candidate").isGreaterThanOrEqualTo(4);
        assertThat(((Number) stop.get("requeued")).intValue())
                .as("jobs waiting for their retry after a candidate's 500 were made due at once").isPositive();
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND (error_category <> 'transient' OR outcome <> 'retry_wait')",
                candidate)).as("each candidate attempt failed as transient and was kept").isZero();
        // Every job ends on the stable revision: its result and its last attempt.
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id IN " + in(ids)
                + " AND (result->>'adapter_revision' = ? OR adapter_revision = ? OR result->>'output_key' NOT LIKE 'outputs/%')",
                candidate, candidate)).isZero();
        for (UUID id : ids) {
            assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isNotEmpty();
        }
        assertThat(Db.single("SELECT published_at FROM canary_actions WHERE provider = 'canarybad' AND action = 'stopped'")
                .get("published_at")).as("the stop went to the status topic").isNotNull();

        // After the stop: not one attempt more on the candidate.
        List<UUID> after = submit("canarybad", 12);
        finishedExactly(after);
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND job_id IN " + in(after), candidate)).isZero();

        assertThat(api.get(null, "/observe/metrics").text())
                .containsPattern("jobgate_canary_stops_total\\{[^}]*gate=\"error_rate\"[^}]*provider=\"canarybad\"[^}]*} 1\\.0");
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> // probed in the background (BackgroundHealthCheck)
                assertThat(api.get(null, "/observe/health?exposureLevel=full&data=true").text())
                        .contains("canary " + canary.path("revision").asText() + " stopped: error_rate"));
        JsonNode listed = awaitCanary("canarybad");
        assertThat(listed.path("status").asText()).isEqualTo("stopped");
        assertThat(listed.path("gate").asText()).isEqualTo("error_rate");
    }

    @Test
    void aHealthyCandidateKeepsItsOutputsInQuarantineUntilPromotedThenServesEveryAttempt() throws Exception {
        dropCandidate("canaryok", "images/generations", "high");
        JsonNode canary = awaitCanary("canaryok");
        String candidate = canary.path("revisions").get(0).asText();

        List<UUID> ids = submit("canaryok", 16);
        finishedExactly(ids);
        List<Map<String, Object>> held = Db.rows("SELECT job_id, attempt, held_output::text AS held FROM attempts WHERE adapter_revision = '"
                + candidate + "' AND job_id IN " + in(ids));
        assertThat(held).as("the share sent some attempts to the candidate").isNotEmpty();
        for (Map<String, Object> row : held) {
            assertThat((String) row.get("held")).contains("\"output_key\": \"quarantine/" + row.get("job_id") + "/");
            // The job's output is the stable revision's later attempt, not the candidate's.
            Map<String, Object> job = Db.single("SELECT result->>'adapter_revision' AS revision, (result->>'attempt')::int AS attempt, "
                    + "result->>'output_key' AS output_key FROM jobs WHERE job_id = ?", row.get("job_id"));
            assertThat(job.get("revision")).isNotEqualTo(candidate);
            assertThat((Integer) job.get("attempt")).isGreaterThan((Integer) row.get("attempt"));
            assertThat((String) job.get("output_key")).startsWith("outputs/");
        }
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND outcome <> 'candidate_output'", candidate))
                .isZero();

        assertThat(admin("/v1/admin/providers/canaryok/canary/promote", "{}").code()).isEqualTo("invalid_parameter");
        ApiClient.Response promoted = admin("/v1/admin/providers/canaryok/canary/promote",
                "{\"operator\": \"alice\", \"reason\": \"gates green for a day\"}");
        assertThat(promoted.status()).as(promoted.text()).isEqualTo(200);
        assertThat(promoted.json().path("status").asText()).isEqualTo("promoted");
        assertThat(promoted.json().path("changed_by").asText()).isEqualTo("alice");
        assertThat(promoted.json().path("actions").toString()).contains("\"action\":\"promoted\"").contains("\"operator\":\"alice\"");
        assertThat(admin("/v1/admin/providers/canaryok/canary/promote", "{\"operator\": \"alice\"}").code())
                .isEqualTo("canary_conflict");
        assertThat(admin("/v1/admin/providers/simulator/canary/stop", "{\"operator\": \"alice\"}").code())
                .isEqualTo("canary_not_found");

        List<UUID> after = submit("canaryok", 6);
        finishedExactly(after);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id IN " + in(after)
                + " AND attempts = 1 AND result->>'adapter_revision' = ?", candidate))
                .as("promoted: every attempt runs on the candidate and its output is the job's").isEqualTo(after.size());

        // Restart: the canary runs at its share again, judged only from now on.
        ApiClient.Response restarted = admin("/v1/admin/providers/canaryok/canary/restart", "{\"operator\": \"bob\"}");
        assertThat(restarted.status()).as(restarted.text()).isEqualTo(200);
        assertThat(restarted.json().path("status").asText()).isEqualTo("running");
        assertThat(restarted.json().path("gates").path("sample").asInt()).isZero();
    }
}
