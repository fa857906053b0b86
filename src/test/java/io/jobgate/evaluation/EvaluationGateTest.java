package io.jobgate.evaluation;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The evaluation loop end to end with the bundled simulator (async: submit, signed webhook, lookup):
 * a canary candidate of its adapter that asks for garbled totals (examples/canary/simulator-candidate.camel.yaml,
 * dropped in while the gateway runs) gets every first attempt; its outputs are held in quarantine, read back
 * by the Tesseract evaluator and fail the quality gate, which stops it; every job succeeds on the stable
 * revision, whose outputs read back near-perfectly; {@code evaluate}'s table shows both revisions.
 * Required in CI with the OCR test ({@code JOBGATE_TEST_REQUIRE_TESSERACT=true}).
 */
class EvaluationGateTest extends GatewayTestBase {

    static Path routes;

    @Override
    protected Map<String, String> settings() throws Exception {
        boolean available = new TesseractOcr("tesseract", Duration.ofSeconds(10)).available();
        if (Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_TESSERACT"))) {
            assertThat(available).as("tesseract is required here (JOBGATE_TEST_REQUIRE_TESSERACT)").isTrue();
        }
        Assumptions.assumeTrue(available, "tesseract is not installed");
        routes = Files.createTempDirectory("jobgate-evaluation-routes");
        Map<String, String> settings = new java.util.LinkedHashMap<>(GatewayTestSupport.RECONCILING);
        settings.putAll(Map.ofEntries(
                Map.entry("jobgate.simulator.enabled", "true"),
                Map.entry("jobgate.simulator.processing-ms", "100"),
                Map.entry("jobgate.evaluation.enabled", "true"),
                Map.entry("jobgate.evaluation.period-ms", "200"),
                Map.entry("jobgate.canary.period-ms", "200"),
                // Every first attempt goes to the candidate; only the quality gate may stop it.
                Map.entry("jobgate.provider.simulator.canary.share", "100"),
                Map.entry("jobgate.provider.simulator.canary.min-sample", "1000"),
                Map.entry("jobgate.provider.simulator.canary.min-evaluated", "3"),
                Map.entry("camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:" + routes + "/*.camel.yaml"),
                Map.entry("camel.main.routes-reload-enabled", "true"),
                Map.entry("camel.main.routes-reload-directory", routes.toString()),
                Map.entry("camel.main.routes-reload-pattern", "*.camel.yaml"),
                Map.entry("camel.main.routes-reload-remove-all-routes", "false")));
        return settings;
    }

