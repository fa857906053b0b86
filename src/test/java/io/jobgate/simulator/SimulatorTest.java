package io.jobgate.simulator;

import java.io.ByteArrayInputStream;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import javax.imageio.ImageIO;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The gateway with its bundled simulator, as the README's run command starts it: real invoices
 * and transcripts come back through the simulator adapter, and each fault knob drives its error
 * class through the real worker, gate, reconciliation and output checks.
 */
class SimulatorTest extends GatewayTestBase {

    @Override
    protected Map<String, String> settings() {
        return GatewayTestSupport.with(GatewayTestSupport.SIMULATING, Map.of("jobgate.sweeper.enabled", "true"));
    }

    UUID submit(String body, String correlationId) {
        var request = api.request("/v1/jobs", ACME).header("Content-Type", "application/json")
                .header("Idempotency-Key", "k-" + UUID.randomUUID());
        if (correlationId != null) {
            request.header("X-Correlation-Id", correlationId);
        }
        ApiClient.Response r = api.send(request.POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build());
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static String invoice(String preset, String aspect) {
        return """
                {"preset_id": "%s", "aspect_class": "%s",
                 "inputs": {"supplier_name": "Simulated Supplies GmbH", "invoice_id": "SIM-7", "currency": "EUR",
                            "tax_rate_percent": 19, "line_items": [{"description": "Widgets", "quantity": 4, "unit_price": 12.5}]}}"""
                .formatted(preset, aspect);
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, error_category, error_message, result::text AS result FROM jobs WHERE job_id = ?", id);
    }

    static List<Map<String, Object>> attempts(UUID id) {
        return Db.rows("SELECT attempt, outcome, error_category, retry_after FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt");
    }

    @Test
    void rendersRealInvoicesAtTheAspectSizeAndRealTranscripts() throws Exception {
        UUID clean = submit(invoice("invoice-clean", "portrait"), null);
        UUID scan = submit(invoice("invoice-scan", "landscape"), null);
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(3000));
        UUID transcript = submit("{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"de\", \"speakers\": 2}}", null);
        for (UUID id : List.of(clean, scan, transcript)) {
            Jobs.awaitFinal(id);
            assertThat(job(id).get("status")).as("job %s: %s", id, job(id)).isEqualTo("succeeded");
        }

        var png = ImageIO.read(new ByteArrayInputStream(api.getBytes(ACME, "/v1/jobs/" + clean + "/output")));
        assertThat(png.getWidth()).isEqualTo(1024);
        assertThat(png.getHeight()).isEqualTo(1536);
        JsonNode scanned = Json.MAPPER.readTree((String) job(scan).get("result"));
        assertThat(scanned.path("media_type").asText()).isEqualTo("image/jpeg");
        assertThat(scanned.path("width").asInt()).isEqualTo(1536);
        JsonNode text = Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + transcript + "/output"));
        assertThat(text.path("language").asText()).isEqualTo("de");
        assertThat(text.path("segments")).isNotEmpty();
    }

    @Test
    void eachFaultKnobDrivesItsErrorClassThroughTheRealWorker() {
        Map<String, UUID> jobs = new LinkedHashMap<>();
        for (String knob : ProviderSimulator.FAULTS) {
            jobs.put(knob, submit(invoice("invoice-clean", "square"), "sim-fault-" + knob + "-" + UUID.randomUUID()));
        }
        jobs.values().forEach(Jobs::awaitFinal);

        for (String knob : List.of("rate_limit_seconds", "rate_limit_date", "rate_limit_no_header")) {
            UUID id = jobs.get(knob);
            assertThat(job(id)).as(knob).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            assertThat(attempts(id).get(0)).as(knob).containsEntry("error_category", "rate_limited");
        }
        assertThat(attempts(jobs.get("rate_limit_seconds")).get(0)).containsEntry("retry_after", "2");
        assertThat((String) attempts(jobs.get("rate_limit_date")).get(0).get("retry_after")).endsWith("GMT");
        assertThat(attempts(jobs.get("rate_limit_no_header")).get(0)).containsEntry("retry_after", null);

        assertThat(attempts(jobs.get("server_error")).get(0)).containsEntry("error_category", "transient");
        assertThat(job(jobs.get("server_error"))).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        assertThat(attempts(jobs.get("prose")).get(0)).containsEntry("error_category", "unparseable_response");
        assertThat(job(jobs.get("prose"))).containsEntry("status", "succeeded").containsEntry("attempts", 2);

        for (String knob : List.of("wrong_media_type", "wrong_size")) {
            assertThat(job(jobs.get(knob))).as(knob).containsEntry("status", "failed").containsEntry("error_category", "invalid_output");
        }
        for (String knob : List.of("slow", "lose_reply")) {
            UUID id = jobs.get(knob);
            assertThat(attempts(id).get(0)).as(knob).containsEntry("outcome", "submission_unknown");
            assertThat(job(id)).as(knob).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        }
    }

    @Test
    void theDemoDrivesAMixedBatchToTheEndAndSummarisesIt() throws Exception {
        java.io.ByteArrayOutputStream printed = new java.io.ByteArrayOutputStream();
        io.jobgate.demo.Demo.Summary summary = new io.jobgate.demo.Demo(api.base(), new java.io.PrintStream(printed, true))
                .run(5, Duration.ofMinutes(2));

        assertThat(summary.allFinal()).isTrue();
        assertThat(summary.byTenant()).containsOnlyKeys("acme", "globex");
        int total = summary.byTenant().values().stream().flatMap(m -> m.values().stream()).mapToInt(Integer::intValue).sum();
        assertThat(total).as("five invoices per tenant and one video clip").isEqualTo(11);
        assertThat(summary.byTenant().get("acme").getOrDefault("succeeded", 0)).isGreaterThanOrEqualTo(5);
        assertThat(printed.toString()).contains("succeeded").contains("All final: true").contains("Video clip (MP4, succeeded)");
        // The summary names the faults it injected and says which failures were expected.
        // Five jobs a tenant: the fifth of each gets a fault (server_error, then rate_limit_seconds).
        assertThat(printed.toString()).contains("Faults injected").contains("server_error").contains("rate_limit_seconds")
                .contains("expected succeeded").containsPattern("Failures: \\d+, of which \\d+ expected");
    }
}
