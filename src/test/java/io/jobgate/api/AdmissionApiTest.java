package io.jobgate.api;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.BROKE;
import static io.jobgate.support.TestTenants.CAPPED;
import static io.jobgate.support.TestTenants.GLOBEX;
import static io.jobgate.support.TestTenants.LOWBYTES;
import static io.jobgate.support.TestTenants.TINY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The admission API over real HTTP against the real gateway configuration and PostgreSQL. */
class AdmissionApiTest extends GatewayTestBase {

    @org.apache.camel.BeanInject
    io.jobgate.admission.AdmissionWriter writer;

    static String invoice(String supplier) {
        return """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-2026-001", "currency": "EUR",
                            "line_items": [{"description": "Consulting", "quantity": 3, "unit_price": 120.5}]}}"""
                .formatted(supplier);
    }

    static String key() {
        return "test-" + UUID.randomUUID();
    }

    /**
     * A replayed key whose job a worker is moving at that moment: the admission waits on the job's
     * row while the worker's transaction waits on the tenant row admission holds. PostgreSQL aborts
     * the admission (it waited first); it runs again and answers the replay, instead of a 500.
     */
    @Test
    void aReplayCaughtInALockCycleWithTheJobsOwnTransitionIsAnsweredNotFailed() throws Exception {
        String key = key();
        Response first = api.postJob(ACME, key, invoice("Cycle AG"));
        assertThat(first.status()).isEqualTo(202);
        String id = first.json().path("job_id").asText();
        try (java.sql.Connection worker = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement st = worker.createStatement()) {
            worker.setAutoCommit(false);
            int pid;
            try (java.sql.ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getInt(1);
            }
            st.execute("UPDATE jobs SET updated_at = now() WHERE job_id = '" + id + "'"); // as a transition does
            Future<Response> replay = Executors.newSingleThreadExecutor().submit(() -> api.postJob(ACME, key, invoice("Cycle AG")));
            // Closed quickly: PostgreSQL checks for a cycle once, deadlock_timeout (1 s) after a wait began,
            // so the admission (waiting first) is the one aborted if the cycle exists by then.
            await().pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5)).atMost(Duration.ofSeconds(10))
                    .until(() -> Db.count("SELECT count(*) FROM pg_stat_activity WHERE pg_blocking_pids(pid) @> ARRAY[?::int]", pid) == 1);
            // Then the tenant row (a refund's balance; a released slot did too, before V24): the cycle
            // closes; PostgreSQL aborts the admission.
            try {
                st.execute("UPDATE tenant_accounts SET running_jobs = running_jobs WHERE tenant_id = 'acme'");
                worker.commit();
            } catch (java.sql.SQLException e) {
                // On a loaded machine the cycle may close after the admission's check: this side is
                // aborted instead and the admission goes on. The replay must be answered either way.
                assertThat(e.getSQLState()).isEqualTo("40P01");
                worker.rollback();
            }

