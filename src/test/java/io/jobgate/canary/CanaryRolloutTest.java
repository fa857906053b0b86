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
import software.amazon.awssdk.services.s3.S3Client;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.GptImageRules;
import io.jobgate.support.Jobs;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathMatching;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;

/**
 * Canary candidates end to end (docs/canary.md), on the real PostgreSQL, Artemis and S3 of the test
 * gateway, with candidate route files dropped in while it runs (hot reload). Providers of one fake
 * image API, each with its own candidate: {@code canarybad} answers 500s, {@code canaryok} is healthy
 * and gets promoted, {@code canarywrong} renders the wrong size, {@code canaryburst} answers 500s to a
 * burst, {@code canarylimited} gets 429s with a Retry-After of an hour.
 */
class CanaryRolloutTest extends GatewayTestBase {

    static final long PRICE = 1000;

    static Path routes;
    static Path settings;
    WireMockServer fake;
    @BeanInject
    S3Client s3;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider(new GptImageRules());
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
        // canarywrong: its outputs fail the size check; no gate stops it while the jobs run.
        provider("canarywrong", """
                jobgate.provider.canarywrong.canary.share = 50
                jobgate.provider.canarywrong.canary.min-sample = 1000
                """);
        // canaryburst: every first attempt would go to it; its gates judge after 8.
        provider("canaryburst", """
                jobgate.provider.canaryburst.canary.share = 100
                jobgate.provider.canaryburst.canary.min-sample = 8
                """);
        provider("canarylimited", """
                jobgate.provider.canarylimited.canary.share = 50
                jobgate.provider.canarylimited.canary.min-sample = 1000
                """);
        fake.stubFor(post("/v1/images/limited").willReturn(aResponse().withStatus(429).withHeader("Retry-After", "3600")
                .withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": \"Rate limit reached\", \"type\": \"requests\", \"code\": \"rate_limit_exceeded\"}}")));
        // canaryasync: Replicate-shaped, asked by the poller; the candidate's tasks all fail at the provider.
        provider("canaryasync", """
                jobgate.provider.canaryasync.operations = submit,lookup
                jobgate.provider.canaryasync.call-deadline-ms = 5000
                jobgate.provider.canaryasync.canary.share = 50
                jobgate.provider.canaryasync.canary.min-sample = 1000
                """);
        Files.writeString(routes.resolve("canaryasync.camel.yaml"), asyncRoute("canaryasync", "/v1/predictions"));
        fake.stubFor(post("/v1/predictions").willReturn(aResponse().withStatus(201).withTransformers("response-template")
                .withBody("{\"id\": \"s-{{randomValue length=16 type='ALPHANUMERIC'}}\", \"status\": \"starting\"}")));
        fake.stubFor(post("/v1/predictions-candidate").willReturn(aResponse().withStatus(201).withTransformers("response-template")
                .withBody("{\"id\": \"c-{{randomValue length=16 type='ALPHANUMERIC'}}\", \"status\": \"starting\"}")));
        fake.stubFor(get(urlPathMatching("/v1/predictions/s-.*")).willReturn(aResponse().withStatus(200)
                .withTransformers("response-template").withBody("{\"id\": \"{{request.pathSegments.[2]}}\", \"status\": \"succeeded\", "
                        + "\"output\": [\"" + fake.baseUrl() + "/files/square.png\"]}")));
        fake.stubFor(get(urlPathMatching("/v1/predictions/c-.*")).willReturn(aResponse().withStatus(200)
                .withTransformers("response-template").withBody("{\"id\": \"{{request.pathSegments.[2]}}\", \"status\": \"failed\", "
                        + "\"error\": \"NSFW content detected\"}")));
        fake.stubFor(get("/files/square.png").willReturn(aResponse().withStatus(200).withHeader("Content-Type", "image/png")
                .withBody(io.jobgate.support.Samples.png(1024, 1024))));
        for (String name : List.of("canarywrong", "canaryburst", "canarylimited")) {
            Files.writeString(routes.resolve(name + ".camel.yaml"), route("provider-" + name, "direct:provider-" + name, name,
                    "images/generations", "medium"));
        }
        Files.writeString(routes.resolve("canarybad.camel.yaml"), route("provider-canarybad", "direct:provider-canarybad", "canarybad",
                "images/generations", "medium"));
        Files.writeString(routes.resolve("canaryok.camel.yaml"), route("provider-canaryok", "direct:provider-canaryok", "canaryok",
                "images/generations", "medium"));
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.backoff-base-ms", "15000"),
                Map.entry("jobgate.worker.backoff-cap-ms", "15000"),
                Map.entry("jobgate.canary.period-ms", "200"),
                Map.entry("jobgate.reconcile.enabled", "true"),
                Map.entry("jobgate.reconcile.period-ms", "100"),
                Map.entry("jobgate.reconcile.first-check-ms", "200"),
                Map.entry("jobgate.reconcile.check-cap-ms", "400"),
                Map.entry("jobgate.providers.dirs", "config/providers,src/test/resources/providers," + settings),
                Map.entry("camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:" + routes + "/*.camel.yaml"),
                Map.entry("camel.main.routes-reload-enabled", "true"),
                Map.entry("camel.main.routes-reload-directory", routes.toString()),
                Map.entry("camel.main.routes-reload-pattern", "*.camel.yaml"),
                Map.entry("camel.main.routes-reload-remove-all-routes", "false"));
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
        return route(id, from, provider, path, quality, "${exchangeProperty.JobgateWidth}x${exchangeProperty.JobgateHeight}");
    }

    /** @param size what it asks for (the size table's by default) */
    static String route(String id, String from, String provider, String path, String quality, String size) {
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
                            simple: '{"model": "gpt-image-1", "prompt": ${exchangeProperty.JobgatePromptJson}, "size": "%6$s", "quality": "%5$s", "output_format": "png", "n": 1}'
                        - to: "{{jobgate.provider.%3$s.base-url}}/%4$s?throwExceptionOnFailure=false"
                        - convertBodyTo: {type: String}
                        - filter:
                            simple: "${header.CamelHttpResponseCode} == 200"
                            steps:
                              - setProperty: {name: JobgateOutputBase64, jsonpath: "$.data[0].b64_json"}
                              - setProperty: {name: JobgateOutcome, constant: succeeded}
                """.formatted(id, from, provider, path, quality, size);
    }

    /** The Replicate-shaped test adapter (src/test/resources/adapters/fakeasync.camel.yaml) for {@code name}, submitting to {@code path}. */
    static String asyncRoute(String name, String path) throws Exception {
        return Files.readString(Path.of("src/test/resources/adapters/fakeasync.camel.yaml")).replace("fakeasync", name)
                .replace("base-url}}/v1/", "base-url}}/") // its base URL already ends in /v1
                .replace("base-url}}/predictions?", "base-url}}" + path.substring("/v1".length()) + "?");
    }

    /** A candidate route file dropped in while the gateway runs (written aside, then moved: one reload event). */
    void dropCandidate(String provider, String path, String quality) throws Exception {
        dropCandidate(provider, path, quality, "${exchangeProperty.JobgateWidth}x${exchangeProperty.JobgateHeight}");
    }

    void dropCandidate(String provider, String path, String quality, String size) throws Exception {
        Path tmp = routes.resolve(provider + "-candidate.tmp");
        Files.writeString(tmp, route("provider-" + provider + "-candidate", "direct:provider-" + provider + "-candidate", provider,
                path, quality, size));
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
        // A candidate's failure is its own: the job's next attempt (on the stable revision) is due at once, not
        // after the 15 s back-off of a retry; nothing is left waiting for the rollback to bring forward.
        assertThat(Db.count("""
                SELECT count(*) FROM attempts c JOIN attempts n ON n.job_id = c.job_id AND n.attempt = c.attempt + 1
                 WHERE c.adapter_revision = ? AND (n.adapter_revision = ? OR n.started_at > c.ended_at + interval '10 seconds')""",
                candidate, candidate)).as("every next attempt on the stable revision, without the back-off").isZero();
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND next_attempt_at > ended_at + interval '1 second'",
                candidate)).isZero();
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

    @Test
    void aCandidateRenderingTheWrongSizeNeverCostsAJobEveryJobSucceedsOnTheStableRevision() throws Exception {
        dropCandidate("canarywrong", "images/generations", "medium", "1536x1024"); // square jobs, landscape images
        String candidate = awaitCanary("canarywrong").path("revisions").get(0).asText();

        List<UUID> ids = submit("canarywrong", 28);
        finishedExactly(ids); // every job succeeded, charged once, never refunded
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE status = 'failed' AND job_id IN " + in(ids))).isZero();
        List<Map<String, Object>> tried = Db.rows("SELECT job_id, attempt, outcome, error_category, error_message FROM attempts "
                + "WHERE adapter_revision = '" + candidate + "' AND job_id IN " + in(ids));
        assertThat(tried).as("the share sent some first attempts to the candidate").hasSizeGreaterThanOrEqualTo(4);
        for (Map<String, Object> attempt : tried) {
            // Measured as the candidate's invalid_output (its gates see it), and the job went on at once.
            assertThat(attempt).containsEntry("outcome", "retry_wait").containsEntry("error_category", "invalid_output");
            assertThat((String) attempt.get("error_message")).contains("1536x1024");
            Map<String, Object> job = Db.single("SELECT result->>'adapter_revision' AS revision, (result->>'attempt')::int AS attempt, "
                    + "result->>'output_key' AS output_key FROM jobs WHERE job_id = ?", attempt.get("job_id"));
            assertThat(job.get("revision")).isNotEqualTo(candidate);
            assertThat((Integer) job.get("attempt")).isEqualTo((Integer) attempt.get("attempt") + 1);
            // The candidate's output stays in quarantine, never under outputs/.
            assertThat(keys("quarantine/" + attempt.get("job_id") + "/" + attempt.get("attempt") + "/")).isNotEmpty();
            assertThat(api.getBytes(ACME, "/v1/jobs/" + attempt.get("job_id") + "/output")).isNotEmpty();
        }
        JsonNode listed = awaitCanary("canarywrong");
        assertThat(listed.path("status").asText()).as("min-sample 1000: nothing judged yet").isEqualTo("running");
        assertThat(listed.path("gates").path("invalid_output_rate").asDouble()).isEqualTo(1.0);
    }

    List<String> keys(String prefix) {
        return s3.listObjectsV2(b -> b.bucket("jobgate").prefix(prefix)).contents().stream().map(o -> o.key()).toList();
    }

    @Test
    void aBurstReachesAFailingCandidateOnlyUpToItsMinimumSampleBeforeItsGatesJudge() throws Exception {
        dropCandidate("canaryburst", "images/broken", "medium");
        String candidate = awaitCanary("canaryburst").path("revisions").get(0).asText();

        // 48 jobs at once, share 100: every first attempt would go to the candidate; 8 workers start them
        // in parallel, far faster than the gates (every 200 ms) could look.
        List<UUID> ids = submit("canaryburst", 48);
        finishedExactly(ids);
        long onCandidate = Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ?", candidate);
        assertThat(onCandidate).as("attempts counted as they start: min-sample, no more, before the gates judge").isEqualTo(8L);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() ->
                "stopped".equals(Db.single("SELECT status FROM canaries WHERE provider = 'canaryburst'").get("status")));
        assertThat(Db.single("SELECT gate FROM canaries WHERE provider = 'canaryburst'").get("gate")).isEqualTo("error_rate");
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ?", candidate)).isEqualTo(onCandidate);
    }

    @Test
    void aCandidatesRateLimitClosesTheCandidateOnlyAndStableJobsAreNotDelayed() throws Exception {
        dropCandidate("canarylimited", "images/limited", "medium");
        String candidate = awaitCanary("canarylimited").path("revisions").get(0).asText();

        List<UUID> ids = submit("canarylimited", 16);
        finishedExactly(ids);
        // The candidate asked for an hour's pause; the jobs went on to the stable revision at once: each job the
        // candidate refused was due again when its attempt closed, not after the candidate's hour.
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND job_id IN " + in(ids)
                + " AND (next_attempt_at IS NULL OR next_attempt_at > ended_at)", candidate))
                .as("refused attempts whose job waits to be tried again").isZero();
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND job_id IN " + in(ids), candidate))
                .as("the first attempts the share sent to the candidate").isPositive();
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND (error_category <> 'rate_limited' "
                + "OR outcome <> 'retry_wait')", candidate)).isZero();
        assertThat(Db.count("SELECT count(*) FROM provider_gates WHERE provider = 'canarylimited' AND closed_until > now()"))
                .as("the provider's gate stays open").isZero();
        Map<String, Object> closed = Db.single("SELECT closed_until > now() + interval '50 minutes' AS closed, closed_reason "
                + "FROM canaries WHERE provider = 'canarylimited'");
        assertThat(closed.get("closed")).as("the candidate's own gate, until its Retry-After").isEqualTo(true);
        assertThat((String) closed.get("closed_reason")).startsWith("HTTP 429");
        long asked = fake.findAll(postRequestedFor(urlEqualTo("/v1/images/limited"))).size();

        // While it is closed the candidate gets nothing: a second batch runs on the stable revision alone.
        List<UUID> after = submit("canarylimited", 12);
        finishedExactly(after);
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE adapter_revision = ? AND job_id IN " + in(after), candidate)).isZero();
        assertThat(fake.findAll(postRequestedFor(urlEqualTo("/v1/images/limited")))).hasSize((int) asked);
        JsonNode listed = awaitCanary("canarylimited");
        assertThat(listed.path("status").asText()).isEqualTo("running");
        assertThat(listed.path("closed_until").asText()).isNotBlank();
    }

    @Test
    void aCandidatesTaskThatFailsAtTheProviderIsTheCandidatesFailureTheJobSucceedsOnTheStableRevision() throws Exception {
        Path tmp = routes.resolve("canaryasync-candidate.tmp");
        Files.writeString(tmp, asyncRoute("canaryasync", "/v1/predictions-candidate")
                .replace("direct:provider-canaryasync\n", "direct:provider-canaryasync-candidate\n")
                .replace("id: provider-canaryasync\n", "id: provider-canaryasync-candidate\n")
                .replace("canaryasync-prediction", "canaryasync-candidate-prediction"));
        Files.move(tmp, routes.resolve("canaryasync-candidate.camel.yaml"), StandardCopyOption.ATOMIC_MOVE);
        String candidate = awaitCanary("canaryasync").path("revisions").get(0).asText();

        List<UUID> ids = submit("canaryasync", 16);
        finishedExactly(ids); // every job succeeded, charged once, never refunded
        List<Map<String, Object>> tried = Db.rows("SELECT job_id, outcome, error_category, error_message FROM attempts "
                + "WHERE adapter_revision = '" + candidate + "' AND job_id IN " + in(ids));
        assertThat(tried).as("the share sent some first attempts to the candidate").isNotEmpty();
        for (Map<String, Object> attempt : tried) {
            // Its declared failure (declined, which fails a stable attempt's job) recorded for its gates, the job gone on.
            assertThat(attempt).containsEntry("outcome", "retry_wait").containsEntry("error_category", "declined");
            assertThat(Db.single("SELECT result->>'adapter_revision' AS revision FROM jobs WHERE job_id = ?", attempt.get("job_id"))
                    .get("revision")).isNotEqualTo(candidate);
        }
        assertThat(awaitCanary("canaryasync").path("attempts").path("errors").asInt()).isEqualTo(tried.size());
    }
}
