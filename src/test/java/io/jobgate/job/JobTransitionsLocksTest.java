package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.job.JobTransitions.Change;
import io.jobgate.job.JobTransitions.Event;
import io.jobgate.job.JobTransitions.Guard;
import io.jobgate.support.RowLocks;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker's release (a job that ends, a dispatch slot given back) holds none of the rows admission
 * and the relay lock for their counters: not its tenant's {@code tenant_accounts} row (V24: releases go
 * to the tenant's rows of {@code tenant_releases}), nor row 1 of {@code gateway_capacity} and
 * {@code dispatch_window} (V10). Probed from another session while the transition's transaction is still
 * open, right after its last statement: what a worker's transaction holds from there to its commit, and
 * what the relay's claim and admission waited for before. Then, once committed, the counters (the
 * tenant row plus its release rows) say exactly what was given back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JobTransitionsLocksTest {

    static final String TENANT = "release-locks";
    static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.MICROS);
    static final long SOURCE_BYTES = 1234;

    HikariDataSource pool;
    JdbcTemplate jdbc;
    RetryingTransactions transactions;
    JobTransitions transitions;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(4);
        jdbc = new JdbcTemplate(pool);
        transactions = new RetryingTransactions(pool, 1);
        transitions = new JobTransitions(new NamedParameterJdbcTemplate(jdbc), transactions, Clock.fixed(NOW, ZoneOffset.UTC));
        TestTenants.withAccount(jdbc, TENANT, 1000, 1000, 100_000_000);
    }

    @AfterAll
    void close() {
        // Nothing left held for later test classes: the tenant's jobs end, its counters and the shared ones go back.
        jdbc.update("DELETE FROM provider_slots WHERE job_id IN (SELECT job_id FROM jobs WHERE tenant_id = ?)", TENANT);
        jdbc.update("UPDATE jobs SET status = 'cancelled', finalized_at = now(), updated_at = now(), lease_token = NULL, "
                + "lease_owner = NULL, lease_expires_at = NULL, dispatched_at = NULL WHERE tenant_id = ? AND finalized_at IS NULL", TENANT);
        jdbc.update("DELETE FROM outbox WHERE tenant_id = ? AND published_at IS NULL", TENANT);
        Map<String, Object> c = jdbc.queryForMap("SELECT open_jobs, running_jobs FROM tenant_counters WHERE tenant_id = ?", TENANT);
        jdbc.update("UPDATE gateway_capacity SET in_flight = in_flight - ? WHERE id = 1", ((Number) c.get("open_jobs")).longValue());
        jdbc.update("UPDATE dispatch_window SET running = running - ? WHERE id = 1", ((Number) c.get("running_jobs")).longValue());
        jdbc.update("UPDATE tenant_accounts SET open_jobs = 0, queued_bytes = 0, running_jobs = 0 WHERE tenant_id = ?", TENANT);
        jdbc.update("UPDATE tenant_releases SET open_jobs = 0, queued_bytes = 0, running_jobs = 0 WHERE tenant_id = ?", TENANT);
        pool.close();
    }

    /** The releasing transitions of a job that holds a dispatch slot, each from the state a worker meets it in. */
    enum Release {
        /** The hot path: a checked output promoted; the slot, the open job and its bytes go back. */
        SUCCEED(Event.SUCCEED, JobStatus.SUBMITTING, Change.ending(null, null, "{\"ok\": true}", 0), true),
        /** A failure without a refund (a refund's ledger entry updates the balance on the tenant row). */
        FAIL(Event.FAIL, JobStatus.PROVIDER_PENDING, Change.ending("terminal_request", "refused", null, 0), true),
        /** A retry: only the dispatch slot goes back, the job stays open. */
        RETRY(Event.RETRY, JobStatus.RUNNING, Change.retryAt(NOW.plusSeconds(60), 0, "transient"), false);

        final Event event;
        final JobStatus from;
        final Change change;
        final boolean ends;

        Release(Event event, JobStatus from, Change change, boolean ends) {
            this.event = event;
            this.from = from;
            this.change = change;
            this.ends = ends;
        }
    }

    @ParameterizedTest
    @EnumSource(Release.class)
    void aReleaseLeavesTheTenantRowAndTheCounterRowsFreeUntilItsCommit(Release release) {
        UUID token = UUID.randomUUID();
        UUID job = jobHoldingASlot(release.from, token);
        Map<String, Object> before = counters();
        List<String> seen = new ArrayList<>();

        transactions.execute(tx -> {
            assertThat(transitions.apply(job, release.event, release.from == JobStatus.PROVIDER_PENDING ? Guard.anyone()
                    : Guard.lease(token), release.change)).isPresent();
            // Every statement of the transition has run; its transaction is open, as a worker's is until it commits.
            seen.add(RowLocks.probe("SELECT 1 FROM tenant_accounts WHERE tenant_id = '" + TENANT + "' FOR UPDATE NOWAIT", "tenant row"));
            seen.add(RowLocks.probe("SELECT 1 FROM gateway_capacity WHERE id = 1 FOR UPDATE NOWAIT", "gateway row"));
            seen.add(RowLocks.probe("SELECT 1 FROM dispatch_window WHERE id = 1 FOR UPDATE NOWAIT", "window row"));
            return null;
        });

        assertThat(seen).containsExactly("tenant row free", "gateway row free", "window row free");
        Map<String, Object> after = counters();
        int ended = release.ends ? 1 : 0;
        assertThat(after).isEqualTo(Map.of(
                "open_jobs", (long) before.get("open_jobs") - ended,
                "queued_bytes", (long) before.get("queued_bytes") - ended * SOURCE_BYTES,
                "running_jobs", (long) before.get("running_jobs") - 1));
        // The tenant's row kept what was taken; the release is in one of its release rows.
        assertThat(jdbc.queryForObject("SELECT count(*) FROM tenant_releases WHERE tenant_id = ?", Long.class, TENANT))
                .isEqualTo(ReleaseShards.TENANT_RELEASE_SHARDS);
    }

    /** The tenant's counters as every reader but admission's lock and the relay's round reads them. */
    private Map<String, Object> counters() {
        return jdbc.queryForMap("SELECT open_jobs, queued_bytes, running_jobs FROM tenant_counters WHERE tenant_id = ?", TENANT);
    }

    /** A job of the tenant in {@code status}, dispatched (its slot taken) and counted as admission and the relay count it. */
    private UUID jobHoldingASlot(JobStatus status, UUID token) {
        UUID id = UUID.randomUUID();
        io.jobgate.support.JobFactory.on(jdbc).job(TENANT).id(id).key("release-" + id).sourceBytes(SOURCE_BYTES).costMicros(1000)
                .attempts(1).dispatchedAt(NOW).insert();
        // Into the state by the table's own edges (the database refuses any other pair).
        jdbc.update("UPDATE jobs SET status = 'running', lease_token = ?, lease_owner = 'walker', lease_expires_at = ? WHERE job_id = ?",
                token, Timestamp.from(NOW.plus(Duration.ofMinutes(1))), id);
        if (status != JobStatus.RUNNING) {
            jdbc.update("UPDATE jobs SET status = 'submitting' WHERE job_id = ?", id);
        }
        if (status == JobStatus.PROVIDER_PENDING) {
            jdbc.update("UPDATE jobs SET status = 'provider_pending', lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL "
                    + "WHERE job_id = ?", id);
        }
        jdbc.update("UPDATE tenant_accounts SET open_jobs = open_jobs + 1, queued_bytes = queued_bytes + ?, running_jobs = running_jobs + 1 "
                + "WHERE tenant_id = ?", SOURCE_BYTES, TENANT);
        jdbc.update("UPDATE gateway_capacity SET in_flight = in_flight + 1 WHERE id = 1");
        jdbc.update("UPDATE dispatch_window SET running = running + 1 WHERE id = 1");
        return id;
    }

}
