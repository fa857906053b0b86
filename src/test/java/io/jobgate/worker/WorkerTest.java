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
 * The worker against a provider faked with WireMock over real HTTP, with the real relay, Artemis,
 * PostgreSQL and S3 API: leases, classification, Retry-After and the shared gate, caps, crashes,
 * stale leases and drop-in adapters. Each test tags its requests with a unique supplier name, which
 * the rendered prompt carries, so stubs and the fake's request log are per test.
 */
class WorkerTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer fake;
    Path dropInRoutes;
    Path dropInProviders;

    @BeanInject
    Worker worker;
    @BeanInject
    Sweeper sweeper;
    @BeanInject
    JobFinalizer finalizer;
    @BeanInject
    ProviderCatalog providers;
    @BeanInject
    JobLeases leases;
    @BeanInject
    io.jobgate.job.ProviderGates gates;
    @BeanInject
    CamelContext context;
    /** The gateway's clock: tests that need time to pass move it. */
    final io.jobgate.support.MovableClock clock = movableClock();
    @BeanInject
    software.amazon.awssdk.services.s3.S3Client s3;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        dropInRoutes = Files.createTempDirectory("jobgate-adapters");
        dropInProviders = Files.createTempDirectory("jobgate-providers");
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.concurrency", "4"),
                Map.entry("jobgate.worker.lease-margin-seconds", "1"),
                Map.entry("jobgate.worker.gate-full-delay-ms", "100"),
                // Retries wait exactly the ceiling of their jitter window (200, 400, 800 ms): measurable, still the real code path.
                Map.entry("jobgate.worker.backoff-base-ms", "200"),
                Map.entry("jobgate.worker.backoff-cap-ms", "5000"),
                Map.entry("jobgate.worker.backoff-jitter", "false"),
                Map.entry("jobgate.sweeper.enabled", "true"),
                Map.entry("jobgate.sweeper.period-ms", "200"),
                Map.entry("jobgate.provider.fakeimg.base-url", fake.baseUrl()),
                Map.entry("jobgate.provider.dropin.base-url", fake.baseUrl()),
                Map.entry("jobgate.providers.dirs", "config/providers,src/test/resources/providers," + dropInProviders),
                Map.entry("camel.main.routes-reload-enabled", "true"),
                Map.entry("camel.main.routes-reload-directory", dropInRoutes.toString()),
                Map.entry("camel.main.routes-reload-pattern", "*.camel.yaml"));
    }

    /** When the attempt's outcome said the next one was due. */
    Instant due(UUID id, int attempt) {
        return ((java.sql.Timestamp) Db.single("SELECT next_attempt_at FROM attempts WHERE job_id = ? AND attempt = ?", id, attempt)
                .get("next_attempt_at")).toInstant();
    }

    @BeforeEach
    void resetFaults() {
        clock.reset();
        worker.injectFaults(step -> { });
    }

    UUID submit(String tag, String provider) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "%s",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}"""
                .formatted(provider, tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static String pngReply() {
        return "{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}";
    }

    List<LoggedRequest> requests(String tag) {
        return fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, error_category, error_message, result::text AS result, "
                + "finalized_at, lease_token FROM jobs WHERE job_id = ?", id);
    }

    static List<Map<String, Object>> attempts(UUID id) {
        return Db.rows("SELECT attempt, outcome, http_status, error_category, error_message, adapter, adapter_revision, "
                + "duration_ms, next_attempt_at, response_excerpt, retry_after FROM attempts WHERE job_id = '" + id
                + "' ORDER BY attempt");
    }

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

    @Test
    void aClosingGateMovesTheProvidersWaitingDispatchesToItsReopening() {
        String tag = Jobs.tag();
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        Instant inAnHour = Instant.now().plus(Duration.ofHours(1));
        for (String provider : List.of("gated-" + tag, "open-" + tag)) {
            UUID id = jobs.job("acme").key(tag + "-" + provider).status("retry_wait").provider(provider)
                    .lifetime(86400, Instant.now().plus(Duration.ofDays(1))).nextAttemptAt(inAnHour).insert();
            jobs.dispatch(id, "acme", inAnHour);
        }
        Instant reopening = clock.instant().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.MICROS);

        int moved = gates.close("gated-" + tag, reopening, "HTTP 429 in a test");

        assertThat(moved).isEqualTo(1);
        assertThat(Db.rows("SELECT j.provider, o.available_at FROM outbox o JOIN jobs j USING (job_id) "
                + "WHERE j.idempotency_key LIKE '" + tag + "-%' ORDER BY j.provider")).satisfiesExactly(
                gated -> assertThat(((java.sql.Timestamp) gated.get("available_at")).toInstant()).isEqualTo(reopening),
                open -> assertThat(((java.sql.Timestamp) open.get("available_at")).toInstant()).isBefore(reopening));
        assertThat(((java.sql.Timestamp) Db.single("SELECT next_attempt_at FROM jobs WHERE idempotency_key = ?",
                tag + "-gated-" + tag).get("next_attempt_at")).toInstant()).as("the job shows its new due time").isEqualTo(reopening);
        Db.execute("DELETE FROM outbox WHERE job_id IN (SELECT job_id FROM jobs WHERE idempotency_key LIKE '" + tag + "-%'); "
                + "DELETE FROM jobs WHERE idempotency_key LIKE '" + tag + "-%'");
    }

    /** A job the relay dispatched, its dispatch event due in an hour (no worker gets it); @return the event's id. */
    long dispatchedJob(UUID id, String provider) {
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        jobs.job("acme").id(id).key("dispatched-" + id).provider(provider).lifetime(3600, Instant.now().plusSeconds(3600))
                .dispatchedAt(Instant.now()).insert();
        jobs.dispatch(id, "acme", Instant.now().plusSeconds(3600));
        return Db.count("SELECT max(event_id) FROM outbox WHERE job_id = ?", id);
    }

    /** The provider's slot rows, as its first start makes them (the long way), so the usual start can claim one. */
    void fakeimgSlotsMade() {
        Db.execute("INSERT INTO provider_slots (provider, slot) SELECT 'fakeimg', g FROM generate_series(0, "
                + (providers.find("fakeimg").orElseThrow().maxConcurrency() - 1) + ") g ON CONFLICT DO NOTHING");
    }

    JobLeases.GatePass startAsTheWorkerDoes(UUID id, long event) {
        fakeimgSlotsMade();
        Lease peeked = leases.peek(id, event).orElseThrow();
        return leases.start(id, event, "test-worker", Duration.ofSeconds(30), providers.find("fakeimg").orElseThrow(),
                Duration.ofSeconds(1), null, Duration.ofSeconds(1), peeked);
    }

    /**
     * The usual start (nothing against the request, caps left, a free slot) is one transition: the job
     * goes from queued to submitting in one row version, under the token its provider slot was claimed
     * with, and its attempt opens under the same token.
     */
    @Test
    void aUsualStartTakesTheLeaseAndStartsTheCallAsOneTransition() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        List<io.jobgate.job.JobTransitions.Event> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        context.getRegistry().lookupByNameAndType("jobTransitions", io.jobgate.job.JobTransitions.class).observe((e, moved, change) -> {
            if (id.equals(moved.row().get("job_id"))) {
                seen.add(e);
            }
        });

        JobLeases.GatePass pass = startAsTheWorkerDoes(id, event);

        assertThat(pass).isInstanceOf(JobLeases.Submitting.class);
        JobLeases.Submitting started = (JobLeases.Submitting) pass;
        assertThat(seen).containsExactly(io.jobgate.job.JobTransitions.Event.START);
        assertThat(started.attempt()).isEqualTo(1);
        assertThat(started.lease().attempts()).as("the attempts made before this one").isZero();
        Map<String, Object> job = Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id);
        assertThat(job).containsEntry("status", "submitting").containsEntry("attempts", 1)
                .containsEntry("lease_token", started.lease().token());
        assertThat(Db.single("SELECT lease_token FROM attempts WHERE job_id = ? AND attempt = 1", id))
                .containsEntry("lease_token", started.lease().token());
        assertThat(Db.rows("SELECT lease_token FROM provider_slots WHERE job_id = '" + id + "'")).singleElement()
                .satisfies(slot -> assertThat(slot.get("lease_token")).isEqualTo(started.lease().token()));
        Db.execute("UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL WHERE job_id = '" + id + "'; "
                + "UPDATE jobs SET status = 'failed', finalized_at = now(), lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL "
                + "WHERE job_id = '" + id + "'");
    }

    /**
     * The usual start claims a slot only for a job it applies to: when the job moved on since the worker read it
     * (here: a newer dispatch event), nothing is leased and no slot is taken.
     */
    @Test
    void aStartWhoseJobMovedOnSinceItWasReadLeasesNothingAndGivesTheSlotBack() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        Lease peeked = leases.peek(id, event).orElseThrow();
        Db.execute("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) VALUES ('" + id
                + "', 'acme', 'dispatch', now() + interval '1 hour')");
        fakeimgSlotsMade();
        long freeBefore = Db.count("SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NULL");

        JobLeases.GatePass pass = leases.start(id, event, "test-worker", Duration.ofSeconds(30),
                providers.find("fakeimg").orElseThrow(), Duration.ofSeconds(1), null, Duration.ofSeconds(1), peeked);

        assertThat(pass).isInstanceOfSatisfying(JobLeases.NotLeased.class,
                lost -> assertThat(lost.reason()).startsWith("stale dispatch event " + event));
        assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
        assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NULL"))
                .isEqualTo(freeBefore);
        assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                .containsEntry("status", "queued").containsEntry("attempts", 0).containsEntry("lease_token", null);
        Db.execute("UPDATE jobs SET status = 'failed', finalized_at = now() WHERE job_id = '" + id + "'");
    }

    /**
     * A provider with every slot held: the usual start claims nothing and writes nothing of its own; the long way
     * puts the job back to wait (no attempt spent) until the full delay, its lease given back.
     */
    @Test
    void aUsualStartOnAFullProviderTakesNoSlotAndWaitsWithoutAnAttempt() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        fakeimgSlotsMade();
        UUID holder = UUID.randomUUID();
        Db.execute("UPDATE provider_slots SET lease_token = '" + holder + "', job_id = '" + holder + "', taken_at = now()"
                + " WHERE provider = 'fakeimg' AND lease_token IS NULL");
        try {
            JobLeases.GatePass pass = startAsTheWorkerDoes(id, event);

            assertThat(pass).isInstanceOfSatisfying(JobLeases.Snoozed.class,
                    snoozed -> assertThat(snoozed.reason()).contains("at its concurrency limit"));
            assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
            assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                    .containsEntry("status", "retry_wait").containsEntry("attempts", 0).containsEntry("lease_token", null);
            assertThat(Db.count("SELECT count(*) FROM attempts WHERE job_id = ?", id)).isZero();
        } finally {
            Db.execute("UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL WHERE job_id = '" + holder + "'; "
                    + "DELETE FROM outbox WHERE job_id = '" + id + "'; " // its new dispatch event: the relay would take it
                    + "UPDATE jobs SET status = 'failed', finalized_at = now() WHERE job_id = '" + id + "'");
        }
    }

    /** A provider's gate closed by a Retry-After: the usual start claims no slot and the job waits until the gate opens. */
    @Test
    void aUsualStartBehindAClosedGateTakesNoSlotAndWaitsForTheGate() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        java.time.Instant until = java.time.Instant.now().plusSeconds(120).truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        Db.execute("INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES ('fakeimg', '" + until
                + "', 'test', now()) ON CONFLICT (provider) DO UPDATE SET closed_until = EXCLUDED.closed_until, closed_reason = 'test'");
        try {
            JobLeases.GatePass pass = startAsTheWorkerDoes(id, event);

            assertThat(pass).isInstanceOfSatisfying(JobLeases.Snoozed.class, snoozed -> assertThat(snoozed.until()).isEqualTo(until));
            assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
            assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                    .containsEntry("status", "retry_wait").containsEntry("attempts", 0).containsEntry("lease_token", null);
        } finally {
            Db.execute("UPDATE provider_gates SET closed_until = '-infinity', closed_reason = NULL WHERE provider = 'fakeimg'; "
                    + "DELETE FROM outbox WHERE job_id = '" + id + "'; "
                    + "UPDATE jobs SET status = 'failed', finalized_at = now() WHERE job_id = '" + id + "'");
        }
    }

    /**
     * A finalize (the sweeper expiring a job, a cancel) locks the job's unpublished dispatch events,
     * then its row; a worker starting the same job — here on its way to put it back to wait, which
     * drops those events — must take them in the same order, or the two deadlock.
     */
    @Test
    void aWorkerStartingAJobTakesItsEventsBeforeItsRowSoAConcurrentFinalizeCannotDeadlockWithIt() throws Exception {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        try (java.sql.Connection finalize = java.sql.DriverManager.getConnection(io.jobgate.support.TestDatabase.url(),
                io.jobgate.support.TestDatabase.user(), io.jobgate.support.TestDatabase.password());
             java.sql.Statement st = finalize.createStatement()) {
            finalize.setAutoCommit(false);
            int finalizer;
            try (java.sql.ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                finalizer = rs.getInt(1);
            }
            st.execute("SET LOCAL lock_timeout = '500ms'"); // below deadlock_timeout: waiting at all fails
            st.execute("DELETE FROM outbox WHERE job_id = '" + id + "' AND event_type = 'dispatch' AND published_at IS NULL");
            var starting = java.util.concurrent.CompletableFuture.supplyAsync(() -> leases.start(id, event, "test-worker",
                    Duration.ofSeconds(30), providers.find("fakeimg").orElseThrow(), Duration.ofSeconds(1),
                    new JobLeases.Verdict(ErrorCategory.TRANSIENT, "source not readable yet", true), Duration.ofSeconds(1)));
            await().atMost(Duration.ofSeconds(10)).until(() -> Db.count(
                    "SELECT count(*) FROM pg_stat_activity WHERE pg_blocking_pids(pid) @> ARRAY[?::int]", finalizer) == 1);

            // Fails (lock timeout) if the worker took the row before the events.
            st.execute("UPDATE jobs SET status = 'failed', error_category = 'expired', finalized_at = now(), "
                    + "dispatched_at = NULL WHERE job_id = '" + id + "'");
            finalize.commit();

            assertThat(starting.get(10, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(JobLeases.NotLeased.class);
        }
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
    void aWorkerKilledMidAttemptLeavesALeaseThatExpiresIntoANewAttemptOfTheSameJob() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        AtomicBoolean crash = new AtomicBoolean(true);
        worker.injectFaults(step -> {
            if (step.equals("submitting") && crash.compareAndSet(true, false)) {
                throw new IllegalStateException("simulated worker death after the attempt started");
            }
        });
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("lease_expired", "succeeded");
        assertThat(job(id).get("attempts")).isEqualTo(2);
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(requests(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = (SELECT idempotency_key FROM jobs WHERE job_id = ?)",
                id)).isEqualTo(1);
    }

    @Test
    void aStaleLeaseTokenCannotFinalizeOrOverwrite() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1200)));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        UUID staleToken = (UUID) job(id).get("lease_token");

        // The first worker stalls; its lease runs out and the sweeper hands the job to a new attempt.
        clock.advance(Duration.ofSeconds(10));
        await().atMost(Duration.ofSeconds(5)).until(() -> !staleToken.equals(job(id).get("lease_token")));
        assertThat(finalizer.finalizeJob(id, staleToken, JobFinalizer.Outcome.failed("transient", "stale")))
                .as("a stale token finalizes nothing").isFalse();
        Jobs.awaitStatus(id, "succeeded");
        clock.reset(); // only now: the new attempt's due time and lease were taken on the moved clock

        await().atMost(Duration.ofSeconds(5)).until(() -> "lease_lost".equals(attempts(id).get(0).get("outcome")));
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("lease_lost", "succeeded");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(job(id).get("error_category")).isNull();
    }

    /**
     * Issue 35: a provider's answer that comes back after its lease ran out, while the job still waits on
     * that attempt (what the sweeper does with an expired lease of a provider that does not deduplicate:
     * submission_unknown), is the job's: it is promoted and finalized through the one finalize, billed
     * once, its attempt kept as {@code late_succeeded}, and counted.
     */
    @Test
    void aLateAnswerFinalizesTheJobWhileNoNewerAttemptStarted() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        double before = lateAnswers("fakeimg", "finalized");
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)) && requests(tag).size() == 1);
        UUID token = (UUID) job(id).get("lease_token");

        // The lease is released while the call is on the wire, its first reconcile check far away.
        assertThat(leases.parkUnknown(id, token, null, Instant.now().plus(Duration.ofHours(1)))).isTrue();
        assertThat(Jobs.status(id)).isEqualTo("submission_unknown");

        Jobs.awaitStatus(id, "succeeded");
        assertThat(job(id).get("attempts")).isEqualTo(1);
        assertThat((String) job(id).get("result")).contains("\"attempt\": 1");
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("late_succeeded");
        assertThat(attempts(id).get(0).get("http_status")).isEqualTo(200);
        assertThat(requests(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isZero();
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).startsWith(new byte[] {(byte) 0x89, 'P', 'N', 'G'});
        await().atMost(Duration.ofSeconds(5)).until(() -> lateAnswers("fakeimg", "finalized") == before + 1);
    }

    /** A late answer for a job that moved on to a newer attempt changes nothing but its own attempt, and is counted. */
    @Test
    void aLateAnswerAfterANewerAttemptIsRecordedOnItsAttemptOnly() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(500)));
        double before = lateAnswers("fakeimg", "recorded");
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)) && requests(tag).size() == 1);
        UUID token = (UUID) job(id).get("lease_token");

        // The lease goes back and a newer attempt starts (and fails retryably) before the first answers.
        assertThat(leases.requeue(id, token, Instant.now(), 0, "ambiguous")).isTrue();
        await().atMost(Duration.ofSeconds(10)).until(() -> ((Number) job(id).get("attempts")).intValue() >= 2);
        await().atMost(Duration.ofSeconds(10)).until(() -> lateAnswers("fakeimg", "recorded") == before + 1);

        assertThat(attempts(id).get(0)).containsEntry("outcome", "lease_lost").containsEntry("http_status", 200);
        assertThat(Jobs.status(id)).isNotEqualTo("succeeded");
        assertThat((Object) job(id).get("result")).isNull();
    }

    double lateAnswers(String provider, String outcome) {
        String metrics = api.send(api.request("/observe/metrics", null).GET().build()).text();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^jobgate_late_answers_total\\{[^}]*outcome=\"" + outcome
                + "\"[^}]*provider=\"" + provider + "\"[^}]*\\} ([0-9.Ee+]+)$").matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    /** A clean stop hands the leases of its worker back: another attempt starts at once, not after the lease runs out. */
    @Test
    void aStoppingWorkerHandsItsLeasesBackForANewAttemptAtOnce() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));

        assertThat(sweeper.handBack(worker.name())).isEqualTo(1); // what the stop of this worker does
        Jobs.awaitStatus(id, "succeeded");

        await().atMost(Duration.ofSeconds(5)).until(() -> attempts(id).size() == 2 && attempts(id).get(1).get("outcome") != null);
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("handed_back", "succeeded");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
    }

    /**
     * The lease of a worker whose process died is taken over at the next sweep, not when it runs out:
     * the dead instance's liveness lock (a session advisory lock) went with its connection.
     */
    @Test
    void aLeaseOfAnInstanceWhoseProcessDiedIsTakenOverAtTheNextSweep() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        String dead = "dead-host/" + tag;

        // Another instance's session: its liveness lock and its owner listed, then the job's lease made
        // its own, lasting an hour.
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4242)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4242)");
            Db.execute("UPDATE jobs SET lease_owner = '" + dead + "', lease_expires_at = now() + interval '1 hour' WHERE job_id = '" + id + "'");
            assertThat(Db.count("SELECT count(*) FROM gateway_instances_gone WHERE owner = ?", dead)).isZero();
            assertThat(sweeper.reclaimLeasesOfGoneInstances()).as("alive: its leases are its own").isZero();
            assertThat(Db.single("SELECT lease_owner FROM jobs WHERE job_id = ?", id).get("lease_owner")).isEqualTo(dead);
        } // ... and the process dies: its session ends, PostgreSQL drops the lock

        Jobs.awaitStatus(id, "succeeded"); // long before the hour: the sweeper took the lease over
        await().atMost(Duration.ofSeconds(5)).until(() -> attempts(id).size() == 2 && attempts(id).get(0).get("outcome") != null);
        assertThat((String) attempts(id).get(0).get("outcome")).isIn("owner_gone", "lease_lost");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", dead)).as("forgotten once it holds nothing").isZero();
        // This gateway is alive and listed under its worker's name.
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", worker.name())).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM gateway_instances_gone WHERE owner = ?", worker.name())).isZero();
    }

    /**
     * A worker killed between writing an output to the job's readable key and writing its manifest left part of
     * a promotion nobody recorded: when the sweeper takes over that dead process's lease, it withdraws it, so a
     * job that then fails keeps no readable output (the chaos soak met one), and one that succeeds promotes anew.
     */
    @Test
    void aHalfPromotionOfADeadWorkerIsWithdrawnWhenItsLeaseIsTakenOver() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        String dead = "dead-host/" + tag;
        String stray = "outputs/acme/" + id + "/output.part";
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4343)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4343)");
            Db.execute("UPDATE jobs SET lease_owner = '" + dead + "', lease_expires_at = now() + interval '1 hour' WHERE job_id = '" + id + "'");
            // What the dead worker wrote of its promotion: an object under the job's readable key, no manifest.
            s3.putObject(b -> b.bucket("jobgate").key(stray), software.amazon.awssdk.core.sync.RequestBody.fromString("half"));
        } // the process dies

        Jobs.awaitStatus(id, "succeeded");
        await().atMost(Duration.ofSeconds(5)).until(() -> attempts(id).size() == 2 && attempts(id).get(0).get("outcome") != null);
        List<String> keys = s3.listObjectsV2(b -> b.bucket("jobgate").prefix("outputs/acme/" + id + "/")).contents().stream()
                .map(software.amazon.awssdk.services.s3.model.S3Object::key).toList();
        assertThat(keys).as("the half promotion withdrawn, the second attempt's output and manifest promoted")
                .doesNotContain(stray).contains("outputs/acme/" + id + "/manifest.json");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
    }

    /** A relay's claims are released at the next sweep when its process died, not when they run out. */
    @Test
    void theClaimsOfARelayWhoseProcessDiedAreReleasedAtTheNextSweep() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");
        String dead = "dead-host/relay-" + tag;
        long event;
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4343)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4343)");
            // A status event the dead relay had claimed for an hour, in the middle of its round.
            try (var rs = s.executeQuery("""
                    INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, claimed_until, claim_token, claimed_by)
                    VALUES ('%s', 'acme', 'status', '{"status": "succeeded"}', now(), now() + interval '1 hour', gen_random_uuid(), '%s')
                    RETURNING event_id""".formatted(id, dead))) {
                rs.next();
                event = rs.getLong(1);
            }
            assertThat(sweeper.reclaimLeasesOfGoneInstances()).isZero();
            assertThat(Db.count("SELECT count(*) FROM outbox WHERE event_id = ? AND published_at IS NULL", event)).isEqualTo(1);
        } // the relay's process dies
        await().atMost(Duration.ofSeconds(10)).until(() ->
                Db.count("SELECT count(*) FROM outbox WHERE event_id = ? AND published_at IS NOT NULL", event) == 1);
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", dead)).isZero();
    }

    /** A job that ends while its attempt is open (here: cancelled mid-call) closes the attempt with it. */
    @Test
    void anAttemptStillOpenWhenItsJobEndsIsClosedWithTheJob() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);

        Map<String, Object> attempt = Db.single("SELECT ended_at, outcome FROM attempts WHERE job_id = ? AND attempt = 1", id);
        assertThat(attempt.get("ended_at")).as("closed with the job, before the worker's call returns").isNotNull();
        assertThat((String) attempt.get("outcome")).isIn("ended_with_job", "lease_lost");
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

    @Test
    void theProviderConcurrencyLimitHoldsAcrossJobsWithoutSpendingAttempts() {
        String tag = Jobs.tag();
        int delay = 500;
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(delay)));
        List<UUID> ids = java.util.stream.IntStream.range(0, 5).mapToObj(i -> submit(tag + "x" + i, "fakeimg")).toList();
        ids.forEach(id -> Jobs.awaitStatus(id, "succeeded"));

        List<Long> starts = requests(tag).stream().map(r -> r.getLoggedDate().getTime()).sorted().toList();
        assertThat(starts).hasSize(5);
        int most = 0;
        for (long start : starts) {
            int overlapping = (int) starts.stream().filter(s -> s <= start && start < s + delay).count();
            most = Math.max(most, overlapping);
        }
        assertThat(most).as("requests in flight at once (max-concurrency 2)").isLessThanOrEqualTo(2);
        assertThat(ids).allSatisfy(id -> assertThat(job(id).get("attempts")).isEqualTo(1));
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

    @Test
    void aSourceUploadThatNoLongerMatchesItsDigestFailsTheJobBeforeAnyCall() {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1500));
        assertThat(upload.status()).isEqualTo(201);
        String sha = upload.json().path("sha256").asText();
        // The stored object changes behind the gateway's back (bit rot, an operator's mistake).
        s3.putObject(b -> b.bucket("jobgate").key("sources/sha256/" + sha),
                software.amazon.awssdk.core.sync.RequestBody.fromBytes(Samples.wav(1200)));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"fakeimg\", \"upload_id\": \"" + upload.json().path("upload_id").asText() + "\"}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitStatus(id, "failed");

        assertThat(job(id).get("error_category")).isEqualTo("invalid_request");
        assertThat((String) job(id).get("error_message")).contains("does not match its digest");
        assertThat(job(id).get("attempts")).isEqualTo(0);
        assertThat(fake.getAllServeEvents()).noneMatch(e -> id.toString().equals(e.getRequest().getHeader("Idempotency-Key")));
    }
}
