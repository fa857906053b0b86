package io.jobgate.canary;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.Settings;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.support.JobFactory;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A revision's gates over its recent attempts in PostgreSQL: each gate trips on its own evidence,
 * nothing judges below the minimum sample, old attempts and other revisions do not count, and
 * faults that are not the revision's (429s, the job's caps) do not count as its errors.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CanaryGatesTest {

    static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.MICROS);
    static final String TENANT = "gates";

    HikariDataSource pool;
    JdbcTemplate jdbc;
    CanaryGates gates;
    Provider provider;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(2);
        TestDatabase.reset();
        jdbc = new JdbcTemplate(pool);
        TestTenants.tenant(jdbc, TENANT, 10, 10, 1000);
        gates = new CanaryGates(jdbc, Clock.fixed(NOW, ZoneOffset.UTC));
        Path dir = Files.createTempDirectory("jobgate-gates");
        Files.copy(Path.of("src/test/resources/providers/fakeimg.properties"), dir.resolve("fakeimg.properties"));
        provider = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext())).find("fakeimg").orElseThrow();
    }

    @AfterAll
    void close() {
        pool.close();
    }

    /** {@code n} finished attempts of {@code revision}, each its own job, started {@code ago} before now. */
    void attempts(String revision, int n, String outcome, String category, long durationMs, Duration ago) {
        for (int i = 0; i < n; i++) {
            JobFactory jobs = JobFactory.on(jdbc);
            UUID job = jobs.job(TENANT).preset("invoice-clean", 2).attempts(1).insert();
            Instant started = NOW.minus(ago);
            jobs.attempt(job, 1).revision(revision).ran(started, started.plusMillis(durationMs)).durationMs(durationMs)
                    .outcome(outcome).errorCategory(category).insert();
        }
    }

    static GateThresholds thresholds() {
        return new GateThresholds(Duration.ofMinutes(10), 20, 0.2, 1500, 0.05);
    }

    @Test
    void aCandidateAnswering500sTripsTheErrorRateGate() {
        attempts("err@1", 15, "succeeded", null, 300, Duration.ofMinutes(1));
        attempts("err@1", 4, "retry_wait", "transient", 300, Duration.ofMinutes(1));
        CanaryGates.Verdict below = gates.judge(provider, "err@1", thresholds());
        assertThat(below.judged()).as("19 < the minimum sample of 20").isFalse();
        assertThat(below.tripped()).isNull();

        attempts("err@1", 2, "retry_wait", "transient", 300, Duration.ofMinutes(1));
        CanaryGates.Verdict v = gates.judge(provider, "err@1", thresholds());
        assertThat(v.sample()).isEqualTo(21);
        assertThat(v.errorRate()).isEqualTo(6.0 / 21);
        assertThat(v.tripped()).startsWith("error_rate 28.6 % > 20.0 %");
    }

    @Test
    void rejectedOutputsTripTheirOwnGate() {
        attempts("inv@1", 19, "succeeded", null, 300, Duration.ofMinutes(2));
        attempts("inv@1", 2, "retry_wait", "invalid_output", 300, Duration.ofMinutes(2));
        CanaryGates.Verdict v = gates.judge(provider, "inv@1", new GateThresholds(Duration.ofMinutes(10), 20, 0.5, 1500, 0.05));
        assertThat(v.invalidOutputRate()).isEqualTo(2.0 / 21);
        assertThat(v.tripped()).startsWith("invalid_output 9.5 % > 5.0 %");
    }

    @Test
    void slowCallsTripTheLatencyGateAtTheirP95() {
        attempts("slow@1", 18, "succeeded", null, 400, Duration.ofMinutes(3));
        attempts("slow@1", 2, "succeeded", null, 1400, Duration.ofMinutes(3));
        assertThat(gates.judge(provider, "slow@1", thresholds()).tripped()).as("p95 1400 ms is within 1500").isNull();
        attempts("slow@1", 3, "succeeded", null, 2500, Duration.ofMinutes(3));
        CanaryGates.Verdict v = gates.judge(provider, "slow@1", thresholds());
        assertThat(v.p95Millis()).isEqualTo(2500);
        assertThat(v.tripped()).startsWith("p95_latency 2500 ms > 1500 ms");
    }

    @Test
    void onlyTheRevisionsOwnRecentFaultsCount() {
        attempts("fair@1", 20, "succeeded", null, 300, Duration.ofMinutes(1));
        attempts("fair@1", 10, "retry_wait", "rate_limited", 300, Duration.ofMinutes(1));
        attempts("fair@1", 5, "failed", "exhausted", 300, Duration.ofMinutes(1));
        attempts("fair@1", 30, "retry_wait", "transient", 300, Duration.ofMinutes(30)); // before the window
        attempts("other@1", 30, "retry_wait", "transient", 300, Duration.ofMinutes(1));
        CanaryGates.Verdict v = gates.judge(provider, "fair@1", thresholds());
        assertThat(v.sample()).isEqualTo(35);
        assertThat(v.errorRate()).isZero();
        assertThat(v.tripped()).isNull();
    }

    @Test
    void thresholdsComeFromTheProviderFileWithDefaultsAndBadValuesFailLoudly() {
        GateThresholds defaults = GateThresholds.of(provider);
        assertThat(defaults.window()).isEqualTo(Duration.ofSeconds(GateThresholds.DEFAULT_WINDOW_SECONDS));
        assertThat(defaults.minSample()).isEqualTo(GateThresholds.DEFAULT_MIN_SAMPLE);
        assertThat(defaults.maxErrorRate()).isEqualTo(GateThresholds.DEFAULT_MAX_ERROR_RATE);
        assertThat(defaults.maxP95Millis()).as("80 %% of its 2000 ms call deadline").isEqualTo(1600);
        assertThat(GateThresholds.of(provider.withSettings("canary.max-error-rate", "0.5")).maxErrorRate()).isEqualTo(0.5);
        assertThatThrownBy(() -> GateThresholds.of(provider.withSettings("canary.max-error-rate", "20")))
                .hasMessageContaining("jobgate.provider.fakeimg.canary.max-error-rate must be a share from 0 to 1");
        assertThatThrownBy(() -> GateThresholds.of(provider.withSettings("canary.min-sample", "0")))
                .hasMessageContaining("canary.min-sample must be a whole number");
    }

    /** The evaluator's scores of {@code n} of the revision's attempts: {@code correct} of 11 fields, totals right or not. */
    void evaluated(String revision, int n, int correct, boolean totals) {
        List<UUID> jobs = jdbc.queryForList("""
                SELECT a.job_id FROM attempts a WHERE a.adapter_revision = ?
                   AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.job_id = a.job_id) LIMIT ?""", UUID.class, revision, n);
        for (UUID job : jobs) {
            jdbc.update("""
                    INSERT INTO evaluations (job_id, attempt, provider, revision, preset_id, preset_version, held, claimed_at,
                                             evaluated_at, fields_correct, fields_total, totals_correct)
                    VALUES (?, 1, 'fakeimg', ?, 'invoice-clean', 2, true, now(), now(), ?, 11, ?)""", job, revision, correct, totals);
        }
    }

    @Test
    void garbledTotalsTripTheQualityGateOnceEnoughOutputsWereReadBack() {
        attempts("garbled@1", 20, "candidate_output", null, 300, Duration.ofMinutes(1));
        evaluated("garbled@1", 4, 11, true);
        assertThat(gates.judge(provider, "garbled@1", thresholds()).tripped()).as("4 < the 5 evaluated outputs it needs").isNull();
        evaluated("garbled@1", 1, 11, true);
        assertThat(gates.judge(provider, "garbled@1", thresholds()).tripped()).as("all read right").isNull();
        evaluated("garbled@1", 3, 8, false);
        assertThat(gates.judge(provider, "garbled@1", thresholds()).tripped())
                .startsWith("quality field accuracy 89.8 % < 90.0 % of 8 evaluated outputs");
        assertThat(gates.judge(provider, "garbled@1", new GateThresholds(Duration.ofMinutes(10), 20, 0.2, 1500, 0.05, 5, 0.8, 0.8))
                .tripped()).startsWith("quality totals correct 62.5 % < 80.0 % of 8 evaluated outputs");
    }
}
