package io.jobgate.console;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.api.ConsoleAccess;
import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator console and the admin API's job search and story behind it (issue 67), over HTTP against the real worker
 * and a WireMock provider: a job found by its id or idempotency key across tenants, filters and cursor paging, a job's
 * story with its attempts, ledger, manifest and timeline and never its prompt, the pages and the output they show, and
 * who may open them.
 */
class ConsoleTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer fake;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        // A pool (of fakeimg) for the overview to show.
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl(),
                // A call held open for the overview to count outlasts no deadline.
                "jobgate.provider.fakeimg.call-deadline-ms", "20000",
                "jobgate.pools.dirs", "src/test/resources/pools/kinds");
    }

    record Submitted(UUID id, String key, String tag, String requestId) {
    }

    /** A job whose supplier name is its tag (the prompt a console must never show), rendered or refused by the provider. */
    Submitted submit(String tenantKey, boolean renders) {
        String tag = "Secret-Supplier-" + Jobs.tag();
        String requestId = "req-" + UUID.randomUUID();
        if (renders) {
            fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(rendered().withHeader("x-request-id", requestId)));
        } else {
            fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(aResponse().withStatus(400)
                    .withHeader("Content-Type", "application/json").withBody("{\"error\": {\"message\": \"refused\"}}")));
        }
        String key = "order-" + UUID.randomUUID();
        UUID id = accepted(tenantKey, key, tag);
        Jobs.awaitStatus(id, renders ? "succeeded" : "failed");
        return new Submitted(id, key, tag, requestId);
    }

    /** The provider's answer with an image of the job's size. */
    static com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder rendered() {
        return aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}");
    }

    /** A job of the tenant under {@code key} whose supplier name is {@code tag}, accepted: its id. */
    UUID accepted(String tenantKey, String key, String tag) {
        ApiClient.Response r = api.postJob(tenantKey, key, """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""".formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    ApiClient.Response admin(String path) {
        return api.get(ADMIN, path);
    }

    ApiClient.Response console(String authorization, String path) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(api.base() + path)).GET();
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        return api.send(request.build());
    }

    static String basic(String password) {
        return "Basic " + Base64.getEncoder().encodeToString(("operator:" + password).getBytes(StandardCharsets.UTF_8));
    }

    static List<String> ids(ApiClient.Response page) {
        List<String> ids = new ArrayList<>();
        page.json().path("jobs").forEach(j -> ids.add(j.path("job_id").asText()));
        return ids;
    }

    @Test
    void anOperatorFindsAJobByItsIdOrKeyAcrossTenantsAndPagesThroughFilters() {
        Instant before = Instant.now().minusSeconds(1);
        Submitted acme = submit(ACME, true);
        Submitted acmeFailed = submit(ACME, false);
        Submitted globex = submit(GLOBEX, true);
        Submitted globexFailed = submit(GLOBEX, false);

        // Found by its idempotency key without naming the tenant, and by its id.
        ApiClient.Response byKey = admin("/v1/admin/jobs?find=" + globex.key());
        assertThat(byKey.status()).as(byKey.text()).isEqualTo(200);
        assertThat(ids(byKey)).containsExactly(globex.id().toString());
        assertThat(byKey.json().path("jobs").get(0).path("tenant_id").asText()).isEqualTo("globex");
        assertThat(ids(admin("/v1/admin/jobs?find=" + acme.id()))).containsExactly(acme.id().toString());
        ApiClient.Response none = admin("/v1/admin/jobs?find=no-such-key-" + UUID.randomUUID());
        assertThat(ids(none)).isEmpty();
        assertThat(none.json().path("count").asInt()).isZero();

        // Filters: a tenant's jobs only; failed jobs of every tenant, by category; a time range.
        List<String> globexJobs = ids(admin("/v1/admin/jobs?tenant=globex&from=" + before));
        assertThat(globexJobs).containsExactly(globexFailed.id().toString(), globex.id().toString());
        ApiClient.Response failed = admin("/v1/admin/jobs?status=failed&category=terminal_request&from=" + before);
        assertThat(ids(failed)).containsExactly(globexFailed.id().toString(), acmeFailed.id().toString());
        assertThat(failed.json().path("count").asInt()).isEqualTo(2);
        assertThat(ids(admin("/v1/admin/jobs?to=" + before))).doesNotContainAnyElementsOf(
                List.of(acme.id().toString(), globex.id().toString()));

        // Cursor paging, newest first: pages of one join into the whole list, each job once, the count of all on each.
        List<String> paged = new ArrayList<>();
        String cursor = null;
        do {
            ApiClient.Response page = admin("/v1/admin/jobs?limit=1&from=" + before + (cursor == null ? "" : "&cursor=" + cursor));
            assertThat(page.status()).as(page.text()).isEqualTo(200);
            assertThat(page.json().path("count").asInt()).isEqualTo(4);
            paged.addAll(ids(page));
            cursor = page.json().path("next_cursor").isNull() ? null : page.json().path("next_cursor").asText();
        } while (cursor != null);
        assertThat(paged).containsExactly(globexFailed.id().toString(), globex.id().toString(), acmeFailed.id().toString(),
                acme.id().toString());

        // What cannot be is refused, with the field it came in.
        for (String[] bad : new String[][] {{"status=nope", "status"}, {"limit=0", "limit"}, {"limit=101", "limit"},
                {"cursor=x", "cursor"}, {"from=yesterday", "from"}, {"category=nope", "category"},
                {"from=2026-12-07&to=2026-12-01", "from"}}) {
            ApiClient.Response refused = admin("/v1/admin/jobs?" + bad[0]);
            assertThat(refused.status()).as(bad[0] + ": " + refused.text()).isEqualTo(400);
            assertThat(refused.code()).isEqualTo("invalid_parameter");
            assertThat(refused.json().path("field").asText()).isEqualTo(bad[1]);
        }
        // A tenant's key is not the admin's.
        assertThat(api.get(ACME, "/v1/admin/jobs").status()).isEqualTo(401);
    }

    @Test
    void aJobsStoryHasItsAttemptsLedgerManifestAndTimelineAndNeverItsPrompt() {
        Submitted ok = submit(ACME, true);
        Submitted refused = submit(ACME, false);

        ApiClient.Response story = admin("/v1/admin/jobs/" + ok.id());
        assertThat(story.status()).as(story.text()).isEqualTo(200);
        JsonNode s = story.json();
        assertThat(s.path("job").path("status").asText()).isEqualTo("succeeded");
        assertThat(s.path("job").path("idempotency_key").asText()).isEqualTo(ok.key());
        JsonNode attempt = s.path("attempts").get(0);
        assertThat(attempt.path("outcome").asText()).isEqualTo("succeeded");
        assertThat(attempt.path("provider_request_id").asText()).isEqualTo(ok.requestId());
        assertThat(attempt.path("revision").asText()).isNotEmpty();
        assertThat(s.path("ledger")).hasSize(1);
        assertThat(s.path("ledger").get(0).path("entry_type").asText()).isEqualTo("debit");
        assertThat(s.path("manifest").path("job_id").asText()).isEqualTo(ok.id().toString());
        assertThat(s.path("manifest").has("expected")).as("the manifest's expected values are the inputs").isFalse();
        assertThat(s.path("manifest").path("output").has("key")).isFalse();
        List<String> timeline = new ArrayList<>();
        s.path("timeline").forEach(e -> timeline.add(e.path("what").asText()));
        assertThat(timeline).containsSubsequence("accepted", "attempt 1 started", "attempt 1 ended", "succeeded");
        assertThat(timeline).contains("debit");
        assertThat(story.text()).as("never the prompt").doesNotContain(ok.tag());

        JsonNode failed = admin("/v1/admin/jobs/" + refused.id()).json();
        assertThat(failed.path("job").path("error").path("category").asText()).isEqualTo("terminal_request");
        assertThat(failed.path("attempts").get(0).path("http_status").asInt()).isEqualTo(400);
        List<String> entries = new ArrayList<>();
        failed.path("ledger").forEach(l -> entries.add(l.path("entry_type").asText()));
        assertThat(entries).containsExactly("debit", "refund");

        // A provider's webhook about the job is evidence the story shows, with what the reconciler made of it.
        io.jobgate.support.Db.update("INSERT INTO webhook_receipts (provider, webhook_id, job_id, outcome) VALUES ('fakeimg', ?, ?, 'ignored: final')",
                "wh-" + ok.id(), ok.id());
        JsonNode received = admin("/v1/admin/jobs/" + ok.id()).json();
        assertThat(received.path("webhooks_received").get(0).path("webhook_id").asText()).isEqualTo("wh-" + ok.id());
        assertThat(received.path("webhooks_received").get(0).path("outcome").asText()).isEqualTo("ignored: final");
        assertThat(console(basic(ADMIN), "/console/jobs/" + ok.id()).text()).contains("id=\"webhooks-received\"").contains("wh-" + ok.id());
        assertThat(received.path("attempts").get(0).path("revision_role").asText()).isEqualTo("stable");
        assertThat(received.path("lookups").path("lookups").isInt()).as("the lookups are counted").isTrue();
        assertThat(received.path("lookups").path("lookups").asInt()).as("a provider that answered at once was not looked up").isZero();
        assertThat(received.path("lookups").path("next_lookup_at").isMissingNode()
                || received.path("lookups").path("next_lookup_at").isNull()).as("nor will it be").isTrue();
        assertThat(console(basic(ADMIN), "/console/jobs/" + ok.id()).text()).contains("<p id=\"lookups\">")
                .contains("Lookups made by the poller: 0.");

        ApiClient.Response missing = admin("/v1/admin/jobs/" + UUID.randomUUID());
        assertThat(missing.status()).isEqualTo(404);
        assertThat(missing.code()).isEqualTo("job_not_found");
    }

    @Test
    void thePagesShowTheJobAndItsOutputToTheAdminOnly() throws Exception {
        Submitted ok = submit(GLOBEX, true);
        String admin = basic(ADMIN);

        ApiClient.Response jobs = console(admin, "/console/jobs?find=" + ok.key());
        assertThat(jobs.status()).as(jobs.text()).isEqualTo(200);
        assertThat(jobs.contentType()).startsWith("text/html");
        assertThat(jobs.header("Content-Security-Policy")).contains("default-src 'none'").contains("script-src 'self'");
        assertThat(jobs.text()).contains("/console/jobs/" + ok.id()).contains("1 job found.");

        ApiClient.Response page = console(admin, "/console/jobs/" + ok.id());
        assertThat(page.status()).as(page.text()).isEqualTo(200);
        assertThat(page.text()).contains("<h1>Job <code>" + ok.id() + "</code></h1>").contains(ok.requestId())
                .contains("id=\"attempts\"").contains("id=\"output-image\"").contains("debit").doesNotContain("supplier_name");
        assertThat(page.text()).as("never the prompt").doesNotContain(ok.tag());

        ApiClient.Response output = console(admin, "/console/jobs/" + ok.id() + "/output");
        assertThat(output.status()).isEqualTo(200);
        assertThat(output.contentType()).isEqualTo("image/png");
        byte[] served = api.getBytes(ADMIN, "/console/jobs/" + ok.id() + "/output");
        assertThat(Digests.sha256Hex(served)).isEqualTo(api.get(GLOBEX, "/v1/jobs/" + ok.id()).json().path("output").path("sha256").asText());

        ApiClient.Response css = console(admin, "/console/assets/pico.min.css");
        assertThat(css.status()).isEqualTo(200);
        assertThat(css.contentType()).startsWith("text/css");
        assertThat(console(admin, "/console/assets/htmx.min.js").status()).isEqualTo(200);
        assertThat(console(admin, "/console/assets/../config").status()).isIn(400, 404);

        ApiClient.Response notFound = console(admin, "/console/jobs/" + UUID.randomUUID());
        assertThat(notFound.status()).isEqualTo(404);
        assertThat(notFound.contentType()).startsWith("text/html");
        assertThat(notFound.text()).contains("job_not_found");
        ApiClient.Response badFilter = console(admin, "/console/jobs?status=nope");
        assertThat(badFilter.status()).isEqualTo(400);
        assertThat(badFilter.text()).contains("Unknown status");

        // Nobody else: no key, a tenant's key (as Basic's password or as a bearer token), a wrong one.
        for (String refused : new String[] {null, basic(GLOBEX), "Bearer " + GLOBEX, basic("not-the-key")}) {
            for (String path : List.of("/console/jobs", "/console/jobs/" + ok.id(), "/console/jobs/" + ok.id() + "/output",
                    "/console/assets/htmx.min.js")) {
                ApiClient.Response r = console(refused, path);
                assertThat(r.status()).as(refused + " " + path).isEqualTo(401);
                assertThat(r.header("WWW-Authenticate")).startsWith("Basic realm=\"jobgate console\"");
                assertThat(r.text()).doesNotContain("<h1>").doesNotContain(ok.key());
            }
        }
        assertThat(console("Bearer " + ADMIN, "/console/jobs").status()).as("the admin key as a bearer token").isEqualTo(200);
    }

    /** An action as the console's page posts it: htmx's header, the admin signed in as {@code operator}. */
    ApiClient.Response act(String path, String form, String... headers) {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(api.base() + path))
                .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(("alice:" + ADMIN).getBytes(StandardCharsets.UTF_8)))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form));
        if (headers.length == 0) {
            request.header("HX-Request", "true");
        }
        for (int i = 0; i + 1 < headers.length; i += 2) {
            request.header(headers[i], headers[i + 1]);
        }
        return api.send(request.build());
    }

    @Test
    void anOperatorRedrivesAFailedJobFromItsPageAndTheActionIsRecordedWithWhoDidIt() {
        Submitted refused = submit(ACME, false);
        String path = "/console/jobs/" + refused.id() + "/redrive";

        // Only the console's own page may post it: not a form of another site, nor a request without htmx's header.
        for (String[] foreign : new String[][] {{"Origin", "https://elsewhere.example"}, {"HX-Request", "true", "Origin", "https://elsewhere.example"},
                {"HX-Request", "true", "Sec-Fetch-Site", "cross-site"}}) {
            ApiClient.Response r = act(path, "reason=x", foreign);
            assertThat(r.status()).as(String.join(" ", foreign) + ": " + r.text()).isEqualTo(403);
            assertThat(r.text()).contains("cross_site_refused");
        }
        assertThat(admin("/v1/admin/jobs/" + refused.id()).json().path("job").path("status").asText()).isEqualTo("failed");
        assertThat(io.jobgate.support.Db.rows("SELECT * FROM operator_actions WHERE job_id = '" + refused.id() + "'")).isEmpty();

        // The provider renders it now; the redrive gives it a new attempt under its id, recorded as alice's.
        fake.stubFor(post(PATH).withRequestBody(containing(refused.tag())).atPriority(1).willReturn(rendered()));
        ApiClient.Response done = act(path, "operator=&reason=provider+fixed");
        assertThat(done.status()).as(done.text()).isEqualTo(200);
        assertThat(done.header("HX-Redirect")).isEqualTo("/console/jobs/" + refused.id());
        assertThat(done.text()).contains("redrive 1");
        Jobs.awaitStatus(refused.id(), "succeeded");
        JsonNode story = admin("/v1/admin/jobs/" + refused.id()).json();
        assertThat(story.path("redrives").get(0).path("operator").asText()).isEqualTo("alice");
        assertThat(story.path("operator_actions").get(0).path("action").asText()).isEqualTo("redrive");
        assertThat(story.path("operator_actions").get(0).path("operator").asText()).isEqualTo("alice");
        assertThat(story.path("operator_actions").get(0).path("reason").asText()).isEqualTo("provider fixed");
        ApiClient.Response page = console(basic(ADMIN), "/console/jobs/" + refused.id());
        assertThat(page.text()).contains("id=\"actions-taken\"").contains("redrive by alice");

        // A second redrive of the job, now succeeded, is refused and records nothing.
        ApiClient.Response again = act(path, "operator=bob");
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.text()).contains("not_redrivable");
        assertThat(io.jobgate.support.Db.rows("SELECT * FROM operator_actions WHERE job_id = '" + refused.id() + "'")).hasSize(1);
        // Nor may a job that is not waiting on its provider be reconciled, nor a final one cancelled; neither is recorded.
        ApiClient.Response reconcile = act("/console/jobs/" + refused.id() + "/reconcile", "operator=bob");
        assertThat(reconcile.status()).isEqualTo(409);
        assertThat(reconcile.text()).contains("not_at_provider");
        ApiClient.Response cancel = act("/console/jobs/" + refused.id() + "/cancel", "operator=bob");
        assertThat(cancel.status()).isEqualTo(409);
        assertThat(cancel.text()).contains("not_cancellable");
        assertThat(io.jobgate.support.Db.rows("SELECT * FROM operator_actions WHERE job_id = '" + refused.id() + "'")).hasSize(1);
    }

    @Test
    void theOverviewCountsTheCallsInFlightOfEachProviderAndOfThePoolsTheyAreMembersOf() {
        String tag = "Held-Supplier-" + Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(rendered().withFixedDelay(6000)));
        UUID id = accepted(GLOBEX, "order-" + UUID.randomUUID(), tag);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).until(() -> io.jobgate.support.Db.count(
                "SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NOT NULL") == 1);

        // The call is held at the provider: the provider's row, the pool and its member each count it.
        String held = console(basic(ADMIN), "/console").text();
        assertThat(held).containsPattern("provider=fakeimg\">fakeimg</a></td><td>[^<]*</td><td>1 of [0-9]+</td>")
                .containsPattern("<strong>transcripts</strong> \\(transcription\\), 1 calls in flight: "
                        + "<span class=\"member\">fakeimg <em>[a-z_]+</em> \\(1\\)</span>");
        Jobs.awaitStatus(id, "succeeded");
        assertThat(console(basic(ADMIN), "/console").text())
                .containsPattern("<strong>transcripts</strong> \\(transcription\\), 0 calls in flight");
    }

    @Test
    void theFailuresPageGroupsFailedJobsAndAGroupIsRedrivenAtOnce() {
        Submitted one = submit(GLOBEX, false);
        Submitted two = submit(GLOBEX, false);
        ApiClient.Response page = console(basic(ADMIN), "/console/failures?since=1h");
        assertThat(page.status()).as(page.text()).isEqualTo(200);
        assertThat(page.text()).contains("id=\"failed-groups\"").contains("terminal_request");

        for (Submitted s : List.of(one, two)) {
            fake.stubFor(post(PATH).withRequestBody(containing(s.tag())).atPriority(1).willReturn(rendered()));
        }
        String message = admin("/v1/admin/jobs/" + one.id()).json().path("job").path("error").path("message").asText();
        ApiClient.Response done = act("/console/failures/redrive", "category=terminal_request&since=1h&operator=carol&message="
                + java.net.URLEncoder.encode(message.length() > Failures.MESSAGE_HEAD ? message.substring(0, Failures.MESSAGE_HEAD) : message,
                StandardCharsets.UTF_8));
        assertThat(done.status()).as(done.text()).isEqualTo(200);
        assertThat(done.text()).containsPattern("[1-9][0-9]* redriven");
        Jobs.awaitStatus(one.id(), "succeeded");
        Jobs.awaitStatus(two.id(), "succeeded");
        assertThat(admin("/v1/admin/jobs/" + two.id()).json().path("operator_actions").get(0).path("operator").asText()).isEqualTo("carol");

        ApiClient.Response overview = console(basic(ADMIN), "/console");
        assertThat(overview.status()).as(overview.text()).isEqualTo(200);
        assertThat(overview.text()).contains("id=\"tenants\"").contains("id=\"providers\"").contains("fakeimg").contains("globex")
                .containsPattern("<strong>transcripts</strong> \\(transcription\\), [0-9]+ calls in flight: <span class=\"member\">fakeimg");
    }

    @Test
    void beyondThisMachineTheConsoleAnswersOnlyWithAnAdminKeyOfYourOwn() {
        String demo = Digests.sha256Hex("dev-admin-key");
        String own = Digests.sha256Hex("an-operator-key-of-our-own");
        assertThat(ConsoleAccess.decide(true, basic("dev-admin-key"), demo, true)).isEqualTo(ConsoleAccess.Verdict.ALLOWED);
        assertThat(ConsoleAccess.decide(true, null, demo, true)).isEqualTo(ConsoleAccess.Verdict.UNAUTHORIZED);
        assertThat(ConsoleAccess.decide(false, basic("dev-admin-key"), demo, true)).isEqualTo(ConsoleAccess.Verdict.LOOPBACK_ONLY);
        assertThat(ConsoleAccess.decide(false, null, null, true)).isEqualTo(ConsoleAccess.Verdict.LOOPBACK_ONLY);
        // Behind a proxy on the same host every request looks local: with loopback not trusted, it counts as beyond.
        assertThat(ConsoleAccess.decide(true, basic("dev-admin-key"), demo, false)).isEqualTo(ConsoleAccess.Verdict.LOOPBACK_ONLY);
        assertThat(ConsoleAccess.decide(false, basic("an-operator-key-of-our-own"), own, true)).isEqualTo(ConsoleAccess.Verdict.ALLOWED);
        assertThat(ConsoleAccess.decide(false, "Bearer an-operator-key-of-our-own", own, false)).isEqualTo(ConsoleAccess.Verdict.ALLOWED);
        assertThat(ConsoleAccess.decide(false, basic("dev-acme-key"), own, true)).isEqualTo(ConsoleAccess.Verdict.UNAUTHORIZED);
    }
}
