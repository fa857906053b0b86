package io.jobgate.reconcile;

import io.jobgate.common.WebhookSignature;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

import io.jobgate.job.WaitingJob;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import io.jobgate.Gateway;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.getRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Async providers end to end with a Replicate-shaped fake over HTTP: pending jobs finished by
 * signed webhooks or by polling, submission_unknown reconciled by lookup, the one finalize under
 * races, operator repair, and the money that follows.
 */
class ReconciliationTest extends GatewayTestBase {

    static final String SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    static final String PREDICTIONS = "/v1/predictions";

    WireMockServer fake;

    @BeanInject
    CamelContext context;
    @BeanInject
    io.jobgate.worker.Sweeper sweeper;
    @BeanInject
    Reconciler reconciler;
    @BeanInject("dataSource")
    javax.sql.DataSource dataSource;

    /** The gateway's clock: the lifetime tests move it past a job's lifetime and horizon. */
    final io.jobgate.support.MovableClock clock = movableClock();

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING,
                Map.of("jobgate.provider.fakeasync.base-url", fake.baseUrl()));
    }

    @AfterEach
    void pollerOn() throws Exception {
        context.getRouteController().resumeRoute("reconciler");
        clock.reset();
    }

    /**
     * A poller that claimed a due check and died before the answer (here: claims, never checks)
     * holds the job only for the lookup's deadline plus a margin: the live poller takes over
     * within seconds, not after minutes.
     */
    @Test
    void aClaimOfAPollerThatDiedIsTakenOverWithinSeconds() throws Exception {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        context.getRouteController().suspendRoute("reconciler");
        lookupAnswers(tag, "succeeded");
        clock.advance(Duration.ofSeconds(1)); // its next check (at most 400 ms ahead) is due
        assertThat(reconciler.claimDue()).extracting(WaitingJob::jobId).contains(id); // ... and the poller dies

        Map<String, Object> claim = Db.single("SELECT next_check_at, check_claimed_by FROM jobs WHERE job_id = ?", id);
        assertThat(claim.get("check_claimed_by").toString()).contains("/reconciler-");
        // fakeasync's call deadline is 1.5 s; the claim lasts that plus a 10 s margin, never minutes
        assertThat(((java.sql.Timestamp) claim.get("next_check_at")).toInstant())
                .isBefore(clock.instant().plusSeconds(12));
        context.getRouteController().resumeRoute("reconciler");
        assertThat(Jobs.status(id)).as("held by the dead poller's claim").isEqualTo("provider_pending");

        clock.advance(Duration.ofSeconds(12));
        Jobs.awaitStatus(id, "succeeded");
    }

    /**
     * A poll's claimed checks are asked at once (jobgate.reconcile.concurrency, 4 here): each lookup takes a second,
     * and every one of them arrives before the first is answered. One at a time, a provider checked only by polling
     * was carried no faster than one thread could ask, store and finalize (the pool bench's simulator, 2026-12-07).
     */
    @Test
    void aPollsClaimedChecksAreAskedAtOnce() throws Exception {
        context.getRouteController().suspendRoute("reconciler");
        List<String> tags = List.of(Jobs.tag(), Jobs.tag(), Jobs.tag(), Jobs.tag());
        List<UUID> ids = new java.util.ArrayList<>();
        for (String tag : tags) {
            ids.add(pendingJob(tag));
            fake.stubFor(get(PREDICTIONS + "/p-" + tag).willReturn(aResponse().withStatus(200).withFixedDelay(1000)
                    .withBody(prediction(tag, "succeeded"))));
        }
        clock.advance(Duration.ofSeconds(1)); // every next check (at most 400 ms ahead) is due, in one poll's batch
        context.getRouteController().resumeRoute("reconciler");
        ids.forEach(id -> Jobs.awaitStatus(id, "succeeded"));

        List<java.util.Date> asked = tags.stream().map(tag -> fake.getAllServeEvents().stream()
                .filter(e -> e.getRequest().getUrl().equals(PREDICTIONS + "/p-" + tag) && e.getRequest().getMethod().getName().equals("GET"))
                .map(e -> e.getRequest().getLoggedDate()).min(java.util.Comparator.naturalOrder()).orElseThrow()).toList();
        long spanMillis = asked.stream().mapToLong(java.util.Date::getTime).max().getAsLong()
                - asked.stream().mapToLong(java.util.Date::getTime).min().getAsLong();
        assertThat(spanMillis).as("the four lookups (a second each) were in flight together, not one after another")
                .isLessThan(1000);
    }

    /** After a (re)start, a job whose next check lies far ahead is asked at once: missed webhooks arrive in seconds. */
    @Test
    void onStartEveryJobWaitingOnAProviderIsAskedSoon() throws Exception {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        context.getRouteController().suspendRoute("reconciler");
        lookupAnswers(tag, "succeeded");
        // As the interval had grown before the restart: its next check an hour ahead.
io.jobgate.support.JobFactory.onTestDatabase().nextCheckAt(id, java.time.Instant.now().plusSeconds(3600));

        assertThat(reconciler.catchUp()).isGreaterThanOrEqualTo(1);
        context.getRouteController().resumeRoute("reconciler");
        Jobs.awaitStatus(id, "succeeded");
    }

    /**
     * A 429 to a lookup closes the provider's gate like one to a submit: until its Retry-After the
     * poller asks that provider nothing, for any job; then both jobs are asked and finish.
     */
    @Test
    void aRateLimitedLookupClosesTheProvidersGateUntilItsRetryAfter() throws Exception {
        String tag = Jobs.tag();
        String other = Jobs.tag();
        UUID throttled = pendingJob(tag);
        UUID waiting = pendingJob(other);
        context.getRouteController().suspendRoute("reconciler");
        try {
            fake.stubFor(get(PREDICTIONS + "/p-" + tag).willReturn(aResponse().withStatus(429).withHeader("Retry-After", "120")
                    .withHeader("Content-Type", "application/json").withBody("{\"detail\": \"Request was throttled.\"}")));
            lookupAnswers(other, "succeeded");

            Reconciler.Applied first = reconciler.check(reconciler.find(throttled).orElseThrow(), "test");
            Instant reopening = clock.instant().plusSeconds(120);
            assertThat(first.changed()).isFalse();
            assertThat(first.detail()).startsWith("rate limited");
            Instant closedUntil = ((java.sql.Timestamp) Db.single("SELECT closed_until FROM provider_gates WHERE provider = 'fakeasync'")
                    .get("closed_until")).toInstant();
            assertThat(closedUntil).isBetween(reopening.minusSeconds(1), reopening.plusSeconds(1));
            assertThat(((java.sql.Timestamp) Db.single("SELECT next_check_at FROM jobs WHERE job_id = ?", throttled)
                    .get("next_check_at")).toInstant()).isEqualTo(closedUntil);

            int asked = fake.findAll(getRequestedFor(urlEqualTo(PREDICTIONS + "/p-" + other))).size();
            Reconciler.Applied second = reconciler.check(reconciler.find(waiting).orElseThrow(), "test");
            assertThat(second.detail()).contains("gate closed until");
            assertThat(fake.findAll(getRequestedFor(urlEqualTo(PREDICTIONS + "/p-" + other)))).as("not asked while closed").hasSize(asked);
            assertThat(Jobs.status(waiting)).isEqualTo("provider_pending");

            lookupAnswers(tag, "succeeded");
            clock.advance(Duration.ofSeconds(121));
            context.getRouteController().resumeRoute("reconciler");
            Jobs.awaitStatus(waiting, "succeeded");
            Jobs.awaitStatus(throttled, "succeeded");
        } finally {
            // The clock goes back after the test: a gate closed on its time would stay closed for the next.
            Db.execute("UPDATE provider_gates SET closed_until = '-infinity' WHERE provider = 'fakeasync'");
        }
    }

    // --- The lifetime stops new attempts, never evidence -----------------------------------------

    @Test
    void aJobAtTheProviderOutlivesItsLifetimeAndALateSuccessIsBilled() {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        int submitted = submits(tag); // one, or two where a loaded machine made the first call outlive its deadline
        clock.advance(Duration.ofMinutes(31)); // past the 30-minute lifetime

        sweeper.expireOverdue();
        assertThat(Jobs.status(id)).as("still waiting on the provider").isEqualTo("provider_pending");
        assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("error").isNull()).isTrue();

        lookupAnswers(tag, "succeeded");
        Jobs.awaitStatus(id, "succeeded");
        assertThat(refunds(id)).as("the provider's late work is paid for").isZero();
        assertThat(submits(tag)).as("submitted again after it was pending").isEqualTo(submitted);
    }

    @Test
    void aLateFailureAtTheProviderFailsWithItsRefund() {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        clock.advance(Duration.ofMinutes(31));
        sweeper.expireOverdue();

        lookupAnswers(tag, "failed");
        Jobs.awaitStatus(id, "failed");
        assertThat(job(id).get("error_category")).isEqualTo("declined");
        assertThat(refunds(id)).isEqualTo(1);
    }

    @Test
    void noAnswerByTheHorizonFailsAsExpiredRefundedWithTheAttemptKept() throws Exception {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        context.getRouteController().suspendRoute("reconciler");
        clock.advance(Duration.ofMinutes(31).plusHours(23));
        sweeper.expireOverdue();
        assertThat(Jobs.status(id)).as("within the horizon").isEqualTo("provider_pending");

        clock.advance(Duration.ofHours(2)); // past lifetime + 24 h
        sweeper.expireOverdue();

        assertThat(Jobs.status(id)).isEqualTo("failed");
        assertThat(job(id).get("error_category")).isEqualTo("expired");
        assertThat(Db.single("SELECT error_message FROM jobs WHERE job_id = ?", id).get("error_message").toString())
                .contains("reconciliation horizon").contains("billing review");
        assertThat(refunds(id)).isEqualTo(1);
        assertThat(Db.rows("SELECT outcome FROM attempts WHERE job_id = '" + id + "'"))
                .as("the unreconciled attempt is kept").singleElement().satisfies(a -> assertThat(a.get("outcome")).isEqualTo("pending"));
    }


    UUID submit(String tag) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "fakeasync",
                 "inputs": {"supplier_name": "%s", "invoice_id": "R-1", "currency": "EUR",
                            "line_items": [{"description": "Async", "quantity": 1, "unit_price": 5}]}}""".formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** The provider accepts the job as prediction p-{tag}; lookups of it answer {@code status} until changed. */
    void acceptsAsync(String tag, String status) {
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(201)
                .withBody("{\"id\": \"p-" + tag + "\", \"status\": \"starting\"}")));
        lookupAnswers(tag, status);
    }

    /** A job the provider accepted as prediction p-{tag} and is still working on. */
    UUID pendingJob(String tag) {
        acceptsAsync(tag, "processing");
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "provider_pending");
        return id;
    }

    void lookupAnswers(String tag, String status) {
        fake.stubFor(get(PREDICTIONS + "/p-" + tag).willReturn(aResponse().withStatus(200).withBody(prediction(tag, status))));
    }

    String prediction(String tag, String status) {
        String output = status.equals("succeeded") ? "[\"" + fake.baseUrl() + "/files/" + tag + ".png\"]" : "null";
        fake.stubFor(get("/files/" + tag + ".png").willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "image/png").withBody(Samples.png(1024, 1024))));
        return "{\"id\": \"p-" + tag + "\", \"status\": \"" + status + "\", \"output\": " + output
                + (status.equals("succeeded") ? ", \"metrics\": {\"predict_time\": 2.5}" : "")
                + (status.equals("failed") ? ", \"error\": \"NSFW content detected\"" : "") + "}";
    }

    ApiClient.Response webhook(String webhookId, long timestamp, String body, String secret) {
        String signature = Base64.getEncoder().encodeToString(
                WebhookSignature.sign(secret, webhookId, Long.toString(timestamp), body.getBytes(StandardCharsets.UTF_8)));
        return api.send(api.request("/v1/providers/fakeasync/webhook", null).header("Content-Type", "application/json")
                .header("webhook-id", webhookId).header("webhook-timestamp", Long.toString(timestamp))
                .header("webhook-signature", "v1," + signature)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, error_category, provider_task, result::text AS result, updated_at "
                + "FROM jobs WHERE job_id = ?", id);
    }

    int submits(String tag) {
        return fake.findAll(postRequestedFor(urlEqualTo(PREDICTIONS)).withRequestBody(containing(tag))).size();
    }

    static long refunds(UUID id) {
        return Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id);
    }

    @Test
    void anAsyncJobWaitsAsPendingAndASignedWebhookFinishesItOnceAndARedeliveryIsAcknowledged() {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        int submitted = submits(tag); // one, or two where a loaded machine made the first call outlive its deadline
        assertThat(job(id).get("provider_task")).isEqualTo("p-" + tag);
        assertThat(fake.findAll(postRequestedFor(urlEqualTo(PREDICTIONS)).withRequestBody(containing(tag))).get(0)
                .getBodyAsString()).contains("/v1/providers/fakeasync/webhook");

        String body = prediction(tag, "succeeded");
        ApiClient.Response first = webhook("msg_" + tag, Instant.now().getEpochSecond(), body, SECRET);
        assertThat(first.status()).as(first.text()).isEqualTo(200);
        assertThat(first.json().path("changed").asBoolean()).isTrue();
        assertThat(Jobs.status(id)).isEqualTo("succeeded");
        assertThat((String) job(id).get("result")).contains("image/png");
        Object finishedAt = job(id).get("updated_at");

        // A genuine redelivery (the provider did not see our 2xx): acknowledged, nothing changes.
        ApiClient.Response replay = webhook("msg_" + tag, Instant.now().getEpochSecond(), body, SECRET);
        assertThat(replay.status()).as(replay.text()).isEqualTo(200);
        assertThat(replay.json().path("changed").asBoolean()).isFalse();
        assertThat(replay.json().path("replayed").asBoolean()).isTrue();
        assertThat(replay.json().path("job_id").asText()).isEqualTo(id.toString());
        // Even one that says otherwise under the same webhook-id is not applied again.
        ApiClient.Response contrary = webhook("msg_" + tag, Instant.now().getEpochSecond(), prediction(tag, "failed"), SECRET);
        assertThat(contrary.status()).isEqualTo(200);
        assertThat(contrary.json().path("changed").asBoolean()).isFalse();
        assertThat(Jobs.status(id)).isEqualTo("succeeded");
        assertThat(job(id).get("updated_at")).isEqualTo(finishedAt);
        assertThat(refunds(id)).isZero();
        assertThat(Db.count("SELECT count(*) FROM webhook_receipts WHERE webhook_id = ?", "msg_" + tag)).isEqualTo(1);
        assertThat(submits(tag)).as("submitted again after it was pending").isEqualTo(submitted);

        // A replay of the same id is still refused when its signature is forged, stale or missing.
        ApiClient.Response forgedReplay = webhook("msg_" + tag, Instant.now().getEpochSecond(), body,
                "whsec_" + Base64.getEncoder().encodeToString("not-the-secret-at-all-000".getBytes(StandardCharsets.UTF_8)));
        assertThat(forgedReplay.status()).isEqualTo(401);
        assertThat(forgedReplay.code()).isEqualTo("invalid_signature");
        ApiClient.Response staleReplay = webhook("msg_" + tag, Instant.now().minusSeconds(3600).getEpochSecond(), body, SECRET);
        assertThat(staleReplay.status()).isEqualTo(401);
        ApiClient.Response unsignedReplay = api.send(api.request("/v1/providers/fakeasync/webhook", null)
                .header("Content-Type", "application/json").header("webhook-id", "msg_" + tag)
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
        assertThat(unsignedReplay.status()).isEqualTo(401);
        assertThat(unsignedReplay.code()).isEqualTo("invalid_signature");
        assertThat(job(id).get("updated_at")).isEqualTo(finishedAt);
    }

    @Test
    void badOrStaleSignaturesAreRefusedWithoutTouchingTheJob() {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        String body = prediction(tag, "succeeded");

        ApiClient.Response forged = webhook("msg_f_" + tag, Instant.now().getEpochSecond(), body,
                "whsec_" + Base64.getEncoder().encodeToString("not-the-secret-at-all-000".getBytes(StandardCharsets.UTF_8)));
        assertThat(forged.status()).isEqualTo(401);
        assertThat(forged.code()).isEqualTo("invalid_signature");
        ApiClient.Response stale = webhook("msg_s_" + tag, Instant.now().minusSeconds(3600).getEpochSecond(), body, SECRET);
        assertThat(stale.status()).isEqualTo(401);
        assertThat(stale.text()).contains("tolerance");
        ApiClient.Response tampered = api.send(api.request("/v1/providers/fakeasync/webhook", null)
                .header("webhook-id", "msg_t_" + tag).header("webhook-timestamp", Long.toString(Instant.now().getEpochSecond()))
                .header("webhook-signature", "v1," + Base64.getEncoder().encodeToString(WebhookSignature.sign(SECRET,
                        "msg_t_" + tag, Long.toString(Instant.now().getEpochSecond()), "{}".getBytes(StandardCharsets.UTF_8))))
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
        assertThat(tampered.status()).isEqualTo(401);

        assertThat(Jobs.status(id)).isEqualTo("provider_pending");
        assertThat(Db.count("SELECT count(*) FROM webhook_receipts WHERE webhook_id LIKE ?", "msg_%_" + tag)).isZero();
    }

    @Test
    void theWebhookAndThePollerRaceToFinalizeAndExactlyOneWins() throws Exception {
        for (String outcome : List.of("succeeded", "failed")) {
            String tag = Jobs.tag();
            UUID id = pendingJob(tag);
            context.getRouteController().suspendRoute("reconciler");
            lookupAnswers(tag, outcome); // the poller will now see the end as well

            Reconciler reconciler = context.getRegistry().lookupByNameAndType("reconciler", Reconciler.class);
            ExecutorService racers = Executors.newFixedThreadPool(6);
            List<Callable<Boolean>> tasks = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                int n = i;
                tasks.add(() -> webhook("msg_" + n + "_" + tag, Instant.now().getEpochSecond(), prediction(tag, outcome), SECRET)
                        .json().path("changed").asBoolean());
                tasks.add(() -> reconciler.check(reconciler.find(id).orElseThrow(), "poller").changed());
            }
            int winners = 0;
            for (Future<Boolean> f : racers.invokeAll(tasks)) {
                winners += f.get() ? 1 : 0;
            }
            racers.shutdown();

            assertThat(winners).as("finalizations that changed the job (%s)", outcome).isEqualTo(1);
            assertThat(Jobs.status(id)).isEqualTo(outcome.equals("succeeded") ? "succeeded" : "failed");
            assertThat(refunds(id)).isEqualTo(outcome.equals("succeeded") ? 0 : 1);
            assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'status' "
                    + "AND payload->>'status' IN ('succeeded', 'failed')", id)).isEqualTo(1);
            context.getRouteController().resumeRoute("reconciler");
        }
    }

    @Test
    void aTimeoutAfterSendIsReconciledByLookupWithoutASecondSubmissionOrCharge() throws Exception {
        String tag = Jobs.tag();
        context.getRouteController().suspendRoute("reconciler");
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(201)
                .withBody("{\"id\": \"p-" + tag + "\", \"status\": \"starting\"}").withFixedDelay(2500)));
        lookupAnswers(tag, "processing");
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "submission_unknown");
        fake.stubFor(get(PREDICTIONS + "/by-key/" + id).willReturn(aResponse().withStatus(200).withBody(prediction(tag, "processing"))));
        context.getRouteController().resumeRoute("reconciler");

        Jobs.awaitStatus(id, "provider_pending");
        assertThat(job(id).get("provider_task")).isEqualTo("p-" + tag);
        lookupAnswers(tag, "succeeded");
        Jobs.awaitStatus(id, "succeeded");

        assertThat(submits(tag)).isEqualTo(1);
        assertThat(job(id).get("attempts")).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(refunds(id)).isZero();
        assertThat(fake.findAll(getRequestedFor(urlEqualTo(PREDICTIONS + "/by-key/" + id)))).isNotEmpty();
    }

    /**
     * A 429 the provider declares about its task (a lookup's or a webhook's evidence) means what it means to a
     * submit: the resubmit waits its Retry-After (the provider's word is the minimum delay), the provider's gate
     * closes until then, and the retry shows it was rate limited.
     */
    @Test
    void aDeclared429AboutATaskIsWaitedOutAsASubmitsIs() throws Exception {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        context.getRouteController().suspendRoute("reconciler");
        try {
            io.jobgate.adapter.AdapterResult throttled = new io.jobgate.adapter.AdapterResult(null,
                    io.jobgate.job.ErrorCategory.RATE_LIMITED, 429, "120", null, "p-" + tag, null, null, null, null, null,
                    "task throttled", null, null, null, true, null);
            Instant reopening = clock.instant().plusSeconds(120);

            Reconciler.Applied applied = reconciler.apply(reconciler.find(id).orElseThrow(), throttled, "webhook");

            assertThat(applied.changed()).as(applied.detail()).isTrue();
            Map<String, Object> row = Db.single("SELECT status, next_attempt_at FROM jobs WHERE job_id = ?", id);
            assertThat(row.get("status")).isEqualTo("retry_wait");
            assertThat(Db.single("SELECT payload->>'error_category' AS category FROM outbox WHERE job_id = ? AND event_type = 'status' "
                    + "AND payload->>'status' = 'retry_wait'", id).get("category")).as("the retry's status event").isEqualTo("rate_limited");
            assertThat(((java.sql.Timestamp) row.get("next_attempt_at")).toInstant())
                    .isBetween(reopening.minusSeconds(1), reopening.plusSeconds(1));
            Instant dispatchDue = ((java.sql.Timestamp) Db.single("SELECT min(available_at) AS due FROM outbox WHERE job_id = ? "
                    + "AND event_type = 'dispatch' AND published_at IS NULL", id).get("due")).toInstant();
            assertThat(dispatchDue).as("not dispatched before its Retry-After").isBetween(reopening.minusSeconds(1), reopening.plusSeconds(1));
            Instant closedUntil = ((java.sql.Timestamp) Db.single("SELECT closed_until FROM provider_gates WHERE provider = 'fakeasync'")
                    .get("closed_until")).toInstant();
            assertThat(closedUntil).isBetween(reopening.minusSeconds(1), reopening.plusSeconds(1));
        } finally {
            Db.execute("UPDATE provider_gates SET closed_until = '-infinity' WHERE provider = 'fakeasync'");
        }
    }

    @Test
    void aLookupThatFindsNothingLeadsToExactlyOneResubmit() throws Exception {
        String tag = Jobs.tag();
        context.getRouteController().suspendRoute("reconciler");
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("up").willReturn(aResponse().withFixedDelay(2500).withStatus(503)));
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("up")
                .willReturn(aResponse().withStatus(201).withBody("{\"id\": \"p-" + tag + "\", \"status\": \"starting\"}")));
        lookupAnswers(tag, "succeeded");
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "submission_unknown");
        fake.stubFor(get(PREDICTIONS + "/by-key/" + id).willReturn(aResponse().withStatus(404)
                .withBody("{\"detail\": \"Not found.\"}")));
        context.getRouteController().resumeRoute("reconciler");

        Jobs.awaitStatus(id, "succeeded");
        assertThat(submits(tag)).isEqualTo(2);
        assertThat(job(id).get("attempts")).isEqualTo(2);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
    }

    /**
     * A poller read the job on its first attempt; before its lookup answered, the provider lost that
     * task and the job went on to a second attempt, now at the provider. The late answers about the
     * first task (failed; not found; succeeded with its billing) must leave the second attempt alone.
     */
    @Test
    void evidenceAboutAnEarlierAttemptLeavesTheJobOnItsNextAttempt() throws Exception {
        String tag = Jobs.tag();
        context.getRouteController().suspendRoute("reconciler");
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(201)
                        .withBody("{\"id\": \"p-" + tag + "\", \"status\": \"starting\"}")));
        fake.stubFor(post(PREDICTIONS).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(201).withBody("{\"id\": \"p2-" + tag + "\", \"status\": \"starting\"}")));
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "provider_pending");
        WaitingJob readOnTheFirst = reconciler.find(id).orElseThrow();
        assertThat(readOnTheFirst.attempts()).isEqualTo(1);

        fake.stubFor(get(PREDICTIONS + "/p-" + tag).willReturn(aResponse().withStatus(404).withBody("{\"detail\": \"Not found.\"}")));
        assertThat(reconciler.check(reconciler.find(id).orElseThrow(), "test").changed()).isTrue();
        await().atMost(Duration.ofSeconds(30)).until(() -> "p2-".concat(tag).equals(job(id).get("provider_task"))
                && "provider_pending".equals(job(id).get("status")));
        Map<String, Object> second = job(id);
        assertThat(second.get("attempts")).isEqualTo(2);

        // The first task's late answers: not found, failed, then succeeded with its run time billed.
        assertThat(reconciler.check(readOnTheFirst, "poller").changed()).isFalse();
        lookupAnswers(tag, "failed");
        assertThat(reconciler.check(readOnTheFirst, "poller").changed()).isFalse();
        lookupAnswers(tag, "succeeded");
        assertThat(reconciler.check(readOnTheFirst, "poller").changed()).isFalse();

        Map<String, Object> after = job(id);
        assertThat(after.get("status")).isEqualTo("provider_pending");
        assertThat(after.get("attempts")).isEqualTo(2);
        assertThat(after.get("provider_task")).isEqualTo("p2-" + tag);
        assertThat(after.get("result")).isNull();
        assertThat(submits(tag)).isEqualTo(2);
        assertThat(refunds(id)).isZero();
        assertThat(Db.single("SELECT billed_units::text AS units FROM attempts WHERE job_id = ? AND attempt = 1", id).get("units"))
                .isEqualTo("2.5");
        assertThat(Db.single("SELECT billed_units::text AS units FROM attempts WHERE job_id = ? AND attempt = 2", id).get("units"))
                .isNull();

        // The second task's own answer still finishes the job.
        fake.stubFor(get(PREDICTIONS + "/p2-" + tag).willReturn(aResponse().withStatus(200)
                .withBody(prediction(tag, "succeeded").replace("\"p-" + tag, "\"p2-" + tag))));
        assertThat(reconciler.check(reconciler.find(id).orElseThrow(), "poller").changed()).isTrue();
        assertThat(job(id).get("status")).isEqualTo("succeeded");
    }

    @Test
    void anOperatorRepairOfATerminalJobChangesNothing() {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        assertThat(webhook("msg_" + tag, Instant.now().getEpochSecond(), prediction(tag, "failed"), SECRET).status()).isEqualTo(200);
        Jobs.awaitStatus(id, "failed");
        Map<String, Object> before = job(id);
        int lookups = fake.findAll(getRequestedFor(urlEqualTo(PREDICTIONS + "/p-" + tag))).size();

        assertThat(api.post("not-the-admin", "/v1/admin/jobs/" + id + "/reconcile").status()).isEqualTo(401);
        assertThat(api.post(ACME, "/v1/admin/jobs/" + id + "/reconcile").status()).as("a tenant key is no admin key").isEqualTo(401);
        ApiClient.Response repair = api.post(ADMIN, "/v1/admin/jobs/" + id + "/reconcile");
        assertThat(repair.status()).as(repair.text()).isEqualTo(200);
        assertThat(repair.json().path("changed").asBoolean()).isFalse();
        assertThat(repair.json().path("job").path("status").asText()).isEqualTo("failed");
        assertThat(job(id)).isEqualTo(before);
        assertThat(refunds(id)).isEqualTo(1);
        assertThat(fake.findAll(getRequestedFor(urlEqualTo(PREDICTIONS + "/p-" + tag)))).hasSize(lookups);
        assertThatThrownBy(() -> Db.execute("UPDATE jobs SET status = 'succeeded' WHERE job_id = '" + id + "'"))
                .as("the database itself refuses to change a final job").hasStackTraceContaining("is final");
    }

    @Test
    void anOperatorRepairAsksTheProviderAboutAWaitingJob() throws Exception {
        String tag = Jobs.tag();
        context.getRouteController().suspendRoute("reconciler");
        UUID id = pendingJob(tag);
        lookupAnswers(tag, "succeeded");

        ApiClient.Response repair = api.post(ADMIN, "/v1/admin/jobs/" + id + "/reconcile");
        assertThat(repair.status()).as(repair.text()).isEqualTo(200);
        assertThat(repair.json().path("changed").asBoolean()).isTrue();
        assertThat(repair.json().path("job").path("status").asText()).isEqualTo("succeeded");
    }

    @Test
    void theLedgerOfTheTenantMatchesTheFinalStatesOfItsJobs() {
        String ok = Jobs.tag();
        String bad = Jobs.tag();
        acceptsAsync(ok, "succeeded");
        acceptsAsync(bad, "failed");
        UUID succeeded = submit(ok);
        UUID failed = submit(bad);
        UUID cancelled = submit(Jobs.tag()); // no stub: cancelled, or failed by the fake's 404 if the worker is faster
        api.post(ACME, "/v1/jobs/" + cancelled + "/cancel");
        Jobs.awaitStatus(succeeded, "succeeded");
        Jobs.awaitStatus(failed, "failed");
        await().atMost(Duration.ofSeconds(30)).until(() ->
                Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL", cancelled) == 1);

        // Every job is debited once at admission; exactly the failed and cancelled ones are refunded (in full
        // by default; another test of this class sets a partial share), never more than was debited.
        assertThat(Db.count("""
                SELECT count(*) FROM jobs j WHERE j.tenant_id = 'acme' AND (
                    (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'debit' AND l.amount_micros = -j.cost_micros) <> 1
                 OR (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'refund'
                        AND l.amount_micros > 0 AND l.amount_micros <= j.cost_micros)
                    <> CASE WHEN j.status IN ('failed', 'cancelled') THEN 1 ELSE 0 END)""")).as("jobs whose ledger rows disagree with their state").isZero();
        assertThat(Db.count("""
                SELECT (SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme')
                     - (SELECT coalesce(sum(amount_micros), 0) FROM ledger WHERE tenant_id = 'acme')""")).isZero();
        assertThat(refunds(succeeded)).isZero();
        assertThat(Db.single("SELECT amount_micros FROM ledger WHERE job_id = ? AND entry_type = 'refund'", failed))
                .containsEntry("amount_micros", 7_000L);
    }

    @Test
    void usageReportsMeteredUnitsCostAndTheProvidersOwnBillingPerProviderAndKind() {
        Instant from = Instant.now();
        String ok = Jobs.tag();
        String bad = Jobs.tag();
        acceptsAsync(ok, "processing");
        acceptsAsync(bad, "processing");
        UUID succeeded = submit(ok);
        UUID failed = submit(bad);
        Jobs.awaitStatus(succeeded, "provider_pending");
        Jobs.awaitStatus(failed, "provider_pending");
        assertThat(webhook("msg_" + ok, Instant.now().getEpochSecond(), prediction(ok, "succeeded"), SECRET).status()).isEqualTo(200);
        assertThat(webhook("msg_" + bad, Instant.now().getEpochSecond(), prediction(bad, "failed"), SECRET).status()).isEqualTo(200);
        Jobs.awaitStatus(succeeded, "succeeded");
        Jobs.awaitStatus(failed, "failed");

        ApiClient.Response usage = api.get(ACME, "/v1/usage?from=" + from + "&to=" + Instant.now().plusSeconds(60));
        assertThat(usage.status()).as(usage.text()).isEqualTo(200);
        var line = usage.json().path("lines").get(0);
        assertThat(usage.json().path("lines")).hasSize(1);
        assertThat(line.path("provider").asText()).isEqualTo("fakeasync");
        assertThat(line.path("kind").asText()).isEqualTo("image");
        assertThat(line.path("unit").asText()).isEqualTo("images");
        assertThat(line.path("jobs").asLong()).isEqualTo(2);
        assertThat(line.path("units").isNumber()).as("units are a number").isTrue();
        assertThat(line.path("units").asText()).as("two metered, one given back").isEqualTo("1");
        assertThat(line.path("debited_micros").asLong()).isEqualTo(14_000);
        assertThat(line.path("refunded_micros").asLong()).isEqualTo(7_000);
        assertThat(line.path("cost_micros").asLong()).isEqualTo(7_000);
        var billed = usage.json().path("provider_billing");
        assertThat(billed).hasSize(1);
        assertThat(billed.get(0).path("unit").asText()).isEqualTo("predict_seconds");
        assertThat(billed.get(0).path("units").isNumber()).isTrue();
        assertThat(billed.get(0).path("units").asText()).isEqualTo("2.5");
        // The balance now, as the ledger keeps it: the figure a 402 compares a job's cost with.
        long balance = Db.single("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme'").get("balance_micros") instanceof Number n
                ? n.longValue() : -1;
        assertThat(usage.json().path("balance").path("amount_micros").isNumber()).isTrue();
        assertThat(usage.json().path("balance").path("amount_micros").asLong()).isEqualTo(balance);

        assertThat(api.get(ACME, "/v1/usage?from=last-week").code()).isEqualTo("invalid_parameter");
        assertThat(api.get(GLOBEX, "/v1/usage?from=" + from).json().path("lines")).as("another tenant sees none of it").isEmpty();
    }

    /**
     * Usage from rollups: a report is the same before, during and after the roll-up (whole days from
     * day rows plus the pending tail, partial days raw); the day rows equal the raw sums; a roll-up
     * whose transaction does not commit changes nothing (no row skipped, none counted twice).
     */
    @Test
    void usageRollupsEqualTheRawRowsAndAReportIsTheSameBeforeAndAfterTheRollUp() throws Exception {
        String ok = Jobs.tag();
        acceptsAsync(ok, "processing");
        UUID job = submit(ok);
        Jobs.awaitStatus(job, "provider_pending");
        assertThat(webhook("msg_" + ok, Instant.now().getEpochSecond(), prediction(ok, "succeeded"), SECRET).status()).isEqualTo(200);
        Jobs.awaitStatus(job, "succeeded");
        Instant today = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.DAYS);
        List<String> ranges = List.of(
                "from=" + today + "&to=" + today.plus(Duration.ofDays(1)),                       // one whole day
                "from=" + today.minus(Duration.ofDays(3)) + "&to=" + today.plus(Duration.ofDays(2)), // whole days
                "from=" + Instant.now().minusSeconds(3600) + "&to=" + Instant.now().plusSeconds(3600), // partial days only
                "from=" + today.minus(Duration.ofHours(30)) + "&to=" + Instant.now().plusSeconds(60), // edges and a whole day
                "");                                                                                  // the default: whole days, today too
        // The roll-up here is this test's own (the route runs with the sweeper role).
        boolean rolling = context.getRouteController().getRouteStatus("usage-rollups").isStarted();
        if (rolling) {
            context.getRouteController().suspendRoute("usage-rollups");
        }
        try {
            Map<String, String> before = new java.util.LinkedHashMap<>();
            for (String range : ranges) {
                before.put(range, usage(range));
            }
            assertThat(before.values()).allSatisfy(r -> assertThat(r).contains("fakeasync"));

            // A roll-up whose transaction does not commit: the queues and day rows as they were.
            long pending = Db.count("SELECT count(*) FROM usage_pending") + Db.count("SELECT count(*) FROM billing_pending");
            assertThat(pending).isPositive();
            try (java.sql.Connection c = io.jobgate.support.TestDatabase.connect()) {
                c.setAutoCommit(false);
                var uncommitted = new io.jobgate.usage.UsageRollups(new org.springframework.jdbc.core.JdbcTemplate(
                        new org.springframework.jdbc.datasource.SingleConnectionDataSource(c, true)), 3);
                assertThat(uncommitted.rollUpAll()).isEqualTo(pending);
                c.rollback();
            }
            assertThat(Db.count("SELECT count(*) FROM usage_pending") + Db.count("SELECT count(*) FROM billing_pending")).isEqualTo(pending);

            // Half rolled up, then all: the same reports at each step.
            new io.jobgate.usage.UsageRollups(new org.springframework.jdbc.core.JdbcTemplate(dataSource), 2).rollUp();
            for (String range : ranges) {
                assertThat(usage(range)).as("half rolled up: %s", range).isEqualTo(before.get(range));
            }
            new io.jobgate.usage.UsageRollups(new org.springframework.jdbc.core.JdbcTemplate(dataSource), 1000).rollUpAll();
            assertThat(Db.count("SELECT count(*) FROM usage_pending") + Db.count("SELECT count(*) FROM billing_pending")).isZero();
            for (String range : ranges) {
                assertThat(usage(range)).as("rolled up: %s", range).isEqualTo(before.get(range));
            }
            // The day rows are the raw rows' sums, to the micro-unit.
            assertThat(Db.rows("""
                    SELECT l.tenant_id, (l.created_at AT TIME ZONE 'UTC')::date AS day, j.provider, j.kind, coalesce(l.unit, '') AS unit,
                           count(*) FILTER (WHERE l.entry_type = 'debit') AS jobs, coalesce(sum(l.units), 0) AS units,
                           -coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'debit'), 0) AS debited,
                           coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'refund'), 0) AS refunded
                      FROM ledger l JOIN jobs j USING (job_id) WHERE l.entry_type IN ('debit', 'refund')
                     GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5""").toString()).isEqualTo(Db.rows("""
                    SELECT tenant_id, day, provider, kind, unit, jobs, units, debited_micros AS debited, refunded_micros AS refunded
                      FROM usage_daily ORDER BY 1, 2, 3, 4, 5""").toString());
            assertThat(Db.rows("""
                    SELECT j.tenant_id, (a.started_at AT TIME ZONE 'UTC')::date AS day, a.adapter AS provider, j.kind, coalesce(a.billed_unit, '') AS unit,
                           count(*) AS attempts, sum(a.billed_units) AS units
                      FROM attempts a JOIN jobs j USING (job_id) WHERE a.billed_units IS NOT NULL
                     GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5""").toString()).isEqualTo(Db.rows("""
                    SELECT tenant_id, day, provider, kind, unit, attempts, units FROM billing_daily WHERE attempts <> 0
                     ORDER BY 1, 2, 3, 4, 5""").toString());
        } finally {
            if (rolling) {
                context.getRouteController().resumeRoute("usage-rollups");
            }
        }
    }

    String usage(String range) {
        ApiClient.Response r = api.get(ACME, "/v1/usage?" + range);
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        return r.json().path("lines").toString() + r.json().path("provider_billing").toString();
    }

    @Test
    void aRestartedGatewayFinishesJobsThatWereWaitingOnTheProvider() throws Exception {
        String tag = Jobs.tag();
        UUID id = pendingJob(tag);
        int submitted = submits(tag); // one, or two where a loaded machine made the first call outlive its deadline
        // This gateway goes away with the job waiting; nothing of it is left but the database.
        context.getRouteController().suspendRoute("reconciler");
        lookupAnswers(tag, "succeeded");

        Map<String, String> second = Map.of(
                "camel.main.name", "jobgate-restarted",
                "camel.server.port", Integer.toString(GatewayTestSupport.freePort()),
                "jobgate.data-dir", java.nio.file.Files.createTempDirectory("jobgate-restarted").toString(),
                "jobgate.broker.embedded-port", Integer.toString(GatewayTestSupport.freePort()),
                "jobgate.relay.enabled", "false",
                "jobgate.worker.enabled", "false");
        Map<String, String> previous = new java.util.HashMap<>();
        second.forEach((k, v) -> {
            previous.put(k, System.getProperty(k));
            System.setProperty(k, v);
        });
        org.apache.camel.main.Main restarted;
        try {
            restarted = Gateway.startInBackground(Duration.ofSeconds(60));
        } finally {
            previous.forEach((k, v) -> {
                if (v == null) {
                    System.clearProperty(k);
                } else {
                    System.setProperty(k, v);
                }
            });
        }
        try {
            Jobs.awaitStatus(id, "succeeded");
        } finally {
            restarted.stop();
        }
        assertThat(submits(tag)).as("submitted again after it was pending").isEqualTo(submitted);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND result IS NOT NULL", id)).isEqualTo(1);
    }

    @Test
    void aPartialRefundSettingGivesBackItsShareOfMoneyAndUnitsOnce() {
        io.jobgate.job.JobFinalizer finalizer = context.getRegistry().lookupByNameAndType("jobFinalizer",
                io.jobgate.job.JobFinalizer.class);
        finalizer.refunding(40, 100);
        try {
            String tag = Jobs.tag();
            UUID id = pendingJob(tag);
            assertThat(webhook("msg_" + tag, Instant.now().getEpochSecond(), prediction(tag, "failed"), SECRET).status())
                    .isEqualTo(200);
            Jobs.awaitStatus(id, "failed");

            Map<String, Object> refund = Db.single("SELECT amount_micros, units, unit FROM ledger WHERE job_id = ? "
                    + "AND entry_type = 'refund'", id);
            assertThat(refund.get("amount_micros")).isEqualTo(2_800L);
            assertThat(((java.math.BigDecimal) refund.get("units")).compareTo(new java.math.BigDecimal("-0.4"))).isZero();
            assertThat(refund.get("unit")).isEqualTo("images");
            assertThat(refunds(id)).isEqualTo(1);
        } finally {
            finalizer.refunding(100, 100);
        }
    }
}
