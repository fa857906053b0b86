package io.jobgate.worker;

import io.jobgate.job.ErrorCategory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.job.JobFinalizer;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.relay.OutboxRelay;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The worker's usual path against a provider faked with WireMock over real HTTP, with the real relay, Artemis,
 * PostgreSQL and S3 API: one call per job, a duplicate dispatch after success makes none, a cancel during the call,
 * a drop-in adapter, one log line per attempt without user text. The other steps: {@link WorkerStartsTest},
 * {@link WorkerOutcomesTest}, {@link WorkerLeasesTest}.
 */
class WorkerTest extends WorkerTestBase {


    @Test
    void succeedsOnceAndADuplicateDispatchAfterSuccessMakesNoSecondCall() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("x-request-id", "req-" + tag)
                        .withHeader("Content-Type", "application/json").withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        Map<String, Object> done = job(id);
        assertThat(done.get("attempts")).isEqualTo(1);
        assertThat(done.get("lease_token")).isNull();
        assertThat((String) done.get("result")).contains("\"media_type\": \"image/png\"")
                .contains("\"output_key\": \"outputs/acme/" + id + "/output.png\"").contains("\"attempt\": 1");
        Map<String, Object> attempt = attempts(id).get(0);
        assertThat(attempt).containsEntry("outcome", "succeeded").containsEntry("http_status", 200)
                .containsEntry("adapter", "fakeimg").hasEntrySatisfying("adapter_revision", v -> assertThat((String) v).matches("fake-r1@[0-9a-f]{10}"));
        assertThat(Db.single("SELECT provider_request_id FROM attempts WHERE job_id = ?", id))
                .containsEntry("provider_request_id", "req-" + tag);
        LoggedRequest call = requests(tag).get(0);
        assertThat(call.getHeader("Idempotency-Key")).isEqualTo(id.toString());
        assertThat(call.getHeader("Authorization")).isEqualTo("Bearer test-key");
        assertThat(call.getHeader("JobgateJobId")).as("exchange properties never travel as HTTP headers").isNull();
        assertThat(call.getBodyAsString()).contains("\"size\":\"1024x1536\"");

