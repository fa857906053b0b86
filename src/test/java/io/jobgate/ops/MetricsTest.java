package io.jobgate.ops;

import io.jobgate.support.PrometheusText;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The scripted run ({@link ScriptedRun}: a 429, refusals, successes, failures), then a scrape of
 * {@code /observe/metrics}: every series of jobgate's table is there with its labels and the
 * counts the run made.
 */
class MetricsTest extends GatewayTestBase {

    final ScriptedRun run = new ScriptedRun();

    @Override
    protected Map<String, String> settings() {
        return run.settings();
    }

    @AfterAll
    void stop() {
        run.stop();
    }

    PrometheusText scrape() {
        ApiClient.Response scrape = api.get(null, "/observe/metrics");
        assertThat(scrape.status()).isEqualTo(200);
        return PrometheusText.parse(scrape.text());
    }

    @Test
    void aScriptedRunShowsInEverySeriesWithItsLabels() throws Exception {
        run.run(api);

        // The gauges are refreshed every 200 ms: wait for a refresh that saw the run's end.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                assertThat(scrape().find("jobgate_queue_jobs", "tenant", "acme")).isNotEmpty()
                        .allSatisfy(s -> assertThat(s.value()).as("%s", s).isZero()));
        PrometheusText m = scrape();

        // Terminal jobs: 4 successes, one other 4xx, one ran out of attempts on 429s (429-caused), one on 503s.
        assertThat(m.value("jobgate_jobs_finished_total", "tenant", "acme", "status", "succeeded", "category", "")).isEqualTo(4);
        assertThat(m.value("jobgate_jobs_finished_total", "tenant", "acme", "status", "failed", "category", "terminal_request"))
                .isEqualTo(1);
        assertThat(m.value("jobgate_jobs_finished_total", "tenant", "acme", "status", "failed", "category", "rate_limited"))
                .isEqualTo(1);
        assertThat(m.value("jobgate_jobs_finished_total", "tenant", "acme", "status", "failed", "category", "exhausted")).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'acme' AND error_category = 'exhausted'"))
                .as("the 429-caused job itself still says exhausted").isEqualTo(2);

        // Attempts: outcome per provider; 429s: 1 before a success + 4 until the caps.
        assertThat(m.value("jobgate_attempts_total", "provider", "fakeimg", "tenant", "acme", "outcome", "succeeded")).isEqualTo(2);
        assertThat(m.value("jobgate_attempts_total", "provider", "fakeimg", "tenant", "acme", "outcome", "rate_limited")).isEqualTo(5);
        assertThat(m.value("jobgate_attempts_total", "provider", "fakeimg", "tenant", "acme", "outcome", "terminal_request")).isEqualTo(1);
        assertThat(m.value("jobgate_attempts_total", "provider", "fakeimg", "tenant", "acme", "outcome", "transient")).isEqualTo(4);
        assertThat(m.value("jobgate_attempts_total", "provider", "fakeasync", "tenant", "acme", "outcome", "pending")).isEqualTo(1);
        assertThat(m.value("jobgate_attempts_total", "provider", "openai", "tenant", "acme", "outcome", "succeeded")).isEqualTo(1);
        assertThat(m.value("jobgate_provider_rate_limited_total", "provider", "fakeimg", "tenant", "acme")).isEqualTo(5);
        // The same outcomes by the derived adapter revision (label@hash), what a canary compares.
        assertThat(m.find("jobgate_revision_attempts_total", "provider", "fakeimg", "outcome", "succeeded")).singleElement()
                .satisfies(s -> assertThat(s.labels().get("revision")).matches("fake-r1@[0-9a-f]{10}"))
                .satisfies(s -> assertThat(s.value()).isEqualTo(2));

        // Refusals through both doors, by problem code.
        assertThat(m.value("jobgate_admission_refusals_total", "tenant", "acme", "code", "unknown_preset")).isEqualTo(1);
        assertThat(m.value("jobgate_admission_refusals_total", "tenant", "acme", "code", "tenant_mismatch")).isEqualTo(1);

