package io.jobgate.output;

import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.common.Json;
import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import io.jobgate.worker.Sweeper;
import io.jobgate.worker.Worker;
import org.apache.camel.BeanInject;
import org.apache.camel.Exchange;
import org.apache.camel.CamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Outputs on a real S3 API (S3Proxy started by the gateway, path-style): quarantine, checks by
 * magic bytes and pixel size, promotion with the evaluation manifest, the output endpoint, and
 * recovery from a crash between quarantine and promotion; and the same rules for a small output
 * checked in memory and written once (no quarantine object unless the checks refuse it).
 */
class OutputPromotionTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer fake;

    @BeanInject
    S3Client s3;
    @BeanInject
    Worker worker;
    @BeanInject
    Sweeper sweeper;
    @BeanInject
    CamelContext context;
    @BeanInject
    OutputStore outputStore;
    @BeanInject
    io.jobgate.worker.ProviderCalls providerCalls;
    @BeanInject
    io.jobgate.job.JobFinalizer finalizer;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.lease-margin-seconds", "1",
                "jobgate.sweeper.enabled", "true",
                "jobgate.sweeper.period-ms", "200",
                "jobgate.sweeper.quarantine-max-age-seconds", "0",
                "jobgate.sweeper.quarantine-period-ms", "3600000",
                "jobgate.provider.fakeimg.base-url", fake.baseUrl(),
                // One test holds its call 1.5 s to see the job while it is submitting: on a loaded machine a cold
                // JVM's first call outlived the adapter's usual 2 s and ended ambiguous before any output check.
                "jobgate.provider.fakeimg.call-deadline-ms", "6000");
    }

    @BeforeEach
    void noFaults() {
        worker.injectFaults(step -> { });
        // The tests below that do not say otherwise take the quarantine path (outputs too big for memory).
        outputStore.checkInMemoryUpTo(0);
    }

    UUID submit(String tag) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-2026-0042", "currency": "EUR",
                            "invoice_date": "2026-11-30", "tax_rate_percent": 19,
                            "line_items": [{"description": "Design", "quantity": 3, "unit_price": 120.5},
                                           {"description": "Paper", "quantity": 2.5, "unit_price": 0.99}]}}"""
                .formatted(tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    void providerReturns(String tag, byte[] image, int delayMs) {
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withFixedDelay(delayMs)
                .withBody("{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(image) + "\"}]}")));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts, result::text AS result FROM jobs WHERE job_id = ?", id);
    }

    /**
     * The worker stops at output step {@code step} as a dead one would, holding its lease, until the latch this
     * returns is counted down (a minute at most): then it goes on as a slow one.
     */
    java.util.concurrent.CountDownLatch workerStopsAt(String step) {
        java.util.concurrent.CountDownLatch released = new java.util.concurrent.CountDownLatch(1);
        worker.injectFaults(at -> {
            if (at.equals(step)) {
                try {
                    released.await(60, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        return released;
    }

    List<String> keys(String prefix) {
        return s3.listObjectsV2(b -> b.bucket("jobgate").prefix(prefix)).contents().stream().map(o -> o.key()).toList();
    }

    @Test
    void aCheckedOutputIsPromotedWithItsManifestAndServedToItsTenantOnly() throws Exception {
        String tag = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        providerReturns(tag, png, 1500);
        UUID id = submit(tag);
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(job(id).get("status")));
        ApiClient.Response early = api.get(ACME, "/v1/jobs/" + id + "/output");
        assertThat(early.status()).isEqualTo(409);
        assertThat(early.code()).isEqualTo("not_ready");
        Jobs.awaitFinal(id);

        assertThat(job(id).get("status")).isEqualTo("succeeded");
        ApiClient.Response output = api.send(api.request("/v1/jobs/" + id + "/output", ACME).GET().build());
        assertThat(output.status()).isEqualTo(200);
        assertThat(output.contentType()).isEqualTo("image/png");
        var bytes = api.getBytes(ACME, "/v1/jobs/" + id + "/output");
        assertThat(bytes).isEqualTo(png);
        assertThat(api.get(GLOBEX, "/v1/jobs/" + id + "/output").status()).as("another tenant's output").isEqualTo(404);
        assertThat(keys("quarantine/" + id + "/")).as("quarantine emptied after promotion").isEmpty();

        // The job itself shows its output: where to read it and what it is.
        JsonNode view = api.get(ACME, "/v1/jobs/" + id).json();
        assertThat(view.path("links").path("output").asText()).isEqualTo("/v1/jobs/" + id + "/output");
        assertThat(view.path("output").path("media_type").asText()).isEqualTo("image/png");
        assertThat(view.path("output").path("bytes").asLong()).isEqualTo(png.length);
        assertThat(view.path("output").path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        assertThat(view.path("output").path("width").asInt()).isEqualTo(1024);
        assertThat(view.path("output").path("height").asInt()).isEqualTo(1536);
        assertThat(api.get(ACME, "/v1/jobs/" + id).text()).doesNotContain("outputs/acme");

        JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
        assertThat(result.path("output_key").asText()).isEqualTo("outputs/acme/" + id + "/output.png");
        assertThat(s3.headObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.png")).contentType())
                .isEqualTo("image/png");
        assertThat(result.path("width").asInt()).isEqualTo(1024);
        assertThat(result.path("height").asInt()).isEqualTo(1536);
        assertThat(result.path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        assertThat(result.path("adapter_revision").asText()).matches("fake-r1@[0-9a-f]{10}");

        JsonNode manifest = Json.MAPPER.readTree(s3.getObjectAsBytes(b -> b.bucket("jobgate")
                .key("outputs/acme/" + id + "/manifest.json")).asByteArray());
        assertThat(manifest.path("preset").path("id").asText()).isEqualTo("invoice-clean");
        assertThat(manifest.path("preset").path("version").asInt()).isEqualTo(2);
        assertThat(manifest.path("aspect_class").asText()).isEqualTo("portrait");
        assertThat(manifest.path("adapter").path("name").asText()).isEqualTo("fakeimg");
        assertThat(manifest.path("adapter").path("revision").asText()).matches("fake-r1@[0-9a-f]{10}");
        assertThat(manifest.path("output").path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        JsonNode expected = manifest.path("expected");
        assertThat(expected.path("supplier_name").asText()).isEqualTo(tag);
        assertThat(expected.path("invoice_id").asText()).isEqualTo("INV-2026-0042");
        assertThat(expected.path("currency").asText()).isEqualTo("EUR");
        assertThat(expected.path("line_items")).hasSize(2);
        assertThat(expected.path("line_items").get(0).path("amount").decimalValue()).isEqualByComparingTo("361.50");
        assertThat(expected.path("line_items").get(1).path("amount").decimalValue()).isEqualByComparingTo("2.48");
        assertThat(expected.path("subtotal").decimalValue()).isEqualByComparingTo("363.98");
        assertThat(expected.path("tax").decimalValue()).isEqualByComparingTo("69.16");
        assertThat(expected.path("total").decimalValue()).isEqualByComparingTo("433.14");
    }

    @Test
    void aWrongMediaTypeOrSizeIsNeverReadable() {
        String jpeg = Jobs.tag();
        String square = Jobs.tag();
        providerReturns(jpeg, Samples.jpeg(1024, 1536), 0);
        providerReturns(square, Samples.png(1024, 1024), 0);
        UUID wrongType = submit(jpeg);
        UUID wrongSize = submit(square);
        Jobs.awaitFinal(wrongType);
        Jobs.awaitFinal(wrongSize);

        for (UUID id : List.of(wrongType, wrongSize)) {
            assertThat(job(id)).containsEntry("status", "failed").containsEntry("error_category", "invalid_output");
            assertThat(api.get(ACME, "/v1/jobs/" + id + "/output").code()).isEqualTo("not_ready");
            assertThat(keys("outputs/acme/" + id + "/")).isEmpty();
            assertThat(keys("quarantine/" + id + "/")).as("kept in quarantine for an operator").hasSize(1);
        }
        assertThat((String) job(wrongType).get("error_message")).contains("image/jpeg");
        assertThat((String) job(wrongSize).get("error_message")).contains("1024x1024").contains("1024x1536");
        // What the tenant reads never names where jobgate keeps things.
        for (UUID id : List.of(wrongType, wrongSize)) {
            assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("error").path("message").asText())
                    .isNotBlank().doesNotContain("quarantine/").doesNotContain(id + "/");
        }
    }

    @Test
    void aWorkerThatLostItsLeaseBeforePromotionLeavesNoOutputBehind() {
        String tag = Jobs.tag();
        providerReturns(tag, Samples.png(1024, 1536), 0);
        worker.injectFaults(step -> {
            if (step.equals("quarantined")) {
                // Meanwhile the sweeper gave the job to another worker (whose lease lasts).
                io.jobgate.support.JobFactory.onTestDatabase().leaseTakenOver((UUID) Db.single("SELECT job_id FROM jobs WHERE inputs->>'supplier_name' = ?", tag)
                        .get("job_id"), "another-worker");
            }
        });
        UUID id = submit(tag);

        await().atMost(Duration.ofSeconds(20)).until(() -> Db.count(
                "SELECT count(*) FROM attempts WHERE job_id = ? AND outcome = 'lease_lost'", id) == 1);
        assertThat(keys("outputs/acme/" + id + "/")).as("nothing promoted by the stale worker").isEmpty();
        assertThat(keys("quarantine/" + id + "/")).as("its quarantine object removed").isEmpty();
        assertThat(job(id)).containsEntry("status", "submitting").containsEntry("result", null);
    }

    @Test
    void aCrashBetweenQuarantineAndPromotionIsRecoveredAndTheOrphanSwept() {
        String tag = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        providerReturns(tag, png, 0);
        AtomicBoolean crash = new AtomicBoolean(true);
        worker.injectFaults(step -> {
            if (step.equals("quarantined") && crash.compareAndSet(true, false)) {
                throw new IllegalStateException("simulated worker death between quarantine and promotion");
            }
        });
        UUID id = submit(tag);
        Jobs.awaitFinal(id);

        assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(keys("quarantine/" + id + "/")).singleElement().asString().startsWith("quarantine/" + id + "/1/output-");

        Exchange sweep = new DefaultExchange(context);
        sweeper.sweepQuarantine(sweep);
        assertThat(keys("quarantine/" + id + "/")).as("the orphan of the crashed attempt").isEmpty();
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
    }

    @Test
    void aCrashBetweenPromotionAndRecordEndsWithThePromotedOutputNotANewCall() throws Exception {
        String tag = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        providerReturns(tag, png, 0);
        // The worker "dies" here: output and manifest promoted, nothing recorded; its lease runs out.
        java.util.concurrent.CountDownLatch dead = workerStopsAt("promoted");
        try {
            UUID id = submit(tag);
            Jobs.awaitFinal(id);

            // The sweeper ended the lease with the promoted output: no second call, no second attempt.
            assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
            assertThat(fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)))).hasSize(1);
            assertThat(Db.single("SELECT outcome FROM attempts WHERE job_id = ? AND attempt = 1", id)).containsEntry("outcome", "succeeded");
            JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
            assertThat(result.path("output_key").asText()).isEqualTo("outputs/acme/" + id + "/output.png");
            assertThat(result.path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
            assertThat(result.path("bytes").asLong()).isEqualTo(png.length);
            assertThat(result.path("attempt").asInt()).isEqualTo(1);
            assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);

            // A worker that was only slow, not dead, records after that: its attempt stays succeeded.
            dead.countDown();
            await().atMost(Duration.ofSeconds(20)).until(() -> providerCalls.inFlight() == 0);
            assertThat(Db.single("SELECT outcome FROM attempts WHERE job_id = ? AND attempt = 1", id)).containsEntry("outcome", "succeeded");
            assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        } finally {
            dead.countDown();
        }
    }

    /**
     * A worker that dies after its output became readable and before its manifest was written: the output's own
     * record (its metadata) names the attempt, so the sweeper writes the manifest and the job succeeds with the
     * answer the provider billed (OpenAI has no lookup: without it the job would wait in submission_unknown until
     * its horizon and the image would be lost). In memory (one put) and through quarantine (the copy).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "in memory up to {0} bytes")
    @org.junit.jupiter.params.provider.ValueSource(longs = {8 << 20, 0})
    void aWorkerThatDiesBetweenItsOutputAndItsManifestStillSucceedsTheJobWithThatOutput(long inMemoryUpTo) throws Exception {
        outputStore.checkInMemoryUpTo(inMemoryUpTo);
        String tag = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        providerReturns(tag, png, 0);
        // The worker "dies" here: the output readable, no manifest, nothing recorded; its lease runs out.
        java.util.concurrent.CountDownLatch dead = workerStopsAt("output-written");
        try {
            UUID id = submit(tag);
            Jobs.awaitFinal(id);

            assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
            assertThat(fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)))).hasSize(1);
            assertThat(Db.single("SELECT outcome FROM attempts WHERE job_id = ? AND attempt = 1", id)).containsEntry("outcome", "succeeded");
            JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
            assertThat(result.path("output_key").asText()).isEqualTo("outputs/acme/" + id + "/output.png");
            assertThat(result.path("media_type").asText()).isEqualTo("image/png");
            assertThat(result.path("width").asInt()).isEqualTo(1024);
            assertThat(result.path("height").asInt()).isEqualTo(1536);
            assertThat(result.path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
            assertThat(result.path("bytes").asLong()).isEqualTo(png.length);
            assertThat(result.path("attempt").asInt()).isEqualTo(1);
            assertThat(result.path("adapter").asText()).isEqualTo("fakeimg");
            assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
            // The manifest the worker never wrote, as it would have written it.
            JsonNode manifest = Json.MAPPER.readTree(s3.getObjectAsBytes(b -> b.bucket("jobgate")
                    .key("outputs/acme/" + id + "/manifest.json")).asByteArray());
            assertThat(manifest.path("attempt").asInt()).isEqualTo(1);
            assertThat(manifest.path("output").path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
            assertThat(manifest.path("output").path("width").asInt()).isEqualTo(1024);
            assertThat(manifest.path("preset").path("id").asText()).isEqualTo("invoice-clean");
            assertThat(manifest.path("expected").path("supplier_name").asText()).isEqualTo(tag);
            assertThat(manifest.path("expected").path("total").decimalValue()).isEqualByComparingTo("433.14");

            // A worker that was only slow, not dead, goes on after that: the job stays as it is.
            dead.countDown();
            await().atMost(Duration.ofSeconds(20)).until(() -> providerCalls.inFlight() == 0);
            assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
            assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        } finally {
            dead.countDown();
        }
    }

    // ---- small outputs: checked in memory, written once to their readable key ----

    @Test
    void aSmallOutputIsCheckedInMemoryAndWrittenOnceWithItsManifest() throws Exception {
        outputStore.checkInMemoryUpTo(8 << 20);
        String tag = Jobs.tag();
        byte[] png = Samples.png(1024, 1536);
        providerReturns(tag, png, 0);
        List<String> writtenBeforePromotion = new java.util.concurrent.CopyOnWriteArrayList<>();
        worker.injectFaults(step -> {
            if (step.equals("checked")) {
                // Checked, not yet written: nothing of any job of this tag is in the bucket yet.
                writtenBeforePromotion.addAll(keys("quarantine/"));
                writtenBeforePromotion.addAll(keys("outputs/acme/"));
            }
        });
        long objectsBefore = keys("").size();
        UUID id = submit(tag);
        Jobs.awaitFinal(id);

        assertThat(job(id).get("status")).isEqualTo("succeeded");
        assertThat(writtenBeforePromotion.stream().filter(k -> k.contains(id.toString()))).as("no write before the checks").isEmpty();
        assertThat(keys("").size()).as("two objects written: the output and its manifest").isEqualTo(objectsBefore + 2);
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(s3.headObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.png")).contentType())
                .isEqualTo("image/png");
        assertThat(keys("quarantine/" + id + "/")).as("never quarantined").isEmpty();
        JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
        assertThat(result.path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        JsonNode manifest = Json.MAPPER.readTree(s3.getObjectAsBytes(b -> b.bucket("jobgate")
                .key("outputs/acme/" + id + "/manifest.json")).asByteArray());
        assertThat(manifest.path("output").path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        assertThat(manifest.path("expected").path("supplier_name").asText()).isEqualTo(tag);
    }

    @Test
    void aSmallOutputOfTheWrongMediaTypeOrSizeIsRefusedInMemoryAndKeptInQuarantineOnly() {
        outputStore.checkInMemoryUpTo(8 << 20);
        String jpeg = Jobs.tag();
        String square = Jobs.tag();
        providerReturns(jpeg, Samples.jpeg(1024, 1536), 0);
        providerReturns(square, Samples.png(1024, 1024), 0);
        UUID wrongType = submit(jpeg);
        UUID wrongSize = submit(square);
        Jobs.awaitFinal(wrongType);
        Jobs.awaitFinal(wrongSize);

        for (UUID id : List.of(wrongType, wrongSize)) {
            assertThat(job(id)).containsEntry("status", "failed").containsEntry("error_category", "invalid_output");
            assertThat(api.get(ACME, "/v1/jobs/" + id + "/output").code()).isEqualTo("not_ready");
            assertThat(keys("outputs/acme/" + id + "/")).as("nothing promoted").isEmpty();
            assertThat(keys("quarantine/" + id + "/")).as("kept in quarantine for an operator").hasSize(1);
        }
        assertThat((String) job(wrongType).get("error_message")).contains("image/jpeg");
    }

    @Test
    void aWorkerThatLostItsLeaseBeforeAnInMemoryPromotionWritesNothing() {
        outputStore.checkInMemoryUpTo(8 << 20);
        String tag = Jobs.tag();
        providerReturns(tag, Samples.png(1024, 1536), 0);
        worker.injectFaults(step -> {
            if (step.equals("checked")) {
                // Meanwhile the sweeper gave the job to another worker (whose lease lasts).
                io.jobgate.support.JobFactory.onTestDatabase().leaseTakenOver((UUID) Db.single("SELECT job_id FROM jobs WHERE inputs->>'supplier_name' = ?", tag)
                        .get("job_id"), "another-worker");
            }
        });
        UUID id = submit(tag);

        await().atMost(Duration.ofSeconds(20)).until(() -> Db.count(
                "SELECT count(*) FROM attempts WHERE job_id = ? AND outcome = 'lease_lost'", id) == 1);
        assertThat(keys("outputs/acme/" + id + "/")).as("nothing promoted by the stale worker").isEmpty();
        assertThat(keys("quarantine/" + id + "/")).as("nothing written at all").isEmpty();
        assertThat(job(id)).containsEntry("status", "submitting").containsEntry("result", null);
        // The other worker's job would hold one of the provider's two slots for the tests after this one.
        finalizer.finalizeJob(id, io.jobgate.job.JobFinalizer.Outcome.failed("cancelled", "test cleanup"));
    }
}
