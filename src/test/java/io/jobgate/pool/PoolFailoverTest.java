package io.jobgate.pool;

import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A pool of two image members (poola, weight 1; poolb, weight 0: the fallback), each faked by a WireMock server of
 * its own speaking like OpenAI Images, with the real relay, Artemis, PostgreSQL and S3 API: a definite failure on
 * poola moves the job to poolb (one debit, the dearest member's price); a reply lost after sending parks the job on
 * poola and poolb never hears of it; a job pinned to poola never runs on poolb; poola's gate closed for an hour sends
 * new jobs to poolb; a job naming an unknown pool is refused and nothing is stored. Tenants' rules
 * (src/test/resources/pools/tenants.yaml): eu-only never runs on poolb and its jobs say why they wait; sticky (no
 * failover) stays on its member; a provider or pool the tenant may not use is refused.
 */
class PoolFailoverTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer a;
    WireMockServer b;

    @Override
    protected Map<String, String> settings() throws Exception {
        a = fakeProvider();
        b = fakeProvider();
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.concurrency", "4"),
                Map.entry("jobgate.worker.lease-margin-seconds", "1"),
                Map.entry("jobgate.worker.backoff-base-ms", "100"),
                Map.entry("jobgate.worker.backoff-jitter", "false"),
                Map.entry("jobgate.provider.poola.base-url", a.baseUrl()),
                Map.entry("jobgate.provider.poolb.base-url", b.baseUrl()),
                Map.entry("jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/pools/providers"),
                Map.entry("jobgate.pools.dirs", "src/test/resources/pools/config,src/test/resources/pools/kinds"),
                Map.entry("jobgate.tenants.files", "config/tenants.yaml,src/test/resources/test-tenants.yaml,src/test/resources/pools/tenants.yaml"),
                Map.entry("camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/pools/adapters/*.camel.yaml"));
    }

    @org.apache.camel.BeanInject
    PoolHealth health;

    @BeforeEach
    void fresh() {
        a.resetAll();
        b.resetAll();
        Db.execute("UPDATE provider_gates SET closed_until = '-infinity'");
        Db.execute("DELETE FROM pool_members");
        health.forget();
    }

    /**
     * A pool job of {@code tenant} placed on poola and due now, while poola's gate is closed for an hour (by another
     * job's 429): what its start finds.
     */
    static UUID queuedOnPoolaBehindAnHoursGate(String tenant) {
        Db.execute("INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES ('poola', now() + interval '1 hour',"
                + " 'HTTP 429 for a test', now()) ON CONFLICT (provider) DO UPDATE SET closed_until = EXCLUDED.closed_until");
        return queuedOnPoola(tenant);
    }

    /** A pool job of {@code tenant} placed on poola (at admission, before what the test does to poola) and due now. */
    static UUID queuedOnPoola(String tenant) {
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        UUID id = jobs.job(tenant).key(tenant + "-queued-" + UUID.randomUUID()).provider("poola").pool("images").aspectClass("portrait")
                .inputs("""
                        {"supplier_name": "Pools", "invoice_id": "INV-1", "currency": "EUR",
                         "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}""").insert();
        jobs.dispatch(id, tenant, java.time.Instant.now());
        return id;
    }

    static String pngReply() {
        return "{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}";
    }

    static String request(String target) {
        return """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", %s,
                 "inputs": {"supplier_name": "Pools", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""".formatted(target);
    }

    /** The request of {@link #request} naming neither a provider nor a pool. */
    static String namingNeither() {
        return request("\"neither\": 0").replace(", \"neither\": 0,", ",");
    }

    static final String EU_ONLY = "test-eu-only-key";
    static final String STICKY = "test-sticky-key";
    static final String BONLY = "test-bonly-key";

    UUID submit(String target) {
        return submit(ACME, target);
    }

    UUID submit(String tenantKey, String target) {
        ApiClient.Response r = api.postJob(tenantKey, "k-" + UUID.randomUUID(), request(target));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static List<Map<String, Object>> attempts(UUID id) {
        return Db.rows("SELECT attempt, adapter, outcome, error_category FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt");
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, provider, pool, cost_micros FROM jobs WHERE job_id = ?", id);
    }

    static int calls(WireMockServer fake) {
        return fake.findAll(anyRequestedFor(anyUrl())).size();
    }

    @Test
    void aServerErrorOnTheFirstMemberSucceedsOnTheOtherChargedOnceAtTheDearestPrice() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(id, "succeeded");

        assertThat(attempts(id)).extracting(r -> r.get("attempt") + ":" + r.get("adapter") + ":" + r.get("outcome") + ":" + r.get("error_category"))
                .containsExactly("1:poola:retry_wait:transient", "2:poolb:succeeded:null");
        // The tenant pays what admission fixed: poolb's 3000 (the dearest member), though poola (1000) was placed first.
        assertThat(job(id)).containsEntry("provider", "poolb").containsEntry("pool", "images").containsEntry("cost_micros", 3000L);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT -sum(amount_micros) FROM ledger WHERE job_id = ?", id)).isEqualTo(3000);
        assertThat(calls(a)).isEqualTo(1);
        assertThat(calls(b)).isEqualTo(1);
        JsonNode view = api.get(ACME, "/v1/jobs/" + id).json();
        assertThat(view.path("pool").asText()).isEqualTo("images");
        assertThat(view.path("provider").asText()).isEqualTo("poolb");
        assertThat(view.path("cost").path("amount_micros").asLong()).isEqualTo(3000);
    }

    @org.apache.camel.BeanInject("usageRollups")
    io.jobgate.usage.UsageRollups rollups;

    @Test
    void eachMembersChargeIsWhatTheJobsItServedPaidThoughUsageWasRolledUpWhileAJobWaitedOnAnother() {
        // poola answers its first call 503 after 0.3 s (well within its 1.5 s deadline), then renders; poolb renders.
        a.stubFor(post(PATH).inScenario("first").whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED)
                .willSetStateTo("up").willReturn(aResponse().withStatus(503).withBody("busy").withFixedDelay(300)));
        a.stubFor(post(PATH).inScenario("first").whenScenarioStateIs("up").willReturn(aResponse().withStatus(200).withBody(pngReply())));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        Map<String, JsonNode> before = members();

        UUID moved = submit("\"pool\": \"images\"");
        assertThat(job(moved)).containsEntry("provider", "poola");
        // A roll-up while the job is still poola's leaves its debit pending: the job may yet move.
        rollups.rollUpAll();
        assertThat(Jobs.status(moved)).isNotEqualTo("succeeded");
        assertThat(Db.count("SELECT count(*) FROM usage_pending p JOIN ledger l ON l.entry_id = p.entry_id WHERE l.job_id = ?", moved))
                .isEqualTo(1);
        Jobs.awaitStatus(moved, "succeeded");
        UUID stayed = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(stayed, "succeeded");
        rollups.rollUpAll();
        assertThat(Db.count("SELECT count(*) FROM usage_pending p JOIN ledger l ON l.entry_id = p.entry_id WHERE l.job_id IN (?, ?)",
                moved, stayed)).isZero();
        assertThat(attempts(moved)).extracting(r -> r.get("adapter")).containsExactly("poola", "poolb");
        assertThat(attempts(stayed)).extracting(r -> r.get("adapter")).containsExactly("poola");

        // Each paid the pool's price (poolb's 3000, the dearest). poolb served the moved job: its charge is poolb's, at
        // poolb's own list (3000), margin 0; poola served the other: 3000 charged against its list's 1000, margin 2000.
        Map<String, JsonNode> after = members();
        assertThat(delta(before, after, "poola", "charged_micros")).isEqualTo(3000);
        assertThat(delta(before, after, "poola", "cost_micros")).isEqualTo(1000);
        assertThat(delta(before, after, "poola", "margin_micros")).isEqualTo(2000);
        assertThat(delta(before, after, "poolb", "charged_micros")).isEqualTo(3000);
        assertThat(delta(before, after, "poolb", "cost_micros")).isEqualTo(3000);
        assertThat(delta(before, after, "poolb", "margin_micros")).isZero();
        assertThat(after.get("poola").path("pools").toString()).contains("\"images\"");
        assertThat(after.get("poola").path("estimated").asBoolean()).as("no billed units from these fakes").isTrue();
    }

    /** {@code GET /v1/admin/usage}'s members of kind image, by provider. */
    Map<String, JsonNode> members() {
        java.time.Instant now = java.time.Instant.now();
        ApiClient.Response r = api.get(io.jobgate.support.TestTenants.ADMIN, "/v1/admin/usage?from=" + now.minus(Duration.ofDays(1))
                + "&to=" + now.plus(Duration.ofDays(1)));
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        Map<String, JsonNode> members = new java.util.HashMap<>();
        r.json().path("members").forEach(m -> {
            if (m.path("kind").asText().equals("image")) {
                members.put(m.path("provider").asText(), m);
            }
        });
        return members;
    }

    static long delta(Map<String, JsonNode> before, Map<String, JsonNode> after, String provider, String field) {
        return after.get(provider).path(field).asLong() - (before.containsKey(provider) ? before.get(provider).path(field).asLong() : 0);
    }

    @org.apache.camel.BeanInject("jmsConnectionFactory")
    jakarta.jms.ConnectionFactory jmsFactory;

    @Test
    void aMoveIsAnnouncedOnTheStatusEventsTopicWithTheMemberItMovedTo() throws Exception {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID pinned;
        try (io.jobgate.support.Jms jms = new io.jobgate.support.Jms(jmsFactory);
             jakarta.jms.Session session = jms.connection().createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE);
             jakarta.jms.MessageConsumer events = session.createConsumer(session.createTopic(io.jobgate.relay.OutboxRelay.EVENTS_TOPIC),
                     "JobgateStatus = 'retry_wait'")) {
            UUID moved = submit("\"pool\": \"images\"");
            Jobs.awaitStatus(moved, "succeeded");
            // A pinned job's retry stays where it is: its retry_wait event names no member.
            pinned = submit("\"provider\": \"poola\"");
            await().atMost(Duration.ofSeconds(30)).until(() -> Db.count("SELECT count(*) FROM attempts WHERE job_id = ?", pinned) >= 1
                    && Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'status' AND payload->>'status' = 'retry_wait'"
                    + " AND published_at IS NOT NULL", pinned) >= 1);

            Map<String, JsonNode> retries = new java.util.HashMap<>();
            for (jakarta.jms.Message m; (m = events.receive(retries.size() == 2 ? 300 : 5000)) != null; ) {
                JsonNode event = io.jobgate.common.Json.parseObject(((jakarta.jms.TextMessage) m).getText()
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8));
                retries.putIfAbsent(event.path("job_id").asText(), event);
            }
            assertThat(retries.get(moved.toString())).as("the moved job's retry_wait event").isNotNull();
            assertThat(retries.get(moved.toString()).path("moved_to").asText()).isEqualTo("poolb");
            assertThat(retries.get(pinned.toString())).as("the pinned job's first retry_wait event").isNotNull();
            assertThat(retries.get(pinned.toString()).has("moved_to")).isFalse();
        }
        // The pinned job would go on retrying on poola into the next test: cancelled, or (in flight: 409) left to fail.
        assertThat(api.post(ACME, "/v1/jobs/" + pinned + "/cancel").status()).isIn(200, 202, 409);
        Jobs.awaitFinal(pinned);
    }

    @Test
    void aReplyLostAfterSendingParksTheJobOnItsMemberAndTheOtherNeverGetsIt() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(4000)));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(id, "submission_unknown");

        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> "submission_unknown".equals(Jobs.status(id)));
        assertThat(attempts(id)).extracting(r -> r.get("adapter") + ":" + r.get("outcome") + ":" + r.get("error_category"))
                .containsExactly("poola:submission_unknown:ambiguous");
        assertThat(job(id)).containsEntry("provider", "poola");
        assertThat(calls(a)).isEqualTo(1);
        assertThat(calls(b)).as("a job that may be rendering on poola is never sent to poolb").isZero();
    }

    @Test
    void aJobPinnedToAMemberNeverRunsOnTheOther() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit("\"provider\": \"poola\"");
        Jobs.awaitStatus(id, "failed");

        assertThat(attempts(id)).isNotEmpty().allSatisfy(r -> assertThat(r.get("adapter")).isEqualTo("poola"));
        assertThat(attempts(id)).hasSizeGreaterThan(1);
        assertThat(job(id)).containsEntry("provider", "poola").containsEntry("pool", null);
        assertThat(calls(b)).isZero();
        assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("pool").isNull()).isTrue();
    }

    @Test
    void aGateClosedForAnHourSendsTheJobAndNewJobsToTheOtherMember() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(429).withHeader("Retry-After", "3600")
                .withBody("{\"error\": {\"message\": \"Rate limit reached\"}}")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID limited = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(limited, "succeeded");
        assertThat(attempts(limited)).extracting(r -> r.get("adapter") + ":" + r.get("outcome"))
                .containsExactly("poola:retry_wait", "poolb:succeeded");
        assertThat(Db.count("SELECT count(*) FROM provider_gates WHERE provider = 'poola' AND closed_until > now() + interval '50 minutes'"))
                .isEqualTo(1);

        // poola's gate stays closed for an hour, beyond its max-wait of 60 s: new jobs are placed on poolb at admission.
        UUID next = submit("\"pool\": \"images\"");
        assertThat(job(next)).containsEntry("provider", "poolb");
        Jobs.awaitStatus(next, "succeeded");
        assertThat(attempts(next)).extracting(r -> r.get("adapter")).containsExactly("poolb");
        assertThat(calls(a)).isEqualTo(1);
    }

    @Test
    void aJobQueuedOnAMemberWhoseGateClosesForAnHourIsPlacedAgainAtItsStart() {
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        // poola's gate closed for an hour (by another job's 429) while this job waits for its start on it.
        UUID id = queuedOnPoolaBehindAnHoursGate("acme");
        Jobs.awaitStatus(id, "succeeded");
        assertThat(attempts(id)).extracting(r -> r.get("adapter")).containsExactly("poolb");
        assertThat(calls(a)).isZero();
    }

    @Test
    void aJobNamingAnUnknownPoolIsRefusedAndNothingIsStored() {
        long jobs = Db.count("SELECT count(*) FROM jobs");
        long ledger = Db.count("SELECT count(*) FROM ledger");
        ApiClient.Response r = api.postJob(ACME, "k-unknown-pool", request("\"pool\": \"nosuch\""));
        assertThat(r.status()).isEqualTo(422);
        assertThat(r.json().path("code").asText()).isEqualTo("unknown_pool");
        assertThat(r.json().path("field").asText()).isEqualTo("pool");
        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobs);
        assertThat(Db.count("SELECT count(*) FROM ledger")).isEqualTo(ledger);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = 'k-unknown-pool'")).isZero();

        ApiClient.Response kind = api.postJob(ACME, "k-kind", request("\"pool\": \"transcripts\""));
        assertThat(kind.status()).isEqualTo(422);
        assertThat(kind.json().path("code").asText()).isEqualTo("pool_kind_mismatch");
        ApiClient.Response both = api.postJob(ACME, "k-both", request("\"pool\": \"images\", \"provider\": \"poola\""));
        assertThat(both.status()).isEqualTo(422);
        assertThat(both.json().path("code").asText()).isEqualTo("pool_or_provider");
        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobs);
    }

    @Test
    void aTenantThatDeniesTheOtherMemberWaitsOnItsOwnSaysWhyAndNeverRunsThere() {
        // poola throttled for ten minutes (beyond its max-wait of 60 s, within the jobs' lifetime); poolb would serve.
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(429).withHeader("Retry-After", "600")
                .withBody("{\"error\": {\"message\": \"Rate limit reached\"}}")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID limited = submit(EU_ONLY, "\"pool\": \"images\"");
        Jobs.awaitStatus(limited, "retry_wait");

        JsonNode view = api.get(EU_ONLY, "/v1/jobs/" + limited).json();
        assertThat(view.path("provider").asText()).isEqualTo("poola");
        assertThat(view.path("next_attempt_at").asText()).isNotEmpty();
        assertThat(view.path("waiting_reason").asText()).as(view.toString())
                .contains("waits for poola until").contains("gate is closed beyond its max-wait").contains("poolb: tenant eu-only may not use it");
        assertThat(attempts(limited)).extracting(r -> r.get("adapter") + ":" + r.get("outcome")).containsExactly("poola:retry_wait");

        // A job admitted while poola is closed is placed on it all the same (its dispatch due at the reopening), and says so.
        UUID queued = submit(EU_ONLY, "\"pool\": \"images\"");
        JsonNode queuedView = api.get(EU_ONLY, "/v1/jobs/" + queued).json();
        assertThat(queuedView.path("status").asText()).isEqualTo("queued");
        assertThat(queuedView.path("provider").asText()).isEqualTo("poola");
        assertThat(queuedView.path("waiting_reason").asText()).contains("waits for poola").contains("tenant eu-only may not use it");
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> "queued".equals(Jobs.status(queued)));
        assertThat(calls(b)).as("none of eu-only's jobs ran on poolb").isZero();
        assertThat(calls(a)).isEqualTo(1);

        // Another tenant's job in the same pool moves on to poolb.
        UUID other = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(other, "succeeded");
        assertThat(job(other)).containsEntry("provider", "poolb");
        assertThat(Jobs.status(limited)).isEqualTo("retry_wait");
        assertThat(job(limited)).containsEntry("provider", "poola");
    }

    @Test
    void aTenantWithoutFailoverStaysOnItsMemberAfterAServerError() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(STICKY, "\"pool\": \"images\"");
        Jobs.awaitStatus(id, "failed");

        assertThat(attempts(id)).hasSizeGreaterThan(1).allSatisfy(r -> assertThat(r.get("adapter")).isEqualTo("poola"));
        assertThat(job(id)).containsEntry("provider", "poola").containsEntry("pool", "images");
        assertThat(calls(b)).isZero();
    }

    @Test
    void aTenantWithoutFailoverWaitsOutItsMembersClosedGateAndSaysWhy() {
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        // poola's gate closed for an hour (by another job's 429) while this job waits for its start on it.
        UUID id = queuedOnPoolaBehindAnHoursGate("sticky");
        Jobs.awaitStatus(id, "retry_wait");

        JsonNode view = api.get(STICKY, "/v1/jobs/" + id).json();
        assertThat(view.path("provider").asText()).isEqualTo("poola");
        assertThat(view.path("waiting_reason").asText()).as(view.toString()).contains("failover is off for its tenant: it stays on poola");
        assertThat(attempts(id)).isEmpty();
        assertThat(calls(a)).isZero();
        assertThat(calls(b)).isZero();
    }

    /**
     * poola (threshold 3 failures a minute, cooldown a minute) fails three jobs with 503s: it cools down for every job, so a
     * new job goes to poolb without a call to poola; once its cooldown ends, the next job probes it, and the probe's
     * success gives poola its traffic back. The admin API and the metrics show each state.
     */
    @Test
    void aMemberThatFailsItsThresholdCoolsDownForEveryJobAndItsProbeGivesItsTrafficBack() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        double cooledBefore = counted("jobgate_pool_member_cooldowns_total", "pool", "images", "member", "poola");
        double movedBefore = counted("jobgate_pool_moves_total", "pool", "images", "from", "poola", "to", "poolb");
        for (int i = 0; i < 3; i++) {
            UUID failedOver = submit("\"pool\": \"images\"");
            Jobs.awaitStatus(failedOver, "succeeded");
            assertThat(attempts(failedOver)).extracting(r -> r.get("adapter") + ":" + r.get("error_category"))
                    .containsExactly("poola:transient", "poolb:null");
        }
        JsonNode cooling = member("poola");
        assertThat(cooling.path("state").asText()).as(cooling.toString()).isEqualTo("cooling");
        assertThat(cooling.path("cooling_until").asText()).isNotEmpty();
        assertThat(cooling.path("failure_threshold").asInt()).isEqualTo(3);
        assertThat(member("poolb").path("state").asText()).isEqualTo("open");
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            io.jobgate.support.PrometheusText m = io.jobgate.support.PrometheusText.parse(api.get(null, "/observe/metrics").text());
            assertThat(m.value("jobgate_pool_member_cooling", "pool", "images", "member", "poola")).isEqualTo(1);
            assertThat(m.value("jobgate_pool_member_takes_attempts", "pool", "images", "member", "poola")).isZero();
            assertThat(m.value("jobgate_pool_member_takes_attempts", "pool", "images", "member", "poolb")).isEqualTo(1);
        });
        assertThat(counted("jobgate_pool_member_cooldowns_total", "pool", "images", "member", "poola")).isEqualTo(cooledBefore + 1);
        assertThat(counted("jobgate_pool_moves_total", "pool", "images", "from", "poola", "to", "poolb")).isEqualTo(movedBefore + 3);

        // Cooling: placed on poolb at admission, poola not called.
        int callsToA = calls(a);
        UUID whileCooling = submit("\"pool\": \"images\"");
        assertThat(job(whileCooling)).containsEntry("provider", "poolb");
        Jobs.awaitStatus(whileCooling, "succeeded");
        assertThat(attempts(whileCooling)).extracting(r -> r.get("adapter")).containsExactly("poolb");
        assertThat(calls(a)).isEqualTo(callsToA);

        // poola is well again; its minute of cooldown runs out: the next job is its probe, and its success gives poola its
        // traffic back.
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        Db.execute("UPDATE pool_members SET cooling_until = now() - interval '1 second' WHERE pool = 'images' AND member = 'poola'");
        health.forget();
        assertThat(member("poola").path("state").asText()).isEqualTo("probe-open");
        UUID probe = submit("\"pool\": \"images\"");
        assertThat(job(probe)).containsEntry("provider", "poola");
        Jobs.awaitStatus(probe, "succeeded");
        assertThat(attempts(probe)).extracting(r -> r.get("adapter")).containsExactly("poola");
        assertThat(member("poola").path("state").asText()).isEqualTo("open");
        UUID after = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(after, "succeeded");
        assertThat(attempts(after)).extracting(r -> r.get("adapter")).containsExactly("poola");
    }

    /**
     * A job queued on poola before it cooled down is placed again at its start (no call to the cooling member), and a
     * job whose tenant allows no failover stays and runs there.
     */
    @Test
    void aJobQueuedOnAMemberThatCooledDownIsPlacedAgainAtItsStart() {
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        Db.execute("INSERT INTO pool_members (pool, member, cooling_until, updated_at) VALUES ('images', 'poola', now() + interval '1 hour', now())");
        health.forget();
        UUID queued = queuedOnPoola("acme");
        Jobs.awaitStatus(queued, "succeeded");
        assertThat(attempts(queued)).extracting(r -> r.get("adapter")).containsExactly("poolb");
        assertThat(calls(a)).isZero();

        UUID sticky = queuedOnPoola("sticky");
        Jobs.awaitStatus(sticky, "succeeded");
        assertThat(attempts(sticky)).extracting(r -> r.get("adapter")).as("failover is off for its tenant").containsExactly("poola");
        // Admitted while poola cools, a job of that tenant is placed on poolb: it has no member to stay on yet.
        UUID admitted = submit(STICKY, "\"pool\": \"images\"");
        assertThat(job(admitted)).containsEntry("provider", "poolb");
    }

    /** An operator drains poola: new jobs go to poolb; restored, poola takes them again. Who did it is shown. */
    @Test
    void aDrainedMemberTakesNoNewAttemptsUntilAnOperatorRestoresIt() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        ApiClient.Response drained = admin("/v1/admin/pools/images/members/poola/drain",
                "{\"operator\": \"ops@example.com\", \"reason\": \"maintenance at the provider\"}");
        assertThat(drained.status()).as(drained.text()).isEqualTo(200);
        JsonNode poola = drained.json().path("members").get(0);
        assertThat(poola.path("provider").asText()).isEqualTo("poola");
        assertThat(poola.path("state").asText()).isEqualTo("drained");
        assertThat(poola.path("drained_by").asText()).isEqualTo("ops@example.com");
        assertThat(poola.path("drained_reason").asText()).isEqualTo("maintenance at the provider");

        UUID whileDrained = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(whileDrained, "succeeded");
        assertThat(attempts(whileDrained)).extracting(r -> r.get("adapter")).containsExactly("poolb");
        assertThat(calls(a)).isZero();

        // Refused: no operator named, a tenant's key, no key.
        assertThat(admin("/v1/admin/pools/images/members/poola/restore", "{}").code()).isEqualTo("invalid_parameter");
        assertThat(api.send(api.request("/v1/admin/pools", ACME).GET().build()).status()).isIn(401, 403);
        assertThat(api.send(api.request("/v1/admin/pools", null).GET().build()).status()).isEqualTo(401);
        assertThat(member("poola").path("state").asText()).isEqualTo("drained");

        assertThat(admin("/v1/admin/pools/images/members/poola/restore", "{\"operator\": \"ops@example.com\"}").status()).isEqualTo(200);
        assertThat(member("poola").path("state").asText()).isEqualTo("open");
        UUID restored = submit("\"pool\": \"images\"");
        Jobs.awaitStatus(restored, "succeeded");
        assertThat(attempts(restored)).extracting(r -> r.get("adapter")).containsExactly("poola");
    }

    /** A counter's value now (0 before its first count). */
    double counted(String name, String... labels) {
        double value = io.jobgate.support.PrometheusText.parse(api.get(null, "/observe/metrics").text()).value(name, labels);
        return Double.isNaN(value) ? 0 : value;
    }

    ApiClient.Response admin(String path, String body) {
        return api.send(api.request(path, io.jobgate.support.TestTenants.ADMIN).header("Content-Type", "application/json")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build());
    }

    /** The member as {@code GET /v1/admin/pools} shows it in pool images. */
    JsonNode member(String provider) {
        ApiClient.Response pools = api.get(io.jobgate.support.TestTenants.ADMIN, "/v1/admin/pools");
        assertThat(pools.status()).as(pools.text()).isEqualTo(200);
        for (JsonNode pool : pools.json().path("pools")) {
            if (pool.path("name").asText().equals("images")) {
                for (JsonNode m : pool.path("members")) {
                    if (m.path("provider").asText().equals(provider)) {
                        return m;
                    }
                }
            }
        }
        throw new AssertionError("no member " + provider + " of pool images in " + pools.text());
    }

    @Test
    void aJobNamingNeitherAProviderNorAPoolRunsInItsPresetsPoolAndMovesLikeAnyPoolJob() {
        a.stubFor(post(PATH).willReturn(aResponse().withStatus(503).withBody("busy")));
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                + Base64.getEncoder().encodeToString(Samples.jpeg(1024, 1536)) + "\"}]}")));
        // invoice-scan is listed by pool scans (src/test/resources/pools/config/scans.properties); invoice-clean by none.
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), namingNeither().replace("invoice-clean", "invoice-scan"));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID scan = UUID.fromString(r.json().path("job_id").asText());
        assertThat(r.json().path("pool").asText()).isEqualTo("scans");
        assertThat(r.json().path("provider").asText()).as("placed at admission").isEqualTo("poola");
        assertThat(job(scan)).containsEntry("pool", "scans").containsEntry("cost_micros", 3000L);
        Jobs.awaitStatus(scan, "succeeded");
        assertThat(attempts(scan)).extracting(row -> row.get("adapter")).containsExactly("poola", "poolb");

        // A provider named pins the job as before, and a preset no pool lists goes to the kind's default provider.
        ApiClient.Response pinned = api.postJob(ACME, "k-" + UUID.randomUUID(), request("\"provider\": \"poolb\"")
                .replace("invoice-clean", "invoice-scan"));
        assertThat(job(UUID.fromString(pinned.json().path("job_id").asText()))).containsEntry("pool", null).containsEntry("provider", "poolb");
        ApiClient.Response plain = api.postJob(ACME, "k-" + UUID.randomUUID(), namingNeither());
        assertThat(job(UUID.fromString(plain.json().path("job_id").asText()))).containsEntry("pool", null);
        // Both end here, not in the next test (whose counts of jobs and ledger lines they would change).
        Jobs.awaitFinal(UUID.fromString(pinned.json().path("job_id").asText()));
        Jobs.awaitFinal(UUID.fromString(plain.json().path("job_id").asText()));
    }

    @Test
    void aProviderOrPoolTheTenantMayNotUseIsRefusedAndNothingIsStored() {
        long jobs = Db.count("SELECT count(*) FROM jobs");
        long ledger = Db.count("SELECT count(*) FROM ledger");
        ApiClient.Response named = api.postJob(EU_ONLY, "k-denied-provider", request("\"provider\": \"poolb\""));
        assertThat(named.status()).as(named.text()).isEqualTo(422);
        assertThat(named.json().path("code").asText()).isEqualTo("provider_not_allowed");
        assertThat(named.json().path("field").asText()).isEqualTo("provider");
        ApiClient.Response pool = api.postJob(EU_ONLY, "k-denied-pool", request("\"pool\": \"fallback\""));
        assertThat(pool.status()).as(pool.text()).isEqualTo(422);
        assertThat(pool.json().path("code").asText()).isEqualTo("pool_not_allowed");
        assertThat(pool.json().path("field").asText()).isEqualTo("pool");
        ApiClient.Response allowOnly = api.postJob(BONLY, "k-not-allowed", request("\"provider\": \"poola\""));
        assertThat(allowOnly.json().path("code").asText()).isEqualTo("provider_not_allowed");
        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobs);
        assertThat(Db.count("SELECT count(*) FROM ledger")).isEqualTo(ledger);

        // Without a pool or a provider named, the job goes to a provider the tenant may use, not the kind's default.
        b.stubFor(post(PATH).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        ApiClient.Response plain = api.postJob(BONLY, "k-" + UUID.randomUUID(), namingNeither());
        assertThat(plain.status()).as(plain.text()).isEqualTo(202);
        UUID chosen = UUID.fromString(plain.json().path("job_id").asText());
        assertThat((String) job(chosen).get("provider")).isIn("poolb", "fakeimg");
        assertThat(job(chosen)).containsEntry("pool", null);
    }
}
