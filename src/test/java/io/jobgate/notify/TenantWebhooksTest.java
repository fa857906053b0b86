package io.jobgate.notify;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import com.standardwebhooks.Webhook;
import com.standardwebhooks.exceptions.WebhookVerificationException;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.job.JobStore;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import jakarta.jms.Topic;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.ok;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.awaitility.Awaitility.await;

/**
 * Tenants' webhooks over real HTTP against the real gateway (PostgreSQL, Artemis, the relay): a
 * receiver (WireMock on loopback, allowed here by {@code allow-http-loopback}) gets each status change
 * its endpoint asked for, signed by the Standard Webhooks scheme and verified with the specification's
 * own reference library ({@code com.standardwebhooks}), never with jobgate's code. Jobs end by their
 * tenant's cancel (no worker runs): a status change like any other, from the same outbox. Retries
 * wait one second here ({@code retry-schedule 1s,1s,1s,1s}: five attempts); a receiver has 5 s to answer.
 */
class TenantWebhooksTest extends GatewayTestBase {

    WireMockServer receiver;

    @BeanInject("jmsConnectionFactory")
    ConnectionFactory broker;

    @BeanInject("dataSource")
    javax.sql.DataSource dataSource;

    @Override
    protected Map<String, String> settings() {
        receiver = fakeProvider(); // the tenants' receiver: WireMock on loopback, as a fake provider is
        return Map.of(
                "jobgate.tenant-webhooks.allow-http-loopback", "true",
                "jobgate.tenant-webhooks.period-ms", "100",
                // Long beside what a delivery takes here: a test that orders its events against the deadline has room.
                "jobgate.tenant-webhooks.timeout-seconds", "5",
                "jobgate.tenant-webhooks.tenant-concurrency", "2",
                "jobgate.tenant-webhooks.retry-schedule", "1s,1s,1s,1s");
    }

    @BeforeEach
    void noEndpoints() {
        // Each test registers its own: the ones of earlier tests go, so a cancelled job reaches only this test's.
        for (String key : List.of(ACME, GLOBEX)) {
            for (JsonNode e : api.get(key, "/v1/webhooks/endpoints").json().path("endpoints")) {
                api.send(api.request("/v1/webhooks/endpoints/" + e.path("id").asText(), key).DELETE().build());
            }
        }
    }

    private String url(String path) {
        return "http://127.0.0.1:" + receiver.port() + path;
    }

    private JsonNode endpoint(String key, String path, String eventTypes) {
        Response r = postJson(key, "/v1/webhooks/endpoints", "{\"url\": \"" + url(path) + "\""
                + (eventTypes == null ? "" : ", \"event_types\": " + eventTypes) + "}");
        assertThat(r.status()).as(r.text()).isEqualTo(201);
        return r.json();
    }