            Response answered = replay.get(20, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(answered.status()).as(answered.text()).isEqualTo(202);
            assertThat(answered.header("Idempotent-Replayed")).isEqualTo("true");
            assertThat(answered.json().path("job_id").asText()).isEqualTo(id);
        }
    }

    @Test
    void acceptsAJobWritingJobOutboxEventAndDebitWithItsLimits() {
        Response r = api.postJob(ACME, key(), invoice("Acme GmbH"));

        assertThat(r.status()).isEqualTo(202);
        JsonNode job = r.json();
        UUID id = UUID.fromString(job.path("job_id").asText());
        assertThat(r.header("Location")).isEqualTo("/v1/jobs/" + id);
        assertThat(r.header("Idempotent-Replayed")).isNull();
        assertThat(job.path("status").asText()).isEqualTo("queued");
        assertThat(job.path("preset").path("id").asText()).isEqualTo("invoice-clean");
        assertThat(job.path("preset").path("version").asInt()).as("the latest version").isEqualTo(2);
        assertThat(job.path("provider").asText()).isEqualTo("simulator");
        assertThat(job.path("limits").path("max_attempts").asInt()).isEqualTo(4);
        assertThat(job.path("limits").path("max_lifetime_seconds").asInt()).isEqualTo(1800);
        assertThat(java.time.Instant.parse(job.path("limits").path("expires_at").asText()))
                .isEqualTo(java.time.Instant.parse(job.path("created_at").asText()).plusSeconds(1800));
        assertThat(job.path("cost").path("amount_micros").asLong()).isEqualTo(40_000);

        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND status = 'queued'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'status'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT sum(amount_micros) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id))
                .isEqualTo(-40_000);

        Response fetched = api.get(ACME, "/v1/jobs/" + id);
        assertThat(fetched.status()).isEqualTo(200);
        assertThat(fetched.json()).isEqualTo(job);
    }

    @Test
    void healthReportsTheDatabaseCheck() {
        Response health = api.get(null, "/observe/health?exposureLevel=full");

        assertThat(health.status()).isEqualTo(200);
        assertThat(health.json().path("status").asText()).isEqualTo("UP");
        assertThat(health.json().path("checks").findValuesAsText("name")).contains("database");
    }

    @Test
    void replayWithTheSameKeyAndRequestReturnsTheSameJob() {
        String key = key();
        Response first = api.postJob(ACME, key, invoice("Replay Ltd"));
        // Same request, members in another order: the same logical request.
        Response again = api.postJob(ACME, key, """
                {"inputs": {"currency": "EUR", "invoice_id": "INV-2026-001", "supplier_name": "Replay Ltd",
                            "line_items": [{"unit_price": 120.5, "quantity": 3, "description": "Consulting"}]},
                 "aspect_class": "portrait", "preset_id": "invoice-clean"}""");

        assertThat(first.status()).isEqualTo(202);
        assertThat(again.status()).isEqualTo(202);
        assertThat(again.header("Idempotent-Replayed")).isEqualTo("true");
        assertThat(again.json()).isEqualTo(first.json());
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger l JOIN jobs j USING (job_id) WHERE j.idempotency_key = ?", key))
                .isEqualTo(1);
    }

    @Test
    void sameKeyWithADifferentRequestIsRefused() {
        String key = key();
        Response first = api.postJob(ACME, key, invoice("Original AG"));
        Response reused = api.postJob(ACME, key, invoice("Changed AG"));

        assertThat(first.status()).isEqualTo(202);
        assertThat(reused.status()).isEqualTo(422);
        assertThat(reused.code()).isEqualTo("idempotency_key_reused");
        assertThat(reused.json().path("job_id").asText()).isEqualTo(first.json().path("job_id").asText());
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isEqualTo(1);
    }

    @Test
    void fiftyConcurrentPostsWithOneKeyMakeOneJobAndOneDebit() throws Exception {
        String key = key();
        List<Response> answers = concurrently(50, i -> api.postJob(ACME, key, invoice("Race Inc")));
        Set<String> jobIds = new HashSet<>();
        int fresh = 0;
        for (Response r : answers) {
            assertThat(r.status()).isEqualTo(202);
            jobIds.add(r.json().path("job_id").asText());
            if (r.header("Idempotent-Replayed") == null) {
                fresh++;
            }
        }

        assertThat(jobIds).hasSize(1);
        assertThat(fresh).isEqualTo(1);
        UUID id = UUID.fromString(jobIds.iterator().next());
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'acme' AND idempotency_key = ?", key)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch'", id)).isEqualTo(1);
    }

    @Test
    void theSameKeyOfTwoTenantsMakesTwoJobs() {
        String key = key();
        Response acme = api.postJob(ACME, key, invoice("Shared Key"));
        Response globex = api.postJob(GLOBEX, key, invoice("Shared Key"));

        assertThat(acme.status()).isEqualTo(202);
        assertThat(globex.status()).isEqualTo(202);
        assertThat(globex.header("Idempotent-Replayed")).isNull();
        assertThat(globex.json().path("job_id").asText()).isNotEqualTo(acme.json().path("job_id").asText());
        assertThat(globex.json().path("tenant_id").asText()).isEqualTo("globex");
    }

    @Test
    void anotherTenantsJobIsNotFound() {
        Response created = api.postJob(ACME, key(), invoice("Private SA"));
        String path = "/v1/jobs/" + created.json().path("job_id").asText();

        Response read = api.get(GLOBEX, path);
        assertThat(read.status()).isEqualTo(404);
        assertThat(read.code()).isEqualTo("job_not_found");
        Response cancel = api.post(GLOBEX, path + "/cancel");
        assertThat(cancel.status()).isEqualTo(404);
        assertThat(api.get(ACME, path).json().path("status").asText()).isEqualTo("queued");

        JsonNode listed = api.get(GLOBEX, "/v1/jobs?limit=200").json().path("jobs");
        listed.forEach(j -> assertThat(j.path("tenant_id").asText()).isEqualTo("globex"));
        assertThat(listed.findValuesAsText("job_id")).doesNotContain(created.json().path("job_id").asText());
    }

    @Test
    void listsTheCallersJobsByStatusNewestFirstWithACursor() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(api.postJob(GLOBEX, key(), invoice("List " + i)).json().path("job_id").asText());
        }
        api.post(GLOBEX, "/v1/jobs/" + ids.get(0) + "/cancel");

        Response page1 = api.get(GLOBEX, "/v1/jobs?status=queued&limit=1");
        assertThat(page1.status()).isEqualTo(200);
        assertThat(page1.json().path("jobs").get(0).path("job_id").asText()).isEqualTo(ids.get(2));
        String cursor = page1.json().path("next_cursor").asText();
        Response page2 = api.get(GLOBEX, "/v1/jobs?status=queued&limit=1&cursor=" + cursor);
        assertThat(page2.json().path("jobs").get(0).path("job_id").asText()).isEqualTo(ids.get(1));

        JsonNode cancelled = api.get(GLOBEX, "/v1/jobs?status=cancelled").json().path("jobs");
        assertThat(cancelled.findValuesAsText("job_id")).contains(ids.get(0)).doesNotContain(ids.get(1), ids.get(2));

        assertThat(api.get(GLOBEX, "/v1/jobs?status=bogus").code()).isEqualTo("invalid_parameter");
        assertThat(api.get(GLOBEX, "/v1/jobs?limit=0").code()).isEqualTo("invalid_parameter");
    }

    @Test
    void cancelEndsAQueuedJobOnceRefundsOnceAndReleasesItsCapacity() {
        Map<String, Object> before = Db.single("SELECT c.open_jobs, a.balance_micros FROM tenant_accounts a JOIN tenant_counters c USING (tenant_id) WHERE tenant_id = 'acme'");
        Response created = api.postJob(ACME, key(), invoice("Cancel Co"));
        String path = "/v1/jobs/" + created.json().path("job_id").asText();
        UUID id = UUID.fromString(created.json().path("job_id").asText());

        Response cancelled = api.post(ACME, path + "/cancel");
        Response again = api.post(ACME, path + "/cancel");

        assertThat(cancelled.status()).isEqualTo(200);
        assertThat(cancelled.json().path("status").asText()).isEqualTo("cancelled");
        assertThat(cancelled.json().path("error").path("category").asText()).isEqualTo("cancelled");
        assertThat(cancelled.json().path("finalized_at").isNull()).isFalse();
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("finalized_at").asText()).isEqualTo(cancelled.json().path("finalized_at").asText());
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT sum(amount_micros) FROM ledger WHERE job_id = ?", id)).isZero();
        Map<String, Object> after = Db.single("SELECT c.open_jobs, a.balance_micros FROM tenant_accounts a JOIN tenant_counters c USING (tenant_id) WHERE tenant_id = 'acme'");
        assertThat(after).isEqualTo(before);
    }

    @Test
    void refusalsOfBadRequestsCarryStableCodesAndWriteNothing() {
        long jobsBefore = Db.count("SELECT count(*) FROM jobs");
        String okInputs = "\"inputs\": {\"supplier_name\": \"X\", \"invoice_id\": \"I-1\", \"currency\": \"EUR\", "
                + "\"line_items\": []}";

        assertProblem(api.postJob(null, key(), invoice("X")), 401, "unauthorized");
        assertThat(api.postJob(null, key(), invoice("X")).header("WWW-Authenticate")).startsWith("Bearer");
        assertProblem(api.postJob("wrong-key", key(), invoice("X")), 401, "unauthorized");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": "), 400, "malformed_json");
        assertProblem(api.postJob(ACME, key(), "[1, 2]"), 400, "malformed_json");
        assertProblem(api.postJob(ACME, null, invoice("X")), 400, "missing_idempotency_key");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"poster\", \"aspect_class\": \"square\"}"), 422,
                "unknown_preset");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"invoice-clean\", \"preset_version\": 9, "
                + "\"aspect_class\": \"square\", " + okInputs + "}"), 422, "unknown_preset");
        // Unknown classes are refused, never rounded to a near one.
        for (String aspect : List.of("wide", "Portrait", "portrait ", "4:3")) {
            Response r = api.postJob(ACME, key(), "{\"preset_id\": \"invoice-clean\", \"aspect_class\": \"" + aspect
                    + "\", " + okInputs + "}");
            assertProblem(r, 422, "invalid_aspect_class");
            assertThat(r.json().path("allowed").toString()).contains("portrait", "square", "landscape");
        }
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"invoice-clean\", " + okInputs + "}"), 422,
                "invalid_aspect_class");
        // invalid_input: unknown field, wrong type, over the cap, too many rows, missing required field
        Response unknown = api.postJob(ACME, key(), invoice("X").replace("\"currency\"", "\"prompt\": \"ignore all\", \"currency\""));
        assertProblem(unknown, 422, "invalid_input");
        assertThat(unknown.json().path("field").asText()).isEqualTo("inputs.prompt");
        Response wrongType = api.postJob(ACME, key(), invoice("X").replace("\"quantity\": 3", "\"quantity\": \"3\""));
        assertProblem(wrongType, 422, "invalid_input");
        assertThat(wrongType.json().path("field").asText()).isEqualTo("inputs.line_items[0].quantity");
        Response tooLong = api.postJob(ACME, key(), invoice("S".repeat(81)));
        assertProblem(tooLong, 422, "invalid_input");
        assertThat(tooLong.json().path("field").asText()).isEqualTo("inputs.supplier_name");
        String rows = String.join(",", java.util.Collections.nCopies(21,
                "{\"description\": \"d\", \"quantity\": 1, \"unit_price\": 1}"));
        assertProblem(api.postJob(ACME, key(), invoice("X").replaceFirst("\\[\\{.*}]", "[" + rows + "]")), 422, "invalid_input");
        assertProblem(api.postJob(ACME, key(), invoice("X").replace("\"invoice_id\": \"INV-2026-001\",", "")), 422,
                "invalid_input");
        assertProblem(api.postJob(ACME, key(), invoice("X").replace("\"EUR\"", "\"euro\"")), 422, "invalid_input");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"invoice-clean\", \"aspect_class\": \"square\", "
                + "\"provider\": \"nobody\", " + okInputs + "}"), 422, "unknown_provider");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"call-transcript\", \"upload_id\": \""
                + UUID.randomUUID() + "\"}"), 422, "unknown_upload");
        assertProblem(api.postJob(ACME, key(), "{\"preset_id\": \"invoice-clean\", \"colour\": \"red\"}"), 422,
                "invalid_request");

        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobsBefore);
    }

    @Test
    void anotherTenantsUploadIsUnknown() {
        Response upload = api.upload(GLOBEX, "audio/wav", Samples.wav(1500));
        assertThat(upload.status()).isEqualTo(201);
        String body = "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload.json().path("upload_id").asText() + "\"}";

        assertProblem(api.postJob(ACME, key(), body), 422, "unknown_upload");
        Response own = api.postJob(GLOBEX, key(), body);
        assertThat(own.status()).isEqualTo(202);
        assertThat(own.json().path("source").path("sha256").asText()).isEqualTo(upload.json().path("sha256").asText());
        assertThat(own.json().path("aspect_class").isNull()).isTrue();
    }

    @Test
    void transcriptionIsPricedByStartedAudioMinutesOfItsSource() {
        Response upload = api.upload(GLOBEX, "audio/wav", Samples.wav(61_000));
        assertThat(upload.json().path("duration_ms").asLong()).isEqualTo(61_000);
        Response job = api.postJob(GLOBEX, key(), "{\"preset_id\": \"call-transcript\", \"upload_id\": \""
                + upload.json().path("upload_id").asText() + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}}");

        assertThat(job.status()).isEqualTo(202);
        assertThat(job.json().path("cost").path("amount_micros").asLong()).isEqualTo(2 * 6000);
    }

    @Test
    void tenantConcurrencyRefusesAboveTheOpenJobCapUntilOneEnds() {
        String tiny = TINY;
        Response a = api.postJob(tiny, key(), invoice("T"));
        Response b = api.postJob(tiny, key(), invoice("T"));
        Response c = api.postJob(tiny, key(), invoice("T"));

        assertThat(a.status()).isEqualTo(202);
        assertThat(b.status()).isEqualTo(202);
        assertProblem(c, 429, "tenant_concurrency");
        assertThat(c.header("Retry-After")).isEqualTo("5");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'tiny'")).isEqualTo(2);

        api.post(tiny, "/v1/jobs/" + a.json().path("job_id").asText() + "/cancel");
        assertThat(api.postJob(tiny, key(), invoice("T")).status()).isEqualTo(202);
        // The cancel's release (a release row of the tenant's, V24) counted once: at the cap again.
        assertProblem(api.postJob(tiny, key(), invoice("T")), 429, "tenant_concurrency");
        api.post(tiny, "/v1/jobs/" + b.json().path("job_id").asText() + "/cancel");
        assertThat(api.postJob(tiny, key(), invoice("T")).status()).isEqualTo(202);
        assertProblem(api.postJob(tiny, key(), invoice("T")), 429, "tenant_concurrency");
        // The tenant's row keeps what admission took (4 jobs), its release rows what the cancels gave back.
        assertThat(Db.count("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'tiny'"))
                .isEqualTo(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'tiny' AND finalized_at IS NULL")).isEqualTo(2);
        assertThat(Db.count("SELECT open_jobs FROM tenant_accounts WHERE tenant_id = 'tiny'")).isEqualTo(4);
        assertThat(Db.count("SELECT sum(open_jobs) FROM tenant_releases WHERE tenant_id = 'tiny'")).isEqualTo(-2);
    }

    @Test
    void budgetExhaustedWhenTheLedgerBalanceCannotPay() {
        Response first = api.postJob(BROKE, key(), invoice("B"));
        Response second = api.postJob(BROKE, key(), invoice("B"));

        assertThat(first.status()).isEqualTo(202);
        assertProblem(second, 402, "budget_exhausted");
        assertThat(second.json().path("balance_micros").asLong()).isEqualTo(10_000);
        assertThat(Db.count("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'broke'"))
                .isEqualTo(Db.count("SELECT sum(amount_micros) FROM ledger WHERE tenant_id = 'broke'"))
                .isEqualTo(10_000);
    }

    @Test
    void queuedBytesRefusesSourcesBeyondTheTenantsCap() {
        String key = LOWBYTES;
        Response upload = api.upload(key, "audio/wav", Samples.wav(100)); // 1 644 bytes
        String body = "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload.json().path("upload_id").asText() + "\"}";

        Response first = api.postJob(key, key(), body);
        assertThat(first.status()).isEqualTo(202);
        Response second = api.postJob(key, key(), body);
        assertProblem(second, 429, "queued_bytes");
        assertThat(second.header("Retry-After")).isNotBlank();

        // A job that ends gives its bytes back (a release row of the tenant's, V24), exactly: one more fits, not two.
        api.post(key, "/v1/jobs/" + first.json().path("job_id").asText() + "/cancel");
        assertThat(api.postJob(key, key(), body).status()).isEqualTo(202);
        assertProblem(api.postJob(key, key(), body), 429, "queued_bytes");
        assertThat(Db.count("SELECT queued_bytes FROM tenant_counters WHERE tenant_id = 'lowbytes'"))
                .isEqualTo(Db.count("SELECT sum(source_bytes) FROM jobs WHERE tenant_id = 'lowbytes' AND finalized_at IS NULL"))
                .isEqualTo(1644);
    }

    @Test
    void globalCapacityRefusesWhenTheGatewayWindowIsFull() {
        Db.execute("UPDATE gateway_capacity SET in_flight = in_flight + 10000 WHERE id = 1");
        try {
            Response r = api.postJob(ACME, key(), invoice("Full"));
            assertProblem(r, 429, "global_capacity");
            assertThat(r.header("Retry-After")).isEqualTo("5");
        } finally {
            Db.execute("UPDATE gateway_capacity SET in_flight = in_flight - 10000 WHERE id = 1");
        }
        assertThat(api.postJob(ACME, key(), invoice("Room again")).status()).isEqualTo(202);
    }

    @Test
    void aFailureHalfWayThroughAdmissionLeavesNoJobNoEventNoDebit() {
        String key = "boom-" + UUID.randomUUID();
        Map<String, Object> before = Db.single("SELECT c.open_jobs, c.queued_bytes, a.balance_micros FROM tenant_accounts a "
                + "JOIN tenant_counters c USING (tenant_id) WHERE tenant_id = 'acme'");
        long inFlight = Db.count("SELECT sum(in_flight) FROM gateway_capacity");
        // The fault: the outbox insert — after the job, the reservations and the debit — fails.
        Response failed;
        try (Db.Fault fault = Db.failInsertsFor("outbox", "boom-")) {
            failed = api.postJob(ACME, key, invoice("Half Way"));
        }

        assertProblem(failed, 500, "internal_error");
        assertThat(failed.text()).doesNotContain("Half Way");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isZero();
        assertThat(Db.count("SELECT count(*) FROM ledger l JOIN jobs j USING (job_id) WHERE j.idempotency_key = ?", key)).isZero();
        assertThat(Db.count("SELECT count(*) FROM outbox o JOIN jobs j USING (job_id) WHERE j.idempotency_key = ?", key)).isZero();
        assertThat(Db.single("SELECT c.open_jobs, c.queued_bytes, a.balance_micros FROM tenant_accounts a "
                + "JOIN tenant_counters c USING (tenant_id) WHERE tenant_id = 'acme'"))
                .isEqualTo(before);
        assertThat(Db.count("SELECT sum(in_flight) FROM gateway_capacity")).isEqualTo(inFlight);

        // Nothing was lost: the client's retry with the same key is admitted whole.
        Response retried = api.postJob(ACME, key, invoice("Half Way"));
        assertThat(retried.status()).isEqualTo(202);
        assertThat(retried.header("Idempotent-Replayed")).isNull();
        UUID id = UUID.fromString(retried.json().path("job_id").asText());
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ? AND event_type = 'dispatch'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?", id)).isEqualTo(1);
    }

    @Test
    void concurrentRequestsNeverPassTheTenantsOpenJobCap() throws Exception {
        List<Response> answers = concurrently(30, i -> api.postJob(CAPPED, key(), invoice("Cap " + i)));

        assertThat(answers.stream().filter(r -> r.status() == 202)).hasSize(5);
        assertThat(answers.stream().filter(r -> r.status() == 429 && "tenant_concurrency".equals(r.code()))).hasSize(25);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'capped'")).isEqualTo(5);
        assertThat(Db.count("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'capped'")).isEqualTo(5);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE tenant_id = 'capped' AND entry_type = 'debit'")).isEqualTo(5);
    }

    @Test
    void aRequestThatFailsInsideAGroupCommitFailsAloneAndTheOthersAreAdmitted() throws Exception {
        Db.Fault fault = Db.failInsertsFor("ledger", "poison-");
        long splitBefore = writer.batchesSplit();
        List<Response> answers = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(25);
        try (java.sql.Connection lock = io.jobgate.support.TestDatabase.connect()) {
            // Hold the gateway row so one admission blocks inside its transaction while 15 queue up
            // behind it; they then go into one group commit together, the poisoned one among them.
            lock.setAutoCommit(false);
            lock.createStatement().execute("SELECT 1 FROM gateway_capacity WHERE id = 1 FOR UPDATE");
            Future<Response> blocker = pool.submit(() -> api.postJob(GLOBEX, "batch-" + UUID.randomUUID(), invoice("First")));
            await().atMost(Duration.ofSeconds(10)).until(() -> Db.count("SELECT count(*) FROM pg_stat_activity "
                    + "WHERE application_name = 'jobgate' AND wait_event_type = 'Lock'") == 1);
            List<Future<Response>> futures = new ArrayList<>();
            for (int i = 0; i < 15; i++) {
                String key = (i == 7 ? "poison-" : "batch-") + UUID.randomUUID();
                futures.add(pool.submit(() -> api.postJob(GLOBEX, key, invoice("Batch"))));
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> writer.queueDepth() == 15);
            lock.rollback();
            answers.add(blocker.get());
            for (Future<Response> f : futures) {
                answers.add(f.get());
            }
        } finally {
            pool.shutdown();
            fault.close();
        }

        assertThat(writer.batchesSplit()).isEqualTo(splitBefore + 1);
        assertThat(answers.get(8).status()).isEqualTo(500);
        for (int i = 0; i < answers.size(); i++) {
            if (i != 8) {
                assertThat(answers.get(i).status()).as("request %d", i).isEqualTo(202);
            }
        }
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key LIKE 'poison-%'")).isZero();
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key LIKE 'batch-%'")).isEqualTo(15);
        assertThat(Db.count("SELECT count(*) FROM outbox o JOIN jobs j USING (job_id) WHERE o.event_type = 'dispatch' "
                + "AND j.idempotency_key LIKE 'batch-%'"))
                .isEqualTo(15);
        assertThat(Db.count("SELECT count(*) FROM ledger l JOIN jobs j USING (job_id) WHERE j.idempotency_key LIKE 'batch-%'"))
                .isEqualTo(15);
    }

    private static List<Response> concurrently(int n, java.util.function.IntFunction<Response> call) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(n);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Response>> futures = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            futures.add(pool.submit(() -> {
                start.await();
                return call.apply(index);
            }));
        }
        start.countDown();
        List<Response> answers = new ArrayList<>();
        for (Future<Response> f : futures) {
            answers.add(f.get());
        }
        pool.shutdown();
        return answers;
    }

    static void assertProblem(Response r, int status, String code) {
        assertThat(r.status()).as(r.text()).isEqualTo(status);
        assertThat(r.contentType()).isEqualTo("application/problem+json");
        assertThat(r.code()).isEqualTo(code);
        assertThat(r.json().path("status").asInt()).isEqualTo(status);
        assertThat(r.json().path("detail").asText()).isNotBlank();
    }
}