        // Units of succeeded jobs: attempts per image / per audio minute are ratios of two series.
        assertThat(m.value("jobgate_completed_units_total", "provider", "fakeimg", "tenant", "acme", "unit", "image")).isEqualTo(2);
        assertThat(m.value("jobgate_completed_units_total", "provider", "fakeasync", "tenant", "acme", "unit", "image")).isEqualTo(1);
        assertThat(m.value("jobgate_completed_units_total", "provider", "openai", "tenant", "acme", "unit", "audio_minute"))
                .isEqualTo(1);

        // Money: the counters say what the ledger holds.
        assertThat(m.value("jobgate_ledger_micros_total", "tenant", "acme", "kind", "debit")).isEqualTo(ledger("debit")).isPositive();
        assertThat(m.value("jobgate_ledger_micros_total", "tenant", "acme", "kind", "refund")).isEqualTo(ledger("refund")).isPositive();

        // What admission metered, per operation (the job's kind) in its own unit: the ledger's debits' units.
        for (String[] op : new String[][] {{"image", "images"}, {"transcription", "audio_minutes"}}) {
            double units = ((Number) Db.single("SELECT coalesce(sum(l.units), 0) AS u FROM ledger l JOIN jobs j ON j.job_id = l.job_id "
                    + "WHERE l.tenant_id = 'acme' AND l.entry_type = 'debit' AND l.redrive = 0 AND j.kind = ?", op[0]).get("u")).doubleValue();
            assertThat(m.value("jobgate_metered_units_total", "tenant", "acme", "operation", op[0], "unit", op[1])).as(op[0])
                    .isEqualTo(units).isPositive();
        }

        // The async job waited on its provider until the poller's lookup: one lag, a histogram.
        assertThat(m.value("jobgate_reconcile_lag_seconds_count")).isEqualTo(1);
        assertThat(m.value("jobgate_reconcile_lag_seconds_sum")).isPositive().isLessThan(30);
        assertThat(m.find("jobgate_reconcile_lag_seconds_bucket")).extracting(s -> s.labels().get("le"))
                .contains("1.0", "60.0", "3600.0", "+Inf");
        assertThat(m.value("jobgate_reconcile_lag_seconds_bucket", "le", "+Inf")).isEqualTo(1);

        // Gauges from PostgreSQL: every tenant and open status, every provider, 0 included.
        assertThat(m.find("jobgate_queue_jobs", "tenant", "acme").stream().map(s -> s.labels().get("status")).collect(Collectors.toSet()))
                .isEqualTo(Set.of("queued", "running", "submitting", "provider_pending", "submission_unknown", "retry_wait"));
        assertThat(m.value("jobgate_queue_oldest_age_seconds", "tenant", "acme")).isZero();
        assertThat(m.find("jobgate_queue_oldest_age_seconds")).extracting(s -> s.labels().get("tenant")).contains("acme", "globex");
        for (String provider : new String[] {"fakeimg", "fakeasync", "openai", "simulator"}) {
            assertThat(m.value("jobgate_leases_active", "provider", provider)).as(provider).isZero();
        }
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(scrape().value("jobgate_provider_gate_open",
                "provider", "fakeimg")).as("open again after its Retry-After").isEqualTo(1));
        assertThat(m.value("jobgate_provider_gate_open", "provider", "openai")).isEqualTo(1);

        assertThat(m.find("camel_exchanges_total")).as("Camel's own meters stay").isNotEmpty();
        assertThat(m.samples()).filteredOn(s -> s.name().startsWith("jobgate_"))
                .allSatisfy(s -> assertThat(s.labels().keySet()).as("%s", s).isSubsetOf("tenant", "provider", "status",
                        "category", "code", "outcome", "unit", "kind", "le", "revision", "operation")); // revisions: a few per provider
    }

    static double ledger(String kind) {
        return ((Number) Db.single("SELECT abs(coalesce(sum(amount_micros), 0)) AS s FROM ledger WHERE tenant_id = 'acme' "
                + "AND entry_type = ?", kind).get("s")).doubleValue();
    }
}
