package io.jobgate.admission;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.job.Job;
import io.jobgate.job.JobStatus;
import io.jobgate.provider.Pricing;
import io.jobgate.support.RowLocks;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The admission writer holds the rows it shares with the relay and finalize (the gateway's row, the
 * tenants' account rows) for its statements and the commit's flush only, never while its thread
 * gets back to the JDBC {@code commit()}: by the time that call is made, another session can lock
 * both rows without waiting.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdmissionWriterLocksTest {

    static final String TENANT = "writer-locks";

    HikariDataSource pool;
    JdbcTemplate jdbc;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(4);
        jdbc = new JdbcTemplate(pool);
        TestTenants.withAccount(jdbc, TENANT, 1000, 10, 1_000_000);
    }

    @AfterAll
    void close() {
        // Leave nothing open for test classes after this one: the job ends, its events go, its reservations are given back.
        int open = jdbc.update("UPDATE jobs SET status = 'cancelled', finalized_at = now(), updated_at = now() "
                + "WHERE tenant_id = ? AND finalized_at IS NULL", TENANT);
        jdbc.update("DELETE FROM outbox WHERE tenant_id = ?", TENANT);
        jdbc.update("UPDATE tenant_accounts SET open_jobs = 0, queued_bytes = 0 WHERE tenant_id = ?", TENANT);
        jdbc.update("UPDATE tenant_releases SET open_jobs = 0, queued_bytes = 0 WHERE tenant_id = ?", TENANT);
        jdbc.update("UPDATE gateway_capacity SET in_flight = greatest(in_flight - ?, 0) WHERE id = 1", open);
        pool.close();
    }

    @Test
    void theSharedRowsAreFreeBeforeTheWriterThreadCallsCommit() throws Exception {
        List<String> seenAtCommit = new CopyOnWriteArrayList<>();
        AdmissionWriter writer = new AdmissionWriter(probing(pool, seenAtCommit), new AdmissionLimits(1_000_000, 4, 1800, 5),
                "writer-locks-test");
        writer.start();
        try {
            UUID id = UUID.randomUUID();
            assertThat(writer.admit(candidate(id))).isEqualTo(AdmissionWriter.Result.ADMITTED);

            assertThat(jdbc.queryForObject("SELECT count(*) FROM jobs WHERE job_id = ?", Long.class, id)).isEqualTo(1);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM outbox WHERE job_id = ?", Long.class, id)).isEqualTo(2);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM ledger WHERE job_id = ?", Long.class, id)).isEqualTo(1);
            // Probed from another session when the writer's thread called commit(): nothing was still held.
            assertThat(seenAtCommit).containsExactly("gateway row free", "tenant row free");
        } finally {
            writer.stop();
        }
    }

    /** A pool whose connections, when commit() is called, ask another session to lock the shared rows at once. */
    private static DataSource probing(HikariDataSource pool, List<String> seen) {
        return (DataSource) Proxy.newProxyInstance(AdmissionWriterLocksTest.class.getClassLoader(), new Class<?>[] {DataSource.class},
                (ds, method, args) -> {
                    Object result = invoke(method, pool, args);
                    if (!method.getName().equals("getConnection")) {
                        return result;
                    }
                    Connection real = (Connection) result;
                    return Proxy.newProxyInstance(AdmissionWriterLocksTest.class.getClassLoader(), new Class<?>[] {Connection.class},
                            (c, m, a) -> {
                                if (m.getName().equals("commit")) {
                                    seen.add(RowLocks.probe("SELECT 1 FROM gateway_capacity WHERE id = 1 FOR UPDATE NOWAIT", "gateway row"));
                                    seen.add(RowLocks.probe("SELECT 1 FROM tenant_accounts WHERE tenant_id = '" + TENANT + "' FOR UPDATE NOWAIT",
                                            "tenant row"));
                                }
                                return invoke(m, real, a);
                            });
                });
    }

    private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }


    private static AdmissionWriter.Candidate candidate(UUID id) {
        Instant now = Instant.now().truncatedTo(ChronoUnit.MICROS);
        Job job = new Job(id, TENANT, "key-" + id, "sha", JobStatus.QUEUED, "invoice-clean", 1, "image", "square", "fakeimg",
                null, null, 0, null, 0, 4, 1800, now.plusSeconds(1800), 0, null, null, now, now, null, null, null, null, null, null, null);
        return new AdmissionWriter.Candidate(job, "{}", null, new Pricing.Usage(1, "image"));
    }
}
