package io.jobgate.worker;

import io.jobgate.job.JobLeases;

import java.lang.reflect.Proxy;
import java.sql.SQLTransientConnectionException;
import java.time.Clock;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.job.JobTransitions;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A finish asks {@link JobLeases#mayFinish} with a paid answer in hand: a pool that times out meanwhile (a wave
 * of answers, a failover) is waited out, not thrown out of the finish (which lost the answer: its exchange ended
 * and the job sat in {@code submitting} until its lease ran out).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MayFinishWaitsForTheDatabaseTest {

    HikariDataSource pool;

    @BeforeAll
    void migrate() {
        pool = TestDatabase.migratedPool(2);
    }

    @AfterAll
    void close() {
        pool.close();
    }

    @Test
    void aPoolThatTimesOutTwiceIsWaitedOut() {
        AtomicInteger refusals = new AtomicInteger(2);
        DataSource timingOut = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && refusals.getAndDecrement() > 0) {
                        throw new SQLTransientConnectionException("jobgate-db - Connection is not available, request timed out after 10000ms");
                    }
                    return method.invoke(pool, args);
                });
        JdbcTemplate jdbc = new JdbcTemplate(timingOut);
        RetryingTransactions transactions = new RetryingTransactions(timingOut, 3, Duration.ofSeconds(10));
        JobLeases leases = new JobLeases(jdbc, transactions, new JobTransitions(new NamedParameterJdbcTemplate(jdbc), transactions,
                Clock.systemUTC()), null, null, null);

        assertThat(leases.mayFinish(UUID.randomUUID(), UUID.randomUUID(), 1)).as("asked again once the pool answered").isFalse();
        assertThat(refusals.get()).as("both timeouts met, then the read").isNegative();
    }
}
