package io.jobgate.api;

import java.net.http.HttpRequest;
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
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator's tools next to canaries (issue 14), through HTTP against a WireMock provider and the
 * real worker: every attempt of a job (with the stored head of an error reply for operators only),
 * the redrive of a failed job under its id with an exact ledger, and cost per tenant across tenants.
 */
class OperatorToolsTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";
    static final String LEAKED_KEY = "sk-live-4f9d2c7a1b3e5f60";

    WireMockServer fake;
    final io.jobgate.support.MovableClock clock = movableClock();

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl());
    }

    @BeforeEach
    void resetClock() {
        clock.reset();
    }

    UUID submit(String tag) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""".formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** The provider refuses the tag's requests (a 400: no automatic retry), echoing a key in its reply. */
    void refuse(String tag) {
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(aResponse().withStatus(400)
                .withHeader("Content-Type", "application/json").withHeader("x-request-id", "req-refused-1")
                .withBody("{\"error\": {\"message\": \"prompt refused\", \"api_key\": \"" + LEAKED_KEY + "\"}}")));
    }

    void render(String tag) {
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                        + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}")));
    }

    ApiClient.Response redrive(String key, UUID id, String body) {
        return api.send(api.request("/v1/admin/jobs/" + id + "/redrive", key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build());
    }

    UUID failed() {
        String tag = Jobs.tag();
        refuse(tag);
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "failed");
        // The attempt is closed in the failing transaction; its reply head is stored with it.
        return id;
    }

    static List<Map<String, Object>> ledger(UUID id) {
        return Db.rows("SELECT entry_type, amount_micros, redrive FROM ledger WHERE job_id = '" + id + "' ORDER BY entry_id");
    }

    @Test
    void operatorsSeeEveryAttemptWithItsReplyHeadTenantsWithoutIt() {
        UUID id = failed();

        ApiClient.Response admin = api.get(ADMIN, "/v1/admin/jobs/" + id + "/attempts");
        assertThat(admin.status()).as(admin.text()).isEqualTo(200);
        JsonNode attempt = admin.json().path("attempts").get(0);
        assertThat(admin.json().path("attempts")).hasSize(1);
        assertThat(admin.json().path("tenant_id").asText()).isEqualTo("acme");
        assertThat(attempt.path("attempt").asInt()).isEqualTo(1);
        assertThat(attempt.path("revision").asText()).matches("fake-r1@[0-9a-f]{10}");
        assertThat(attempt.path("outcome").asText()).isEqualTo("failed");
        assertThat(attempt.path("error_category").asText()).isEqualTo("terminal_request");
        assertThat(attempt.path("http_status").asInt()).isEqualTo(400);
        assertThat(attempt.path("provider_request_id").asText()).isEqualTo("req-refused-1");
        assertThat(attempt.path("started_at").asText()).isNotEmpty();
        assertThat(attempt.path("duration_ms").isNumber()).isTrue();
        assertThat(attempt.path("reply_head").asText()).contains("prompt refused").doesNotContain(LEAKED_KEY);
        assertThat((String) Db.single("SELECT response_excerpt FROM attempts WHERE job_id = ?", id).get("response_excerpt"))
                .as("the key is not even stored").doesNotContain(LEAKED_KEY);

        ApiClient.Response tenant = api.get(ACME, "/v1/jobs/" + id + "/attempts");
        assertThat(tenant.status()).as(tenant.text()).isEqualTo(200);
        JsonNode own = tenant.json().path("attempts").get(0);
        assertThat(own.path("revision").asText()).isEqualTo(attempt.path("revision").asText());
        assertThat(own.path("http_status").asInt()).isEqualTo(400);
        assertThat(own.has("reply_head")).isFalse();
        assertThat(tenant.text()).doesNotContain("prompt refused");

        assertThat(api.get(GLOBEX, "/v1/jobs/" + id + "/attempts").code()).as("another tenant's job").isEqualTo("job_not_found");
        assertThat(api.get(ACME, "/v1/admin/jobs/" + id + "/attempts").status()).as("a tenant key is no admin key").isEqualTo(401);
        assertThat(api.get(ADMIN, "/v1/admin/jobs/" + UUID.randomUUID() + "/attempts").code()).isEqualTo("job_not_found");
    }

    @Test
    void aRedrivenJobGetsANewAttemptUnderItsIdAndIsChargedOnceMore() {
        UUID id = failed();
        long cost = ((Number) Db.single("SELECT cost_micros FROM jobs WHERE job_id = ?", id).get("cost_micros")).longValue();
        assertThat(ledger(id)).extracting(l -> l.get("entry_type")).containsExactly("debit", "refund");

        ApiClient.Response nameless = redrive(ADMIN, id, "{}");
        assertThat(nameless.status()).isEqualTo(400);
        assertThat(nameless.code()).isEqualTo("invalid_parameter");
        assertThat(redrive(ADMIN, id, "{\"operator\": \"ops\", \"force\": \"yes\"}").code()).isEqualTo("invalid_parameter");
        assertThat(redrive(ACME, id, "{\"operator\": \"ops\"}").status()).isEqualTo(401);

        String tag = (String) Db.single("SELECT inputs->>'supplier_name' AS tag FROM jobs WHERE job_id = ?", id).get("tag");
        render(tag); // the operator fixed the cause
        ApiClient.Response r = redrive(ADMIN, id, "{\"operator\": \"alice\", \"reason\": \"prompt filter fixed\"}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        assertThat(r.json().path("redrive").asInt()).isEqualTo(1);
        assertThat(r.json().path("debited_micros").asLong()).isEqualTo(cost);
        assertThat(r.json().path("job").path("job_id").asText()).isEqualTo(id.toString());
        Jobs.awaitStatus(id, "succeeded");

        // Both attempts kept; the ledger: debit, refund, debit again — the tenant pays once for its success.
        assertThat(Db.rows("SELECT attempt, outcome FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt"))
                .extracting(a -> a.get("outcome")).containsExactly("failed", "succeeded");
        assertThat(ledger(id)).extracting(l -> l.get("entry_type") + "/" + l.get("redrive"))
                .containsExactly("debit/0", "refund/0", "debit/1");
        assertThat(ledger(id).stream().mapToLong(l -> ((Number) l.get("amount_micros")).longValue()).sum()).isEqualTo(-cost);
        assertThat(Db.single("SELECT operator, reason, forced, previous_category, debited_micros FROM job_redrives WHERE job_id = ?", id))
                .containsEntry("operator", "alice").containsEntry("reason", "prompt filter fixed").containsEntry("forced", false)
                .containsEntry("previous_category", "terminal_request").containsEntry("debited_micros", cost);
        JsonNode seen = api.get(ADMIN, "/v1/admin/jobs/" + id + "/attempts").json();
        assertThat(seen.path("redrives").get(0).path("operator").asText()).isEqualTo("alice");
        assertThat(api.get(ACME, "/v1/jobs/" + id + "/output").status()).isEqualTo(200);

        ApiClient.Response again = redrive(ADMIN, id, "{\"operator\": \"alice\"}");
        assertThat(again.status()).isEqualTo(409);
        assertThat(again.code()).isEqualTo("not_redrivable");
        // Nothing is left reserved: the tenant's counters are back where they were.
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'acme' AND finalized_at IS NULL")).isZero();
        assertThat(((Number) Db.single("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'acme'").get("open_jobs")).intValue())
                .isZero();
    }

    @Test
    void aCancelledJobIsNeverRedriven() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).atPriority(1).willReturn(aResponse().withStatus(200)
                .withFixedDelay(1500).withHeader("Content-Type", "application/json").withBody("{}")));
        UUID id = submit(tag);
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);
        ApiClient.Response r = redrive(ADMIN, id, "{\"operator\": \"bob\", \"force\": true}");
        assertThat(r.status()).isEqualTo(409);
        assertThat(r.code()).isEqualTo("not_redrivable");
        assertThat(r.json().path("job_status").asText()).isEqualTo("cancelled");
        assertThat(redrive(ADMIN, UUID.randomUUID(), "{\"operator\": \"bob\"}").code()).isEqualTo("job_not_found");
    }

    @Test
    void pastItsLifetimeCapAJobIsRedrivenOnlyWhenForced() {
        UUID id = failed();
        long lifetime = ((Number) Db.single("SELECT max_lifetime_seconds FROM jobs WHERE job_id = ?", id).get("max_lifetime_seconds"))
                .longValue();
        clock.advance(Duration.ofSeconds(lifetime + 60));
        ApiClient.Response refused = redrive(ADMIN, id, "{\"operator\": \"carol\"}");
        assertThat(refused.status()).isEqualTo(409);
        assertThat(refused.code()).isEqualTo("redrive_lifetime_exceeded");
        assertThat(Jobs.status(id)).isEqualTo("failed");

        String tag = (String) Db.single("SELECT inputs->>'supplier_name' AS tag FROM jobs WHERE job_id = ?", id).get("tag");
        render(tag);
        ApiClient.Response forced = redrive(ADMIN, id, "{\"operator\": \"carol\", \"force\": true}");
        assertThat(forced.status()).as(forced.text()).isEqualTo(202);
        assertThat(forced.json().path("forced").asBoolean()).isTrue();
        Jobs.awaitStatus(id, "succeeded");
        assertThat(Db.single("SELECT forced FROM job_redrives WHERE job_id = ?", id)).containsEntry("forced", true);
    }

    @Test
    void costPerTenantAcrossTenantsIsMarkedAsAnEstimateWhereNoProviderBilled() {
        String tag = Jobs.tag();
        render(tag);
        UUID id = submit(tag);
        Jobs.awaitStatus(id, "succeeded");

        // Another test moved the clock ahead for a while: its entries are dated then, so the range covers both.
        java.time.Instant now = java.time.Instant.now();
        ApiClient.Response r = api.get(ADMIN, "/v1/admin/usage?from=" + now.minus(Duration.ofDays(1)) + "&to=" + now.plus(Duration.ofDays(2)));
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        JsonNode acme = null;
        for (JsonNode t : r.json().path("tenants")) {
            if (t.path("tenant_id").asText().equals("acme")) {
                acme = t;
            }
        }
        assertThat(acme).as(r.text()).isNotNull();
        JsonNode line = null;
        for (JsonNode l : acme.path("lines")) {
            if (l.path("provider").asText().equals("fakeimg")) {
                line = l;
            }
        }
        assertThat(line).isNotNull();
        assertThat(line.path("basis").asText()).isEqualTo("price_list_estimate");
        long charged = -((Number) Db.single("SELECT sum(l.amount_micros) AS s FROM ledger l JOIN jobs j USING (job_id) "
                + "WHERE j.tenant_id = 'acme' AND j.provider = 'fakeimg' AND l.entry_type IN ('debit', 'refund')").get("s")).longValue();
        assertThat(line.path("charged_micros").asLong()).isEqualTo(charged);
        assertThat(acme.path("estimated").asBoolean()).isTrue();

        assertThat(api.get(ACME, "/v1/admin/usage").status()).isEqualTo(401);
        assertThat(api.get(ADMIN, "/v1/admin/usage?from=2026-13-01").code()).isEqualTo("invalid_parameter");
    }
}