        // The same dispatch message again (a relay that died before marking it published).
        long acknowledged = worker.acknowledgedWithoutCall();
        long eventId = ((Number) Db.single("SELECT max(event_id) AS e FROM outbox WHERE job_id = ? AND event_type = 'dispatch'",
                id).get("e")).longValue();
        ConnectionFactory factory = context.getRegistry().lookupByNameAndType("jmsConnectionFactory", ConnectionFactory.class);
        try (var connection = factory.createConnection(); Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
             MessageProducer producer = session.createProducer(session.createQueue(OutboxRelay.DISPATCH_QUEUE))) {
            TextMessage duplicate = session.createTextMessage("{\"job_id\":\"" + id + "\",\"provider\":\"fakeimg\"}");
            duplicate.setStringProperty(OutboxRelay.JOB_ID, id.toString());
            duplicate.setLongProperty(OutboxRelay.EVENT_ID, eventId);
            producer.send(duplicate);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> worker.acknowledgedWithoutCall() > acknowledged);
        assertThat(requests(tag)).hasSize(1);
        assertThat(Jobs.status(id)).isEqualTo("succeeded");
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE job_id = ?", id)).isEqualTo(1);
    }

    @Test
    void aCancelWhileTheCallIsInFlightIsLoggedAsAnExpectedEndingAtInfo() {
        String tag = Jobs.tag();
        // Past the call deadline: the call ends as ambiguous, after the tenant cancelled the job.
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(3000)));
        List<String> lines;
        UUID id;
        try (io.jobgate.support.LogCapture log = new io.jobgate.support.LogCapture()) {
            id = submit(tag, "fakeimg");
            Jobs.awaitStatus(id, "submitting");
            assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);
            UUID cancelled = id;
            await().atMost(Duration.ofSeconds(15)).until(() -> log.linesWithLevel().stream()
                    .anyMatch(l -> l.contains("jobgate.attempts attempt job=" + cancelled)));
            lines = log.linesWithLevel();
        }
        assertThat(lines).filteredOn(l -> l.contains("jobgate.attempts attempt job=" + id)).singleElement().asString()
                .startsWith("INFO ").contains("outcome=cancelled_in_flight").doesNotContain("category=");
        assertThat(Jobs.status(id)).isEqualTo("cancelled");
    }

    @Test
    void anAdapterDroppedIntoTheRunningGatewayServesJobs() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post("/dropin/generate").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody("{\"image\": \"" + Base64.getEncoder()
                        .encodeToString(Samples.png(1024, 1536)) + "\"}")));
        Files.writeString(dropInProviders.resolve("dropin.properties"), """
                jobgate.provider.dropin.kinds = image
                jobgate.provider.dropin.base-url = http://127.0.0.1:1
                jobgate.provider.dropin.revision = dropin-7
                jobgate.provider.dropin.call-deadline-ms = 2000
                jobgate.provider.dropin.price.image-micros = 500
                jobgate.provider.dropin.size.portrait = 1024x1536
                """);
        await().atMost(Duration.ofSeconds(5)).until(() -> providers.find("dropin").isPresent());
        // Written beside, then moved in at once: one file event, one load (a write in place can fire two
        // events, and the second reload removes the route for a moment, as the first job arrives).
        Path written = Files.writeString(Files.createTempFile(dropInRoutes.getParent(), "dropin", ".tmp"), """
                - route:
                    id: provider-dropin
                    from:
                      uri: direct:provider-dropin
                      steps:
                        - removeHeaders: {pattern: "*"}
                        - setHeader: {name: CamelHttpMethod, constant: POST}
                        - setBody:
                            simple: '{"text":${exchangeProperty.JobgatePromptJson}}'
                        - to: "{{jobgate.provider.dropin.base-url}}/dropin/generate?throwExceptionOnFailure=false"
                        - convertBodyTo: {type: String}
                        - filter:
                            simple: "${header.CamelHttpResponseCode} == 200"
                            steps:
                              - setProperty:
                                  name: JobgateOutputBase64
                                  jsonpath: "$.image"
                              - setProperty: {name: JobgateOutcome, constant: succeeded}
                """);
        Files.move(written, dropInRoutes.resolve("dropin.camel.yaml"), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        await().atMost(Duration.ofSeconds(20)).until(() -> context.getRoute("provider-dropin") != null
                && providers.notRunning("dropin").isEmpty());

        UUID id = submit(tag, "dropin");
        Jobs.awaitStatus(id, "succeeded");
        assertThat(fake.findAll(postRequestedFor(urlEqualTo("/dropin/generate")).withRequestBody(containing(tag)))).hasSize(1);
        assertThat(attempts(id).get(0)).containsEntry("adapter", "dropin").hasEntrySatisfying("adapter_revision", v -> assertThat((String) v).matches("dropin-7@[0-9a-f]{10}"));
    }

    @Test
    void oneLogLinePerAttemptWithIdsAndCategoriesButNeverUserText() {
        String tag = Jobs.tag();
        String failing = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        fake.stubFor(post(PATH).withRequestBody(containing(failing)).willReturn(aResponse().withStatus(422)
                .withBody("{\"error\": {\"message\": \"Rejected\"}}")));
        List<String> lines;
        UUID ok;
        UUID bad;
        try (io.jobgate.support.LogCapture log = new io.jobgate.support.LogCapture()) {
            ok = submit(tag, "fakeimg");
            bad = submit(failing, "fakeimg");
            Jobs.awaitStatus(ok, "succeeded");
            Jobs.awaitStatus(bad, "failed");
            lines = log.lines();
        }
        assertThat(lines).filteredOn(l -> l.startsWith("jobgate.attempts attempt job=" + ok)).singleElement().asString()
                .contains("preset=invoice-clean@v2", "aspect=portrait", "adapter=fakeimg", "revision=fake-r1", "attempt=1",
                        "duration_ms=", "outcome=succeeded");
        assertThat(lines).filteredOn(l -> l.startsWith("jobgate.attempts attempt job=" + bad)).singleElement().asString()
                .contains("http_status=422", "category=terminal_request", "next=failed:terminal_request");
        assertThat(lines).as("no log line carries the user's text").noneMatch(l -> l.contains(tag) || l.contains(failing));
    }
}
