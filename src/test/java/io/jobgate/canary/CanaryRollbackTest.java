package io.jobgate.canary;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.infra.Settings;
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
 * A stop's rollback in PostgreSQL, state by state: a job waiting on the candidate's task takes
 * {@code resubmit} (to {@code retry_wait}, a dispatch event due now, a status event), a job waiting for
 * its retry after a candidate attempt is due now; jobs of the stable revision, final jobs and their
 * attempts are untouched; the candidate's open jobs keep its role (their outputs stay held); the stop is recorded once
 * with who and how many jobs it re-queued.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CanaryRollbackTest {

    static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.MICROS);
    static final String TENANT = "rollback";
    static final String CANDIDATE = "fakeimg-1-candidate@0000000001";

    HikariDataSource pool;
    JdbcTemplate jdbc;
    CanaryLifecycle lifecycle;
    io.jobgate.job.CandidateAttempts candidateAttempts;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(2);
        TestDatabase.reset();
        jdbc = new JdbcTemplate(pool);
        TestTenants.tenant(jdbc, TENANT, 10, 10, 1000);
        Clock clock = Clock.fixed(NOW, ZoneOffset.UTC);
        RetryingTransactions transactions = new RetryingTransactions(pool, 3);
        JobTransitions transitions = new JobTransitions(new NamedParameterJdbcTemplate(jdbc), transactions, clock);
        Path dir = Files.createTempDirectory("jobgate-rollback");
        Files.copy(Path.of("src/test/resources/providers/fakeimg.properties"), dir.resolve("fakeimg.properties"));
        ProviderCatalog providers = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
        lifecycle = new CanaryLifecycle(jdbc, transactions, transitions, new io.jobgate.job.JobFinalizer(transitions), providers,
                new Canaries(jdbc, providers, name -> null, clock));
        candidateAttempts = new io.jobgate.job.CandidateAttempts(jdbc, transactions, transitions);
        jdbc.update("""
                INSERT INTO canaries (revision, provider, revisions, status, judged_from, changed_by, changed_at, created_at)
                VALUES ('fakeimg-1-candidate@000000000c', 'fakeimg', ?, 'running', now(), 'drop-in', now(), now())""",
                (Object) new String[] {CANDIDATE});
    }

    @AfterAll
    void close() {
        pool.close();
    }

    UUID job(String status, String revision, Instant nextAttempt) {
        JobFactory jobs = JobFactory.on(jdbc);
        UUID job = jobs.job(TENANT).status(status).preset("invoice-clean", 2).lifetime(1800, NOW.plusSeconds(1800)).attempts(1)
                .revision(revision).dispatchedAt(status.equals("provider_pending") ? NOW : null).nextAttemptAt(nextAttempt)
                .finalizedAt(status.equals("succeeded") ? NOW : null).insert();
        jobs.attempt(job, 1).revision(revision).ran(NOW.minusSeconds(5), NOW.minusSeconds(4))
                .outcome(status.equals("retry_wait") ? "retry_wait" : "pending").errorCategory(status.equals("retry_wait") ? "transient" : null)
                .insert();
        if (nextAttempt != null) {
            jobs.dispatch(job, TENANT, nextAttempt);
        }
        return job;
    }

    Map<String, Object> row(UUID job) {
        return jdbc.queryForMap("""
                SELECT j.status, j.next_attempt_at,
                       (SELECT max(available_at) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'dispatch'
                           AND o.published_at IS NULL) AS due,
                       (SELECT count(*) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'status') AS status_events,
                       (SELECT count(*) FROM attempts a WHERE a.job_id = j.job_id) AS attempts
                  FROM jobs j WHERE j.job_id = ?""", job);
    }

    @Test
    void aStopReQueuesTheCandidatesOpenJobsOnTheStableRevisionAndTouchesNothingElse() {
        UUID waitingOnTask = job("provider_pending", CANDIDATE, null);
        UUID waitingForRetry = job("retry_wait", CANDIDATE, NOW.plusSeconds(300));
        UUID stableWaiting = job("provider_pending", "fakeimg-1@0000000002", null);
        UUID stableRetry = job("retry_wait", "fakeimg-1@0000000002", NOW.plusSeconds(300));
        UUID finished = job("succeeded", CANDIDATE, null);

        assertThat(lifecycle.stop("fakeimg-1-candidate@000000000c", "operator", "bad build", "alice")).contains(2);

        Map<String, Object> resubmitted = row(waitingOnTask);
        assertThat(resubmitted.get("status")).isEqualTo("retry_wait");
        assertThat(((Timestamp) resubmitted.get("due")).toInstant()).isEqualTo(NOW);
        assertThat(((Number) resubmitted.get("status_events")).intValue()).isEqualTo(1);
        Map<String, Object> brought = row(waitingForRetry);
        assertThat(brought.get("status")).isEqualTo("retry_wait");
        assertThat(((Timestamp) brought.get("due")).toInstant()).isEqualTo(NOW);
        assertThat(((Timestamp) brought.get("next_attempt_at")).toInstant()).isEqualTo(NOW);

        assertThat(row(stableWaiting).get("status")).isEqualTo("provider_pending");
        assertThat(((Timestamp) row(stableRetry).get("due")).toInstant()).isEqualTo(NOW.plusSeconds(300));
        assertThat(row(finished).get("status")).isEqualTo("succeeded");
        for (UUID job : List.of(waitingOnTask, waitingForRetry, stableWaiting, stableRetry, finished)) {
            assertThat(((Number) row(job).get("attempts")).intValue()).as("every attempt kept").isEqualTo(1);
        }
        Map<String, Object> action = jdbc.queryForMap("SELECT action, gate, operator, requeued FROM canary_actions");
        assertThat(action).containsEntry("action", "stopped").containsEntry("gate", "operator").containsEntry("operator", "alice")
                .containsEntry("requeued", 2);
        assertThat(lifecycle.stop("fakeimg-1-candidate@000000000c", "operator", "again", "bob")).as("stopped once").isEmpty();
        // A stopped candidate's outputs stay held: its open jobs carry the candidate's role on their rows.
        for (UUID job : List.of(waitingOnTask, waitingForRetry)) {
            assertThat(jdbc.queryForObject("SELECT revision_role FROM jobs WHERE job_id = ?", String.class, job)).isEqualTo("candidate");
        }
        io.jobgate.job.JobRows rows = new io.jobgate.job.JobRows(jdbc);
        assertThat(rows.waiting(stableWaiting).orElseThrow().role()).as("the stable revision's")
                .isEqualTo(io.jobgate.job.RevisionRole.STABLE);
        assertThat(jdbc.queryForObject("SELECT revision_role FROM jobs WHERE job_id = ?", String.class, finished)).as("final: untouched")
                .isNull();
    }

    @Test
    void aCandidatesSuccessReadAfterItsJobMovedOnChangesNothing() {
        UUID moved = job("provider_pending", "fakeimg-1@0000000002", null);
        jdbc.update("UPDATE jobs SET attempts = 2 WHERE job_id = ?", moved); // its attempt 2 waits on the stable task now
        assertThat(candidateAttempts.requeue(moved, 1, io.jobgate.job.JobStatus.PROVIDER_PENDING, "candidate_output",
                "{\"output_key\": \"q\"}", null, null, NOW, 0))
                .as("stale evidence of attempt 1").isFalse();
        assertThat(row(moved).get("status")).isEqualTo("provider_pending");
        assertThat(jdbc.queryForObject("SELECT held_output IS NULL FROM attempts WHERE job_id = ? AND attempt = 1", Boolean.class, moved))
                .isTrue();

        UUID current = job("provider_pending", CANDIDATE, null);
        assertThat(candidateAttempts.requeue(current, 1, io.jobgate.job.JobStatus.PROVIDER_PENDING, "candidate_output",
                "{\"output_key\": \"q\"}", null, null, NOW, 0)).isTrue();
        assertThat(row(current).get("status")).isEqualTo("retry_wait");
        assertThat(jdbc.queryForObject("SELECT outcome FROM attempts WHERE job_id = ? AND attempt = 1", String.class, current))
                .isEqualTo("candidate_output");
    }

    /**
     * The role of an open job's attempt is read from its row (what its evidence means: held or the job's), and a
     * promotion or a restart of its canary rewrites it there, for open jobs only; a row written before the column
     * existed reads as its revision's role now.
     */
    @Test
    void aPromotionOrARestartChangesTheRoleOnTheRowsOfItsOpenJobs() {
        String revision = "fakeimg-1-candidate@00000000d1";
        jdbc.update("""
                INSERT INTO canaries (revision, provider, revisions, status, judged_from, changed_by, changed_at, created_at)
                VALUES ('fakeimg-1-candidate@000000000d', 'fakeimg', ?, 'running', now(), 'drop-in', now(), now() + interval '1 hour')""",
                (Object) new String[] {revision});
        UUID waiting = job("provider_pending", revision, null);
        UUID done = job("succeeded", revision, null);
        io.jobgate.job.JobRows rows = new io.jobgate.job.JobRows(jdbc);
        assertThat(rows.waiting(waiting).orElseThrow().role()).as("no role written yet: its revision's")
                .isEqualTo(io.jobgate.job.RevisionRole.CANDIDATE);

        lifecycle.promote("fakeimg", "alice", "looks right");
        assertThat(rows.waiting(waiting).orElseThrow().role()).isEqualTo(io.jobgate.job.RevisionRole.STABLE);
        assertThat(jdbc.queryForObject("SELECT revision_role FROM jobs WHERE job_id = ?", String.class, waiting)).isEqualTo("stable");
        assertThat(jdbc.queryForObject("SELECT revision_role FROM jobs WHERE job_id = ?", String.class, done)).as("final: untouched")
                .isNull();

        lifecycle.restart("fakeimg", "alice", "once more");
        assertThat(rows.waiting(waiting).orElseThrow().role()).isEqualTo(io.jobgate.job.RevisionRole.CANDIDATE);
        assertThat(jdbc.queryForObject("SELECT revision_role FROM jobs WHERE job_id = ?", String.class, waiting)).isEqualTo("candidate");
    }
}
