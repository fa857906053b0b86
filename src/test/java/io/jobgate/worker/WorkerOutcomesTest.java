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
 * What a provider's answer means for its job, as the worker records it: a refusal fails at once, server errors
 * and refused connections retry with growing delays up to the cap, a 429 waits its Retry-After (seconds, an HTTP
 * date, unreadable, none) and closes the provider's gate, a timeout after sending is an unknown submission, two
 * unparseable replies in a row fail the job.
 */
class WorkerOutcomesTest extends WorkerTestBase {


    @Test
    void aBadRequestFailsAtOnceKeepsTheReplyAndIsNeverRetried() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(400)
                .withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": \"Invalid size\", \"type\": \"invalid_request_error\"}}")));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "failed");

        Map<String, Object> failed = job(id);
        assertThat(failed.get("error_category")).isEqualTo("terminal_request");
        assertThat(failed.get("attempts")).isEqualTo(1);
        Map<String, Object> attempt = attempts(id).get(0);
        assertThat(attempt).containsEntry("outcome", "failed").containsEntry("http_status", 400)
                .containsEntry("error_category", "terminal_request");
        assertThat((String) attempt.get("response_excerpt")).contains("Invalid size");
        assertThat(requests(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL", id))
                .isZero();
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isEqualTo(1);
    }

    @Test
    void serverErrorsAreRetriedWithGrowingDelaysUntilTheAttemptCap() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(503).withBody("busy")));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "failed");

        Map<String, Object> failed = job(id);
        assertThat(failed.get("error_category")).isEqualTo("exhausted");
        var view = api.get(ACME, "/v1/jobs/" + id).json();
        assertThat(view.path("error").path("category").asText()).isEqualTo("exhausted");
        assertThat(view.path("attempts").asInt()).isEqualTo(4);
        assertThat((String) failed.get("error_message")).contains("4 of 4 attempts").contains("transient");
        List<LoggedRequest> calls = requests(tag);
        assertThat(calls).hasSize(4);
        // Recorded due times against the provider's request log (no wall-clock gaps): each retry was
        // due at least its backoff ceiling (200, 400, 800 ms) after the call it follows, and did not
        // reach the provider before it was due.
        for (int i = 1; i < calls.size(); i++) {
            Instant due = due(id, i);
            assertThat(due).as("retry %d due", i).isAfterOrEqualTo(calls.get(i - 1).getLoggedDate().toInstant().plusMillis(200L << (i - 1)));
            assertThat(calls.get(i).getLoggedDate().toInstant()).as("call %d", i + 1).isAfterOrEqualTo(due.truncatedTo(ChronoUnit.MILLIS));
        }
        assertThat(attempts(id)).extracting(a -> a.get("outcome"))
                .containsExactly("retry_wait", "retry_wait", "retry_wait", "failed");
        assertThat(attempts(id)).allSatisfy(a -> assertThat(a.get("error_category")).isEqualTo("transient"));
    }

    @Test
    void aRateLimitWithSecondsClosesTheProviderGateForEveryJobUntilRetryAfter() {
        String tag = Jobs.tag();
        String other = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429).withHeader("Retry-After", "2")
                        .withBody("{\"error\": {\"message\": \"Rate limit reached\"}}")));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        fake.stubFor(post(PATH).withRequestBody(containing(other)).willReturn(aResponse().withStatus(200).withBody(pngReply())));

        UUID limited = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "retry_wait".equals(Jobs.status(limited)));
        Instant allowed = ((java.sql.Timestamp) attempts(limited).get(0).get("next_attempt_at")).toInstant();
        var waiting = api.get(ACME, "/v1/jobs/" + limited).json();
        assertThat(waiting.path("status").asText()).isEqualTo("retry_wait");
        assertThat(waiting.path("error").isNull()).as("waiting for a retry is not shown as a failure").isTrue();
        assertThat(Instant.parse(waiting.path("next_attempt_at").asText())).isEqualTo(allowed.truncatedTo(ChronoUnit.MICROS));
        UUID bystander = submit(other, "fakeimg");
        Jobs.awaitStatus(limited, "succeeded");
        Jobs.awaitStatus(bystander, "succeeded");

        Instant first = requests(tag).get(0).getLoggedDate().toInstant();
        assertThat(allowed).isAfterOrEqualTo(first.plusSeconds(2));
        assertThat(requests(tag).get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(allowed);
        assertThat(requests(other)).hasSize(1);
        assertThat(requests(other).get(0).getLoggedDate().toInstant())
                .as("a job of the same provider waits for the gate too").isAfterOrEqualTo(allowed);
        assertThat(job(bystander).get("attempts")).as("waiting at a closed gate spends no attempt").isEqualTo(1);
        assertThat(Db.rows("SELECT available_at FROM outbox WHERE job_id = '" + bystander + "' AND event_type = 'dispatch'"))
                .as("admitted at a closed gate: due at its reopening, not dispatched only to be snoozed").singleElement()
                .satisfies(e -> assertThat(((java.sql.Timestamp) e.get("available_at")).toInstant()).isAfterOrEqualTo(allowed));
        assertThat(attempts(limited).get(0)).containsEntry("error_category", "rate_limited").containsEntry("retry_after", "2");
    }

    /** As Java servers write it (one-digit day on the 1st-9th); each day's parse is RetryAfterTest's. */
    @Test
    void aRateLimitWithAnHttpDateIsHonoured() {
        String tag = Jobs.tag();
        Instant date = clock.instant().plusSeconds(3).truncatedTo(ChronoUnit.SECONDS);
        String httpDate = DateTimeFormatter.RFC_1123_DATE_TIME.format(date.atOffset(ZoneOffset.UTC));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429).withHeader("Retry-After", httpDate)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        assertThat(requests(tag)).hasSize(2);
        assertThat(requests(tag).get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(date);
        assertThat(attempts(id).get(0)).containsEntry("retry_after", httpDate);
    }

    @Test
    void aRateLimitWithAnUnreadableRetryAfterWaitsTheProvidersRateLimitBackoff() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429).withHeader("Retry-After", "in a little while")));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        List<LoggedRequest> calls = requests(tag);
        assertThat(calls).hasSize(2);
        Map<String, Object> first = Db.rows("SELECT error_category, retry_after, retry_after_understood, next_attempt_at "
                + "FROM attempts WHERE job_id = '" + id + "' AND attempt = 1").get(0);
        assertThat(first).containsEntry("error_category", "rate_limited")
                .containsEntry("retry_after", "in a little while").containsEntry("retry_after_understood", false);
        // Due times, not wall-clock gaps: fakeimg's rate-limit-backoff-seconds is 2 (the transient
        // backoff here would be 200 ms), and the retry reached the provider no earlier than due.
        Instant due = ((java.sql.Timestamp) first.get("next_attempt_at")).toInstant();
        assertThat(due).isAfterOrEqualTo(calls.get(0).getLoggedDate().toInstant().plusSeconds(2));
        assertThat(calls.get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(due.truncatedTo(ChronoUnit.MILLIS));
    }

    @Test
    void aRateLimitWithoutRetryAfterFallsBackToTheBackoff() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("open").willReturn(aResponse().withStatus(429)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("open")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        List<LoggedRequest> calls = requests(tag);
        assertThat(calls).hasSize(2);
        assertThat(due(id, 1)).isAfterOrEqualTo(calls.get(0).getLoggedDate().toInstant().plusMillis(200));
        assertThat(calls.get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(due(id, 1).truncatedTo(ChronoUnit.MILLIS));
        assertThat(attempts(id).get(0)).containsEntry("error_category", "rate_limited").containsEntry("retry_after", null);
    }

    @Test
    void aRetryAfterBeyondTheLifetimeFailsTheJobNowAsExpired() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(429).withHeader("Retry-After", "7200")));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "failed");

        assertThat(job(id).get("error_category")).isEqualTo("expired");
        assertThat((String) job(id).get("error_message")).contains("lifetime");
        assertThat(requests(tag)).hasSize(1);
        // The gate stays closed for the provider's sake; reopen it for the other tests.
        Db.execute("UPDATE provider_gates SET closed_until = '-infinity' WHERE provider = 'fakeimg'");
    }

    @Test
    void aTimeoutAfterSendIsSubmissionUnknownAndIsNotResubmitted() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(3000)));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "submission_unknown");

        assertThat(attempts(id).get(0)).containsEntry("outcome", "submission_unknown").containsEntry("error_category", "ambiguous");
        assertThat(job(id).get("lease_token")).isNull();
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3))
                .until(() -> requests(tag).size() == 1 && "submission_unknown".equals(Jobs.status(id)));
    }

    @Test
    void twoUnparseableRepliesInARowFailTheJob() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody("Sorry, as a model I cannot draw invoices today.")));
        UUID id;
        List<String> lines;
        try (io.jobgate.support.LogCapture log = new io.jobgate.support.LogCapture()) {
            id = submit(tag, "fakeimg");
            Jobs.awaitStatus(id, "failed");
            lines = log.lines();
        }

        assertThat(lines).filteredOn(l -> l.contains("unparseable provider reply job=" + id)).hasSize(2)
                .allMatch(l -> l.contains("first_200_chars=\"Sorry, as a model I cannot draw invoices today.\""));
        assertThat(lines).as("the adapter's failure is an outcome, not also a Camel error with a stack trace")
                .noneMatch(l -> l.contains("DefaultErrorHandler"));
        assertThat(job(id).get("error_category")).isEqualTo("unparseable_response");
        assertThat(requests(tag)).hasSize(2);
        assertThat(attempts(id)).extracting(a -> a.get("error_category"))
                .containsExactly("unparseable_response", "unparseable_response");
    }

    @Test
    void aRefusedConnectionIsTransientAndRetriedUntilTheCap() {
        UUID id = submit(Jobs.tag(), "deadimg");
        Jobs.awaitStatus(id, "failed");

        assertThat(job(id).get("error_category")).isEqualTo("exhausted");
        assertThat(attempts(id)).hasSize(4).allSatisfy(a -> {
            assertThat(a.get("error_category")).isEqualTo("transient");
            assertThat((String) a.get("error_message")).contains("Connect");
            assertThat(a.get("http_status")).isNull();
        });
    }
}
