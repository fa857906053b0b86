package io.jobgate.canary;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.common.Json;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.infra.Settings;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobTransitions;
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
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What an operator sees of the canaries, from their rows in PostgreSQL: the admin API's JSON, health's notes, and the
 * status topic's events of their actions.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CanaryViewsTest {

    static final Instant NOW = Instant.parse("2026-03-01T10:00:00.123456Z");
    static final String TENANT = "views";

    HikariDataSource pool;
    JdbcTemplate jdbc;
    CanaryViews views;
    CanaryLifecycle lifecycle;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(2);
        TestDatabase.reset();
        jdbc = new JdbcTemplate(pool);
        TestTenants.tenant(jdbc, TENANT, 10, 10, 1000);
        Clock clock = Clock.fixed(NOW, ZoneOffset.UTC);
        Path dir = Files.createTempDirectory("jobgate-views");
        Files.writeString(dir.resolve("fakeimg.properties"),
                Files.readString(Path.of("src/test/resources/providers/fakeimg.properties"))
                        + "\njobgate.provider.fakeimg.canary.share = 12.5\n");
        ProviderCatalog providers = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
        Canaries canaries = new Canaries(jdbc, providers, name -> null, clock);
        views = new CanaryViews(jdbc, providers, canaries, clock);
        RetryingTransactions transactions = new RetryingTransactions(pool, 3);
        JobTransitions transitions = new JobTransitions(new NamedParameterJdbcTemplate(jdbc), transactions, clock);
        lifecycle = new CanaryLifecycle(jdbc, transactions, transitions, new JobFinalizer(transitions), providers, canaries);
        // Running, its own gate closed for an hour, sampled; its provider configured (share 12.5 %).
        canary("fakeimg-1-candidate@00000000a1", "fakeimg",
                new String[] {"fakeimg-1-candidate@00000000a2", "fakeimg-1-candidate@00000000a3"}, "running", null, null,
                NOW.plusSeconds(3600), "HTTP 429 for job x", NOW.minusSeconds(600), NOW.minusSeconds(3600));
        // Stopped by a gate, its own gate's closing past; its provider no longer configured.
        canary("gone-1-candidate@00000000b1", "gone", new String[] {"gone-1-candidate@00000000b2"}, "stopped", "error_rate",
                "error_rate 50.0 % > 20.0 % of 20 attempts", NOW.minusSeconds(3600), "old 429", null, NOW.minusSeconds(7200));
        attempt("fakeimg-1-candidate@00000000a2", "candidate_output", null, 900);
        attempt("fakeimg-1-candidate@00000000a3", "retry_wait", "transient", 1200);
        attempt("fakeimg-1-candidate@00000000a2", "retry_wait", "invalid_output", 700);
        action("fakeimg-1-candidate@00000000a1", "fakeimg", "started", null, "candidate route loaded; share 12.5 %", "drop-in", 0);
        action("gone-1-candidate@00000000b1", "gone", "started", null, null, "drop-in", 0);
        action("gone-1-candidate@00000000b1", "gone", "stopped", "error_rate", "error_rate 50.0 %", "canary-gates", 2);
    }

    @AfterAll
    void close() {
        pool.close();
    }

    void canary(String revision, String provider, String[] revisions, String status, String gate, String reason, Instant closedUntil,
                String closedReason, Instant sampledAt, Instant createdAt) {
        jdbc.update("""
                INSERT INTO canaries (revision, provider, revisions, status, gate, reason, judged_from, changed_by, changed_at, created_at,
                                      closed_until, closed_reason, sampled_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, 'alice', ?, ?, ?, ?, ?)""", revision, provider, revisions, status, gate, reason,
                Timestamp.from(createdAt), Timestamp.from(createdAt.plusSeconds(5)), Timestamp.from(createdAt),
                closedUntil == null ? null : Timestamp.from(closedUntil), closedReason, sampledAt == null ? null : Timestamp.from(sampledAt));
    }

    void attempt(String revision, String outcome, String category, long durationMs) {
        JobFactory jobs = JobFactory.on(jdbc);
        UUID job = jobs.job(TENANT).preset("invoice-clean", 2).attempts(1).insert();
        Instant started = NOW.minusSeconds(60);
        jobs.attempt(job, 1).revision(revision).ran(started, started.plusMillis(durationMs)).durationMs(durationMs).outcome(outcome)
                .errorCategory(category).insert();
    }

    void action(String revision, String provider, String action, String gate, String reason, String operator, int requeued) {
        jdbc.update("""
                INSERT INTO canary_actions (revision, provider, action, gate, reason, operator, at, requeued)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)""", revision, provider, action, gate, reason, operator,
                Timestamp.from(NOW.minusSeconds(30)), requeued);
    }

    /** A text block of JSON written over several lines, as one line. */
    static String json(String lines) {
        return lines.replace("\n", "");
    }

    /**
     * The admin API's canaries, member by member and byte by byte as they were when the views were maps: a configured
     * provider's canary with its share, route, gates and a closed own gate; a canary of a provider no longer configured
     * without them, its own gate's past closing not shown.
     */
    @Test
    void theAdminApiShowsEachCanaryWithItsGatesAttemptsAndActions() {
        assertThat(Json.write(Map.of("canaries", views.list()))).isEqualTo("{\"canaries\":" + json("""
                [{"provider":"fakeimg","revision":"fakeimg-1-candidate@00000000a1",
                "revisions":["fakeimg-1-candidate@00000000a2","fakeimg-1-candidate@00000000a3"],"status":"running",
                "gate":null,"reason":null,"changed_by":"alice","changed_at":"2026-03-01T09:00:05.123456Z",
                "closed_until":"2026-03-01T11:00:00.123456Z","closed_reason":"HTTP 429 for job x",
                "sampled_at":"2026-03-01T09:50:00.123456Z","share_percent":12.5,"route_loaded":false,"gates":{"sample":3,
                "judged":false,"error_rate":0.6666666666666666,"invalid_output_rate":0.3333333333333333,"p95_ms":1200,
                "would_trip":null},"attempts":{"total":3,"held_outputs":1,"errors":2},"actions":[{"action":"started",
                "gate":null,"reason":"candidate route loaded; share 12.5 %","operator":"drop-in",
                "at":"2026-03-01T09:59:30.123456Z","requeued":0}]},{"provider":"gone",
                "revision":"gone-1-candidate@00000000b1","revisions":["gone-1-candidate@00000000b2"],"status":"stopped",
                "gate":"error_rate","reason":"error_rate 50.0 % > 20.0 % of 20 attempts","changed_by":"alice",
                "changed_at":"2026-03-01T08:00:05.123456Z","closed_until":null,"closed_reason":null,"sampled_at":null,
                "attempts":{"total":0,"held_outputs":0,"errors":0},"actions":[{"action":"started","gate":null,"reason":null,
                "operator":"drop-in","at":"2026-03-01T09:59:30.123456Z","requeued":0},{"action":"stopped",
                "gate":"error_rate","reason":"error_rate 50.0 %","operator":"canary-gates",
                "at":"2026-03-01T09:59:30.123456Z","requeued":2}]}]
                """) + "}");
        assertThat(Json.write(views.view("gone-1-candidate@00000000b1"))).isEqualTo(json("""
                {"provider":"gone","revision":"gone-1-candidate@00000000b1","revisions":["gone-1-candidate@00000000b2"],
                "status":"stopped","gate":"error_rate","reason":"error_rate 50.0 % > 20.0 % of 20 attempts",
                "changed_by":"alice","changed_at":"2026-03-01T08:00:05.123456Z","closed_until":null,"closed_reason":null,
                "sampled_at":null,"attempts":{"total":0,"held_outputs":0,"errors":0},"actions":[{"action":"started",
                "gate":null,"reason":null,"operator":"drop-in","at":"2026-03-01T09:59:30.123456Z","requeued":0},
                {"action":"stopped","gate":"error_rate","reason":"error_rate 50.0 %","operator":"canary-gates",
                "at":"2026-03-01T09:59:30.123456Z","requeued":2}]}
                """));
    }

    @Test
    void healthNotesNameEachProvidersNewestCanary() {
        assertThat(views.healthNotes()).containsExactly(
                Map.entry("fakeimg", "canary fakeimg-1-candidate@00000000a1 running at 12.5 %"),
                Map.entry("gone", "canary gone-1-candidate@00000000b1 stopped: error_rate 50.0 % > 20.0 % of 20 attempts"));
    }

    /** Each action goes to the status topic once, oldest first, as the event it always was. */
    @Test
    void unpublishedActionsGoToTheStatusTopicOnce() {
        List<Map<String, Object>> events = new ArrayList<>();
        lifecycle.publishWith(events::add);
        lifecycle.judge();
        assertThat(Json.write(events)).isEqualTo(json("""
                [{"event":"canary","provider":"fakeimg","revision":"fakeimg-1-candidate@00000000a1","action":"started",
                "gate":null,"reason":"candidate route loaded; share 12.5 %","operator":"drop-in",
                "at":"2026-03-01T09:59:30.123456Z","requeued":0},{"event":"canary","provider":"gone",
                "revision":"gone-1-candidate@00000000b1","action":"started","gate":null,"reason":null,"operator":"drop-in",
                "at":"2026-03-01T09:59:30.123456Z","requeued":0},{"event":"canary","provider":"gone",
                "revision":"gone-1-candidate@00000000b1","action":"stopped","gate":"error_rate",
                "reason":"error_rate 50.0 %","operator":"canary-gates","at":"2026-03-01T09:59:30.123456Z","requeued":2}]
                """));
        events.clear();
        lifecycle.judge();
        assertThat(events).as("published once").isEmpty();
    }
}
