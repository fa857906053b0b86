package io.jobgate.infra;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** Two transactions that lock two rows in opposite order on a real PostgreSQL: one is chosen as the deadlock victim. */
class RetryingTransactionsTest {

    final PGSimpleDataSource dataSource = new PGSimpleDataSource();
    JdbcTemplate jdbc;

    @BeforeEach
    void rows() {
        dataSource.setURL(TestDatabase.url());
        dataSource.setUser(TestDatabase.user());
        dataSource.setPassword(TestDatabase.password());
        jdbc = new JdbcTemplate(dataSource);
        jdbc.execute("CREATE TABLE IF NOT EXISTS deadlock_probe (id int PRIMARY KEY, n int NOT NULL)");
        jdbc.execute("TRUNCATE deadlock_probe");
        jdbc.execute("INSERT INTO deadlock_probe VALUES (1, 0), (2, 0)");
    }

    /** Runs two crossing transactions; the first run of each waits until both hold their first row. */
    Throwable[] crossing(RetryingTransactions transactions, AtomicInteger runs) throws Exception {
        CyclicBarrier bothHoldOne = new CyclicBarrier(2);
        CompletableFuture<?>[] sides = new CompletableFuture<?>[2];
        for (int side = 0; side < 2; side++) {
            int first = side + 1;
            int second = 2 - side;
            sides[side] = CompletableFuture.runAsync(() -> transactions.executeWithoutResult(tx -> {
                boolean firstRun = runs.incrementAndGet() <= 2;
                jdbc.update("UPDATE deadlock_probe SET n = n + 1 WHERE id = ?", first);
                if (firstRun) {
                    try {
                        bothHoldOne.await(10, TimeUnit.SECONDS);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }
                jdbc.update("UPDATE deadlock_probe SET n = n + 1 WHERE id = ?", second);
            }));
        }
        Throwable[] failures = new Throwable[2];
        for (int side = 0; side < 2; side++) {
            failures[side] = catchThrowable(sides[side]::join);
        }
        return failures;
    }

    @Test
    void theDeadlockVictimRunsAgainAndBothCommit() throws Exception {
        AtomicInteger runs = new AtomicInteger();

        Throwable[] failures = crossing(new RetryingTransactions(dataSource, 3), runs);

        assertThat(failures).containsOnlyNulls();
        assertThat(runs).hasValue(3);
        assertThat(jdbc.queryForList("SELECT n FROM deadlock_probe ORDER BY id", Integer.class)).containsExactly(2, 2);
    }

    @Test
    void withoutRetriesTheVictimFailsAndLeavesNothingBehind() throws Exception {
        AtomicInteger runs = new AtomicInteger();

        Throwable[] failures = crossing(new RetryingTransactions(dataSource, 1), runs);

        assertThat(runs).hasValue(2);
        assertThat(failures).filteredOn(f -> f != null).singleElement()
                .satisfies(f -> assertThat(f).hasCauseInstanceOf(PessimisticLockingFailureException.class));
        assertThat(jdbc.queryForList("SELECT n FROM deadlock_probe ORDER BY id", Integer.class)).containsExactly(1, 1);
    }

    /**
     * A session PostgreSQL ends under the transaction (its backend terminated, as when a primary dies: the
     * client sees 57P01 and a dead connection): the transaction runs again on a new connection while the
     * failover wait lasts, and what the cut run wrote is not kept.
     */
    @Test
    void aTransactionWhoseSessionWasLostRunsAgainOnANewConnectionWithinTheFailoverWait() {
        AtomicInteger runs = new AtomicInteger();
        RetryingTransactions transactions = new RetryingTransactions(dataSource, 1, java.time.Duration.ofSeconds(10));

        transactions.executeWithoutResult(tx -> {
            jdbc.update("UPDATE deadlock_probe SET n = n + 1 WHERE id = 1");
            if (runs.incrementAndGet() == 1) {
                jdbc.queryForList("SELECT pg_terminate_backend(pg_backend_pid())");
            }
        });

        assertThat(runs).hasValue(2);
        assertThat(jdbc.queryForObject("SELECT n FROM deadlock_probe WHERE id = 1", Integer.class)).isEqualTo(1);
    }

    @Test
    void withoutAFailoverWaitALostSessionFailsTheTransaction() {
        AtomicInteger runs = new AtomicInteger();
        RetryingTransactions transactions = new RetryingTransactions(dataSource, 3);

        Throwable failure = catchThrowable(() -> transactions.executeWithoutResult(tx -> {
            runs.incrementAndGet();
            jdbc.queryForList("SELECT pg_terminate_backend(pg_backend_pid())");
        }));

        assertThat(io.jobgate.common.DatabaseFailures.lost(failure)).as("%s", failure).isTrue();
        assertThat(runs).hasValue(1);
    }
}