    private Response postJson(String key, String path, String body) {
        return api.send(api.request(path, key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    private UUID cancelledJob(String key) {
        Response r = api.postJob(key, "hook-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Hooks GmbH", "invoice_id": "INV-2026-040", "currency": "EUR",
                            "line_items": [{"description": "Consulting", "quantity": 1, "unit_price": 10}]}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Response cancelled = api.post(key, "/v1/jobs/" + id + "/cancel");
        assertThat(cancelled.status()).as(cancelled.text()).isEqualTo(200);
        return id;
    }

    private List<LoggedRequest> received(String path) {
        return receiver.findAll(postRequestedFor(urlEqualTo(path)));
    }

    private static Map<String, List<String>> headers(LoggedRequest request) {
        return request.getHeaders().all().stream().collect(Collectors.toMap(h -> h.key().toLowerCase(), h -> h.values()));
    }

    private JsonNode deliveries(String key, UUID job) {
        Response r = api.get(key, "/v1/jobs/" + job + "/deliveries");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        return r.json().path("deliveries");
    }

    @Test
    void aJobsEndIsDeliveredOnceSignedAsTheReferenceLibraryVerifies() throws Exception {
        receiver.stubFor(post("/hooks/ok").willReturn(ok()));
        JsonNode endpoint = endpoint(ACME, "/hooks/ok", null);
        String secret = endpoint.path("secret").asText();
        assertThat(secret).startsWith("whsec_");
        assertThat(endpoint.path("event_types")).extracting(JsonNode::asText)
                .containsExactly("job.cancelled", "job.failed", "job.succeeded");

        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/ok").size() == 1);
        LoggedRequest delivery = received("/hooks/ok").get(0);
        new Webhook(secret).verify(delivery.getBodyAsString(), headers(delivery)); // throws when it does not verify
        JsonNode body = Json.parseObject(delivery.getBody());
        assertThat(body.path("type").asText()).isEqualTo("job.cancelled");
        assertThat(body.path("data").path("job_id").asText()).isEqualTo(job.toString());
        assertThat(body.path("data").path("status").asText()).isEqualTo("cancelled");
        assertThat(delivery.getHeader("webhook-id")).startsWith("msg_");

        await().atMost(Duration.ofSeconds(5)).until(() -> "delivered".equals(deliveries(ACME, job).path(0).path("state").asText()));
        JsonNode seen = deliveries(ACME, job);
        assertThat(seen).hasSize(1); // job.queued was not asked for
        assertThat(seen.path(0).path("id").asText()).isEqualTo(delivery.getHeader("webhook-id"));
        assertThat(seen.path(0).path("attempts").path(0).path("http_status").asInt()).isEqualTo(200);
        assertThat(api.get(GLOBEX, "/v1/jobs/" + job + "/deliveries").status()).as("another tenant's job").isEqualTo(404);
    }

    @Test
    void eachJobOfARoundIsDeliveredWithItsOwnJob() {
        // Jobs of two tenants ended together: the relay's status rounds read their jobs together, and each
        // delivery must carry its own job, to its own tenant's endpoint.
        receiver.stubFor(post("/hooks/acme-many").willReturn(ok()));
        receiver.stubFor(post("/hooks/globex-many").willReturn(ok()));
        endpoint(ACME, "/hooks/acme-many", null);
        endpoint(GLOBEX, "/hooks/globex-many", null);
        List<String> acmeJobs = new java.util.ArrayList<>();
        List<String> globexJobs = new java.util.ArrayList<>();
        for (int i = 0; i < 4; i++) {
            acmeJobs.add(cancelledJob(ACME).toString());
            globexJobs.add(cancelledJob(GLOBEX).toString());
        }
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/acme-many").size() == 4 && received("/hooks/globex-many").size() == 4);
        for (Map.Entry<String, List<String>> hook : Map.of("/hooks/acme-many", acmeJobs, "/hooks/globex-many", globexJobs).entrySet()) {
            List<JsonNode> data = received(hook.getKey()).stream().map(r -> Json.parseObject(r.getBody()).path("data")).toList();
            assertThat(data).extracting(d -> d.path("job_id").asText()).as(hook.getKey()).containsExactlyInAnyOrderElementsOf(hook.getValue());
            assertThat(data).extracting(d -> d.path("status").asText()).containsOnly("cancelled");
        }
    }

    @Test
    void aReceiverThatFailsThreeTimesGetsTheSameDeliveryWithTheSameIdUntilItTakesIt() throws Exception {
        String path = "/hooks/flaky";
        receiver.stubFor(post(path).inScenario("flaky").whenScenarioStateIs(Scenario.STARTED)
                .willReturn(aResponse().withStatus(500)).willSetStateTo("1"));
        receiver.stubFor(post(path).inScenario("flaky").whenScenarioStateIs("1")
                .willReturn(aResponse().withStatus(503)).willSetStateTo("2"));
        receiver.stubFor(post(path).inScenario("flaky").whenScenarioStateIs("2")
                .willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")).willSetStateTo("3"));
        receiver.stubFor(post(path).inScenario("flaky").whenScenarioStateIs("3").willReturn(ok()));
        String secret = endpoint(ACME, path, null).path("secret").asText();

        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(30)).until(() -> received(path).size() == 4);
        List<LoggedRequest> tries = received(path);
        assertThat(tries).extracting(r -> r.getHeader("webhook-id")).containsOnly(tries.get(0).getHeader("webhook-id"));
        assertThat(tries).extracting(LoggedRequest::getBodyAsString).containsOnly(tries.get(0).getBodyAsString());
        for (LoggedRequest r : tries) {
            new Webhook(secret).verify(r.getBodyAsString(), headers(r)); // each attempt's own timestamp, signed again
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> "delivered".equals(deliveries(ACME, job).path(0).path("state").asText()));
        assertThat(deliveries(ACME, job).path(0).path("attempts")).extracting(a -> a.path("http_status").asInt())
                .containsExactly(500, 503, 429, 200);
    }

    @Test
    void aReceiverThatNeverAnswersHoldsUpNoOtherTenant() {
        receiver.stubFor(post("/hooks/slow").willReturn(ok().withFixedDelay(20_000)));
        receiver.stubFor(post("/hooks/fast").willReturn(ok()));
        endpoint(ACME, "/hooks/slow", null);
        endpoint(GLOBEX, "/hooks/fast", null);
        List<UUID> slowJobs = List.of(cancelledJob(ACME), cancelledJob(ACME), cancelledJob(ACME), cancelledJob(ACME));
        await().atMost(Duration.ofSeconds(10)).until(() -> received("/hooks/slow").size() >= 2);

        UUID fastJob = cancelledJob(GLOBEX);
        await().atMost(Duration.ofSeconds(10)).until(() -> received("/hooks/fast").size() == 1);
        // Globex's delivery went while acme's receiver still held its first two (its two places): no attempt of
        // acme's is recorded yet (the two at its receiver end only by its answer or their deadline), so globex's
        // did not wait for their deadline, nor behind acme's other deliveries, which have not gone either.
        assertThat(slowJobs).as("acme's deliveries with an attempt recorded")
                .allSatisfy(job -> assertThat(deliveries(ACME, job).path(0).path("attempts")).isEmpty());
        assertThat(received("/hooks/slow")).as("acme's concurrency: 2 at once").hasSize(2);
        await().atMost(Duration.ofSeconds(5)).until(() -> "delivered".equals(deliveries(GLOBEX, fastJob).path(0).path("state").asText()));

        await().atMost(Duration.ofSeconds(15)).until(() -> deliveries(ACME, slowJobs.get(0)).path(0).path("attempts").size() >= 1);
        assertThat(deliveries(ACME, slowJobs.get(0)).path(0).path("attempts").path(0).path("error").asText())
                .isEqualTo("no answer within the deadline");
        assertThat(deliveries(ACME, slowJobs.get(0)).path(0).path("state").asText()).isEqualTo("pending");
    }

    @Test
    void aReceiverAnswering410DisablesItsEndpoint() {
        receiver.stubFor(post("/hooks/gone").willReturn(aResponse().withStatus(410)));
        String id = endpoint(ACME, "/hooks/gone", null).path("id").asText();
        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> !api.get(ACME, "/v1/webhooks/endpoints/" + id).json().path("enabled").asBoolean());
        assertThat(api.get(ACME, "/v1/webhooks/endpoints/" + id).json().path("disabled_reason").asText()).contains("410");
        assertThat(deliveries(ACME, job).path(0).path("state").asText()).isEqualTo("dropped");

        UUID later = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(5)).until(() -> Jobs.status(later).equals("cancelled"));
        assertThat(received("/hooks/gone")).hasSize(1);
        assertThat(deliveries(ACME, later)).as("a disabled endpoint gets nothing new").isEmpty();
    }

    @Test
    void aRedirectIsNotFollowed() {
        receiver.stubFor(post("/hooks/moved").willReturn(aResponse().withStatus(307).withHeader("Location", url("/hooks/elsewhere"))));
        receiver.stubFor(post("/hooks/elsewhere").willReturn(ok()));
        endpoint(ACME, "/hooks/moved", null);
        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> deliveries(ACME, job).path(0).path("attempts").size() >= 1);
        assertThat(deliveries(ACME, job).path(0).path("attempts").path(0).path("error").asText())
                .startsWith("redirect not followed (307");
        assertThat(received("/hooks/elsewhere")).isEmpty();
    }

