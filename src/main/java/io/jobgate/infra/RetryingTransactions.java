package io.jobgate.infra;

import java.time.Duration;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Transactions that run again when PostgreSQL aborts them for a deadlock or a serialization
 * failure, or when the database was lost under them (its primary died and a replica is being
 * promoted, docs/operating.md "Failover"): the whole transaction was rolled back, so running it
 * again is safe, and an outcome (a provider's answer, a finalize) is not lost to a lock cycle or a
 * failover. Only the outermost transaction retries; a nested call joins it and lets the failure
 * travel up to it. Callbacks must therefore touch nothing but the database.
 *
 * <p>A commit cut by the lost connection is in doubt: it may have been applied (and, with a
 * synchronous replica, kept). Running it again is still right, because every write it makes is
 * guarded by the state it read: the second run finds the first one's effect and changes nothing.
 */
public final class RetryingTransactions extends TransactionTemplate {

    private static final Logger LOG = LoggerFactory.getLogger(RetryingTransactions.class);

    private static final Duration FIRST_PAUSE = Duration.ofMillis(100);
    private static final Duration LONGEST_PAUSE = Duration.ofSeconds(2);

    private final int maxRuns;
    private final Duration failoverWait;

    /** No waiting for a lost database: lock failures only (tests of those). */
    public RetryingTransactions(DataSource dataSource, int maxRuns) {
        this(dataSource, maxRuns, Duration.ZERO);
    }

    /**
     * @param maxRuns      runs in all when PostgreSQL breaks a lock cycle or a serialization conflict
     * @param failoverWait how long to keep trying while the database is unreachable (the failover's
     *                     length: a promotion and the pool's new connections)
     */
    public RetryingTransactions(DataSource dataSource, int maxRuns, Duration failoverWait) {
        super(new DataSourceTransactionManager(dataSource));
        if (maxRuns < 1) {
            throw new IllegalArgumentException("maxRuns must be at least 1");
        }
        this.maxRuns = maxRuns;
        this.failoverWait = failoverWait;
    }

    @Override
    public <T> T execute(TransactionCallback<T> action) throws TransactionException {
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            return super.execute(action);
        }
        long giveUpAt = System.nanoTime() + failoverWait.toNanos();
        Duration pause = FIRST_PAUSE;
        for (int run = 1; ; run++) {
            try {
                return super.execute(action);
            } catch (PessimisticLockingFailureException e) {
                if (run >= maxRuns) {
                    throw e;
                }
                LOG.warn("transaction rolled back by PostgreSQL ({}), running it again ({} of {})",
                        e.getMostSpecificCause().getMessage().lines().findFirst().orElse("lock failure"), run + 1, maxRuns);
            } catch (RuntimeException e) {
                if (!io.jobgate.common.DatabaseFailures.lost(e) || System.nanoTime() + pause.toNanos() > giveUpAt) {
                    throw e;
                }
                LOG.warn("database unreachable ({}), running the transaction again in {} ms",
                        String.valueOf(NestedExceptionUtils.getMostSpecificCause(e).getMessage()).lines().findFirst().orElse("connection lost"), pause.toMillis());
                try {
                    Thread.sleep(pause.toMillis()); // the failover's pace, not a condition to wait on
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
                pause = pause.multipliedBy(2).compareTo(LONGEST_PAUSE) > 0 ? LONGEST_PAUSE : pause.multipliedBy(2);
            }
        }
    }
}