    List<UUID> submit(int n) {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                    {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "simulator",
                     "inputs": {"supplier_name": "Evaluated Supplies GmbH", "invoice_id": "EV-%d", "currency": "EUR",
                                "customer_name": "Northwind Traders", "tax_rate_percent": 21,
                                "line_items": [{"description": "Copper wire 2mm", "quantity": %d, "unit_price": 12.35},
                                               {"description": "Safety gloves", "quantity": 3, "unit_price": 4.9}]}}"""
                    .formatted(100 + i, 2 + i));
            assertThat(r.status()).as(r.text()).isEqualTo(202);
            ids.add(UUID.fromString(r.json().path("job_id").asText()));
        }
        return ids;
    }

    static String in(List<UUID> ids) {
        return "(" + String.join(",", ids.stream().map(id -> "'" + id + "'").toList()) + ")";
    }

    @Test
    void aCandidateThatGarblesTotalsFailsTheQualityGateAndEvaluatePrintsBothRevisions() throws Exception {
        Instant started = Instant.now().minusSeconds(60);
        Path tmp = routes.resolve("simulator-candidate.tmp");
        Files.copy(Path.of("examples/canary/simulator-candidate.camel.yaml"), tmp, StandardCopyOption.REPLACE_EXISTING);
        Files.move(tmp, routes.resolve("simulator-candidate.camel.yaml"), StandardCopyOption.ATOMIC_MOVE);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() ->
                Db.count("SELECT count(*) FROM canaries WHERE provider = 'simulator' AND status = 'running'") == 1);
        String candidate = (String) Db.single("SELECT revision FROM canaries WHERE provider = 'simulator'").get("revision");

        List<UUID> ids = submit(5);
        ids.forEach(Jobs::awaitFinal);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND job_id IN " + in(ids)))
                .isEqualTo(ids.size());
        String candidateImage = candidate.split("@")[0]; // its label: the image revision is <label>@<its own hash>
        String in = "(" + String.join(",", ids.stream().map(id -> "'" + id + "'").toList()) + ")";
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE outcome = 'candidate_output' AND held_output IS NOT NULL "
                + "AND adapter_revision LIKE ? AND job_id IN " + in, candidateImage + "@%"))
                .as("each job's first attempt ran on the candidate, its output held").isEqualTo(ids.size());
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id IN " + in + " AND result->>'adapter_revision' LIKE ?",
                candidateImage + "@%")).as("no job's output is the candidate's").isZero();

        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(300)).until(() ->
                "stopped".equals(Db.single("SELECT status FROM canaries WHERE revision = ?", candidate).get("status")));
        Map<String, Object> stop = Db.single("SELECT gate, reason FROM canaries WHERE revision = ?", candidate);
        assertThat(stop.get("gate")).isEqualTo("quality");

        // Every output of the run read back (the stable one of each job, the candidate's held one).
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(300)).until(() ->
                Db.count("SELECT count(*) FROM evaluations WHERE evaluated_at IS NOT NULL AND job_id IN " + in) == 2L * ids.size());
        ApiClient.Response answer = api.get(ADMIN, "/v1/admin/evaluations?since=" + started);
        assertThat(answer.status()).as(answer.text()).isEqualTo(200);
        JsonNode stable = null;
        JsonNode held = null;
        for (JsonNode row : answer.json().path("rows")) {
            if (row.path("revision").asText().startsWith(candidateImage + "@")) {
                held = row;
            } else if (row.path("provider").asText().equals("simulator")) {
                stable = row;
            }
        }
        assertThat(stable).as(answer.text()).isNotNull();
        assertThat(held).as(answer.text()).isNotNull();
        assertThat(stable.path("jobs").asLong()).isEqualTo(ids.size());
        assertThat(stable.path("field_accuracy").asDouble()).as("the stable revision's clean invoices").isGreaterThanOrEqualTo(0.95);
        assertThat(stable.path("totals_correct").asLong()).isGreaterThanOrEqualTo(ids.size() - 1L);
        assertThat(held.path("candidate_outputs").asBoolean()).isTrue();
        assertThat(held.path("totals_correct").asLong()).as("garbled totals never read right").isZero();
        assertThat(held.path("field_accuracy").asDouble()).isLessThan(stable.path("field_accuracy").asDouble());

        // Stored with the job: its operator view lists both outputs' scores beside its attempts.
        JsonNode attempts = api.get(ADMIN, "/v1/admin/jobs/" + ids.get(0) + "/attempts").json();
        assertThat(attempts.path("evaluations")).hasSize(2);
        assertThat(attempts.path("evaluations").get(0).path("held").asBoolean()).isTrue();
        assertThat(attempts.path("evaluations").get(0).path("totals_correct").asBoolean()).isFalse();
        assertThat(attempts.path("evaluations").get(1).path("held").asBoolean()).isFalse();
        assertThat(attempts.path("evaluations").get(1).path("scores").path("fields").isArray()).isTrue();

        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        EvaluateCommand.print(answer.json(), new PrintStream(printed, true, StandardCharsets.UTF_8));
        String table = printed.toString(StandardCharsets.UTF_8);
        assertThat(table).contains("invoice-clean v2").contains(stable.path("revision").asText())
                .contains(held.path("revision").asText() + " *").contains("0/" + held.path("outputs").asLong());

        assertThat(api.get(null, "/observe/metrics").text())
                .containsPattern("jobgate_evaluated_fields_total\\{[^}]*outcome=\"wrong\"[^}]*revision=\"" + held.path("revision").asText()
                        .replace(".", "\\.") + "\"[^}]*} [1-9]")
                .containsPattern("jobgate_canary_stops_total\\{[^}]*gate=\"quality\"[^}]*provider=\"simulator\"[^}]*} 1\\.0");
    }
}