    @Test
    void aJobThatNamesAnEndpointIsDeliveredThereOnly() {
        receiver.stubFor(post("/hooks/named").willReturn(ok()));
        receiver.stubFor(post("/hooks/other").willReturn(ok()));
        JsonNode named = endpoint(ACME, "/hooks/named", null);
        endpoint(ACME, "/hooks/other", null);
        Response r = api.postJob(ACME, "hook-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "webhook_url": "%s",
                 "inputs": {"supplier_name": "Hooks GmbH", "invoice_id": "INV-2026-041", "currency": "EUR",
                            "line_items": [{"description": "Consulting", "quantity": 1, "unit_price": 10}]}}""".formatted(url("/hooks/named")));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        assertThat(r.json().path("webhook_endpoint_id").asText()).isEqualTo(named.path("id").asText());
        UUID job = UUID.fromString(r.json().path("job_id").asText());
        assertThat(api.post(ACME, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);
        UUID unnamed = cancelledJob(ACME);

        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/other").size() == 1 && received("/hooks/named").size() == 2);
        assertThat(Json.parseObject(received("/hooks/other").get(0).getBody()).path("data").path("job_id").asText())
                .as("the other endpoint gets only the job that named none").isEqualTo(unnamed.toString());
        assertThat(deliveries(ACME, job)).hasSize(1);

        Response unknown = api.postJob(ACME, "hook-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "webhook_url": "%s",
                 "inputs": {"supplier_name": "Hooks GmbH", "invoice_id": "INV-2026-042", "currency": "EUR",
                            "line_items": []}}""".formatted(url("/hooks/never-registered")));
        assertThat(unknown.status()).isEqualTo(422);
        assertThat(unknown.code()).isEqualTo("unknown_webhook_url");
    }

    @Test
    void insecurePrivateAndUnknownUrlsAreRefusedWithTheirCodes() {
        assertThat(postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"http://203.0.113.10/hook\"}").code())
                .isEqualTo("webhook_url_insecure");
        for (String url : List.of("https://10.1.2.3/hook", "https://192.168.0.9/hook", "https://169.254.169.254/latest/meta-data",
                "https://[fd00::1]/hook", "https://100.64.0.1/hook", "https://0.0.0.0/hook")) {
            Response r = postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"" + url + "\"}");
            assertThat(r.status()).as(url).isEqualTo(422);
            assertThat(r.code()).as(url).isEqualTo("webhook_url_private");
        }
        assertThat(postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"https://no-such-host.invalid/hook\"}").code())
                .isEqualTo("webhook_url_unresolvable");
        assertThat(postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"ftp://203.0.113.10/hook\"}").code()).isEqualTo("invalid_input");
        assertThat(postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"https://user:pw@203.0.113.10/hook\"}").code())
                .isEqualTo("invalid_input");
        Response badType = postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"" + url("/x") + "\", \"event_types\": [\"job.done\"]}");
        assertThat(badType.status()).isEqualTo(422);
        assertThat(badType.json().path("field").asText()).isEqualTo("event_types");
        assertThat(api.get(ACME, "/v1/webhooks/endpoints").json().path("endpoints")).as("nothing was saved").isEmpty();
    }

    @Test
    void endpointsAreListedChangedAndDeletedWithoutShowingTheirSecret() {
        JsonNode made = endpoint(ACME, "/hooks/crud", "[\"job.succeeded\"]");
        String id = made.path("id").asText();
        assertThat(endpoint(GLOBEX, "/hooks/crud", null).path("id").asText()).as("the same URL for another tenant").isNotEqualTo(id);
        assertThat(postJson(ACME, "/v1/webhooks/endpoints", "{\"url\": \"" + url("/hooks/crud") + "\"}").status()).isEqualTo(409);
        JsonNode listed = api.get(ACME, "/v1/webhooks/endpoints").json().path("endpoints");
        assertThat(listed).hasSize(1);
        assertThat(listed.path(0).has("secret")).isFalse();
        assertThat(api.get(GLOBEX, "/v1/webhooks/endpoints/" + id).status()).as("another tenant's").isEqualTo(404);

        Response patched = api.send(api.request("/v1/webhooks/endpoints/" + id, ACME).header("Content-Type", "application/json")
                .method("PATCH", HttpRequest.BodyPublishers.ofString("{\"event_types\": [\"job.failed\", \"job.queued\"], \"enabled\": false}"))
                .build());
        assertThat(patched.status()).as(patched.text()).isEqualTo(200);
        assertThat(patched.json().path("event_types")).extracting(JsonNode::asText).containsExactly("job.failed", "job.queued");
        assertThat(patched.json().path("enabled").asBoolean()).isFalse();

        assertThat(api.send(api.request("/v1/webhooks/endpoints/" + id, ACME).DELETE().build()).status()).isEqualTo(204);
        assertThat(api.get(ACME, "/v1/webhooks/endpoints/" + id).status()).isEqualTo(404);
    }

    @Test
    void aRotatedSecretSignsBesideTheOldOneUntilTheOverlapEnds() throws Exception {
        receiver.stubFor(post("/hooks/rotate").willReturn(ok()));
        JsonNode made = endpoint(ACME, "/hooks/rotate", null);
        String id = made.path("id").asText();
        String old = made.path("secret").asText();
        Response rotated = postJson(ACME, "/v1/webhooks/endpoints/" + id + "/rotate-secret", "{\"overlap_seconds\": 3600}");
        assertThat(rotated.status()).as(rotated.text()).isEqualTo(200);
        String current = rotated.json().path("secret").asText();
        assertThat(current).startsWith("whsec_").isNotEqualTo(old);

        cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/rotate").size() == 1);
        LoggedRequest during = received("/hooks/rotate").get(0);
        new Webhook(old).verify(during.getBodyAsString(), headers(during));
        new Webhook(current).verify(during.getBodyAsString(), headers(during));

        String newest = postJson(ACME, "/v1/webhooks/endpoints/" + id + "/rotate-secret", "{\"overlap_seconds\": 0}")
                .json().path("secret").asText();
        cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/rotate").size() == 2);
        LoggedRequest after = received("/hooks/rotate").stream().filter(r -> !r.getHeader("webhook-id").equals(during.getHeader("webhook-id")))
                .findFirst().orElseThrow();
        new Webhook(newest).verify(after.getBodyAsString(), headers(after));
        assertThatThrownBy(() -> new Webhook(current).verify(after.getBodyAsString(), headers(after)))
                .isInstanceOf(WebhookVerificationException.class);
    }

    @Test
    void aReplaySendsTheEndpointsDeliveriesAgainWithTheirIds() {
        receiver.stubFor(post("/hooks/replay").willReturn(ok()));
        String id = endpoint(ACME, "/hooks/replay", null).path("id").asText();
        Instant before = Instant.now().minusSeconds(1);
        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> "delivered".equals(deliveries(ACME, job).path(0).path("state").asText()));

        Response replay = api.post(ACME, "/v1/webhooks/endpoints/" + id + "/replay?since=" + before);
        assertThat(replay.status()).as(replay.text()).isEqualTo(202);
        assertThat(replay.json().path("replayed").asInt()).isEqualTo(1);
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/replay").size() == 2);
        assertThat(received("/hooks/replay")).extracting(r -> r.getHeader("webhook-id")).containsOnly(
                deliveries(ACME, job).path(0).path("id").asText());
        assertThat(api.post(ACME, "/v1/webhooks/endpoints/" + id + "/replay?since=yesterday").code()).isEqualTo("invalid_input");
    }

    @Test
    void aDeliveryPastItsScheduleIsDeadAndAnOperatorRedrivesIt() {
        String path = "/hooks/down";
        receiver.stubFor(post(path).willReturn(aResponse().withStatus(500)));
        endpoint(ACME, path, null);
        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(30)).until(() -> "dead".equals(deliveries(ACME, job).path(0).path("state").asText()));
        assertThat(received(path)).hasSize(5);
        assertThat(api.get(ACME, "/v1/webhooks/deliveries/dead").json().path("deliveries")).extracting(d -> d.path("job_id").asText())
                .contains(job.toString());
        assertThat(api.get(GLOBEX, "/v1/webhooks/deliveries/dead").json().path("deliveries")).as("not globex's").isEmpty();
        assertThat(api.get(ACME, "/v1/admin/webhooks/dead").status()).as("a tenant key is no admin key").isEqualTo(401);
        assertThat(api.get(ADMIN, "/v1/admin/webhooks/dead?tenant=acme").json().path("deliveries")).extracting(d -> d.path("job_id").asText())
                .contains(job.toString());

        receiver.stubFor(post(path).willReturn(ok()));
        Response redriven = api.post(ADMIN, "/v1/admin/webhooks/dead/redrive?tenant=acme");
        assertThat(redriven.status()).as(redriven.text()).isEqualTo(200);
        assertThat(redriven.json().path("redriven").asInt()).isGreaterThanOrEqualTo(1);
        await().atMost(Duration.ofSeconds(15)).until(() -> "delivered".equals(deliveries(ACME, job).path(0).path("state").asText()));
        assertThat(received(path)).hasSize(6);
    }

    /**
     * An upgrade from a release whose fan-out consumed jobs.events through the shared durable subscription
     * jobgate.tenant-webhooks: an event its relay published (and marked) is still in that subscription. It is
     * delivered once, as every other, and the subscription goes, so the broker stops keeping every event; while
     * an old instance still consumes it, it stays.
     */
    @Test
    void theRetiredFanOutSubscriptionIsDeliveredThenRemoved() throws Exception {
        String path = "/hooks/upgraded";
        receiver.stubFor(post(path).willReturn(ok()));
        endpoint(ACME, path, "[\"job.cancelled\"]");
        UUID job = cancelledJob(ACME);
        await().atMost(Duration.ofSeconds(15)).until(() -> received(path).size() == 1);
        long writtenEvent = ((Number) Db.single("SELECT seq FROM webhook_deliveries WHERE job_id = ?", job).get("seq")).longValue();
        RetiredFanOutSubscription retired = new RetiredFanOutSubscription(broker, dataSource,
                new DeliveryFanOut(new JobStore(new org.springframework.jdbc.core.JdbcTemplate(dataSource)), java.time.Clock.systemUTC()));

        try (jakarta.jms.Connection connection = broker.createConnection();
             Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
            connection.start();
            Topic events = session.createTopic("jobs.events");
            // The old release's consumer: its subscription outlives it. While it runs, the subscription stays.
            MessageConsumer oldInstance = session.createSharedDurableConsumer(events, RetiredFanOutSubscription.NAME,
                    "JobgateStatus IS NOT NULL");
            assertThat(retired.drainAndRemove()).as("an old instance still consumes it").isFalse();
            oldInstance.close();
            // What its relay published: this job's event again (its delivery exists) and one of another change.
            long oldEvent = Long.MAX_VALUE - System.nanoTime() % 1_000_000;
            var producer = session.createProducer(events);
            producer.send(statusEvent(session, job, writtenEvent));
            producer.send(statusEvent(session, job, oldEvent));
            session.commit();

            assertThat(retired.drainAndRemove()).isTrue();
            await().atMost(Duration.ofSeconds(15)).until(() -> received(path).size() == 2);
            assertThat(Db.count("SELECT count(*) FROM webhook_deliveries WHERE job_id = ? AND seq = ?", job, writtenEvent))
                    .as("the event already delivered adds nothing").isEqualTo(1);
            assertThat(Db.count("SELECT count(*) FROM webhook_deliveries WHERE job_id = ?", job)).isEqualTo(2);

            // Gone: an event published now is not kept for it (a subscription made again starts empty).
            producer.send(statusEvent(session, job, oldEvent - 1));
            session.commit();
            try (MessageConsumer again = session.createSharedDurableConsumer(events, RetiredFanOutSubscription.NAME,
                    "JobgateStatus IS NOT NULL")) {
                assertThat(again.receive(500)).isNull();
            }
            session.unsubscribe(RetiredFanOutSubscription.NAME);
        }
    }

    /** An install that never had the retired subscription: nothing to drain, and nothing is created for it. */
    @Test
    void whereTheRetiredSubscriptionNeverWasNoneIsMade() throws Exception {
        RetiredFanOutSubscription retired = new RetiredFanOutSubscription(broker, dataSource,
                new DeliveryFanOut(new JobStore(new org.springframework.jdbc.core.JdbcTemplate(dataSource)), java.time.Clock.systemUTC()));
        assertThat(retiredSubscriptionExists()).isFalse();

        assertThat(retired.drainAndRemove()).isTrue();

        assertThat(retiredSubscriptionExists()).as("no subscription made, to be filled with every status event").isFalse();
    }

    /**
     * Under steady traffic the topic is never quiet (this release's relays publish every status event to it): the drain
     * takes what the subscription held and what arrives for a short while, then removes it; it does not run until the
     * gateway stops (seen: a shutdown forced after 20 s, the route still draining).
     */
    @Test
    void theRetiredSubscriptionIsRemovedWhileEventsKeepComing() throws Exception {
        RetiredFanOutSubscription retired = new RetiredFanOutSubscription(broker, dataSource,
                new DeliveryFanOut(new JobStore(new org.springframework.jdbc.core.JdbcTemplate(dataSource)), java.time.Clock.systemUTC()));
        java.util.concurrent.atomic.AtomicBoolean publishing = new java.util.concurrent.atomic.AtomicBoolean(true);
        java.util.concurrent.ExecutorService relay = java.util.concurrent.Executors.newSingleThreadExecutor();
        try (jakarta.jms.Connection connection = broker.createConnection();
             Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
            Topic events = session.createTopic("jobs.events");
            session.createSharedDurableConsumer(events, RetiredFanOutSubscription.NAME, "JobgateStatus IS NOT NULL").close();
            // A relay publishing a status event every 20 ms, of jobs long gone (nothing to deliver), from before the drain to after it.
            java.util.concurrent.Future<?> steady = relay.submit(() -> {
                try (jakarta.jms.Connection own = broker.createConnection();
                     Session publisher = own.createSession(true, Session.SESSION_TRANSACTED)) {
                    var producer = publisher.createProducer(publisher.createTopic("jobs.events"));
                    for (long id = 1; publishing.get(); id++) {
                        producer.send(statusEvent(publisher, UUID.randomUUID(), Long.MAX_VALUE - id));
                        publisher.commit();
                        Thread.sleep(20);
                    }
                }
                return null;
            });
            await().atMost(Duration.ofSeconds(10)).until(this::retiredSubscriptionHolds);

            java.util.concurrent.CompletableFuture<Boolean> drained = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return retired.drainAndRemove();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThat(drained.get(15, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            assertThat(retiredSubscriptionExists()).isFalse();
            assertThat(steady.isDone()).as("the events kept coming all along").isFalse();
        } finally {
            publishing.set(false);
            relay.shutdown();
            assertThat(relay.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        }
    }

    private boolean retiredSubscriptionExists() throws Exception {
        return retiredSubscription().isExists();
    }

    private boolean retiredSubscriptionHolds() throws Exception {
        return retiredSubscription().getMessageCount() > 0;
    }

    /** The broker's queue of the retired subscription, as Artemis names a shared durable one. */
    private org.apache.activemq.artemis.api.core.client.ClientSession.QueueQuery retiredSubscription() throws Exception {
        try (jakarta.jms.Connection connection = broker.createConnection();
             Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
            Session target = session instanceof org.springframework.jms.connection.SessionProxy cached ? cached.getTargetSession() : session;
            return ((org.apache.activemq.artemis.jms.client.ActiveMQSession) target).getCoreSession().queueQuery(
                    org.apache.activemq.artemis.jms.client.ActiveMQDestination.createQueueNameForSubscription(true,
                            connection.getClientID(), RetiredFanOutSubscription.NAME));
        }
    }

    private static TextMessage statusEvent(Session session, UUID job, long eventId) throws Exception {
        TextMessage m = session.createTextMessage(Json.write(Map.of("job_id", job.toString(), "tenant_id", "acme",
                "status", "cancelled", "attempt", 0, "at", Instant.now().toString(), "event_id", eventId)));
        m.setStringProperty("JobgateTenant", "acme");
        m.setStringProperty("JobgateStatus", "cancelled");
        m.setStringProperty("JobgateJobId", job.toString());
        return m;
    }
}
