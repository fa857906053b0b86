package io.jobgate.infra;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Transactions that run again when PostgreSQL aborts them for a deadlock or a serialization
 * failure: the whole transaction was rolled back, so running it again is safe, and an outcome
 * (a provider's answer, a finalize) is not lost to a lock cycle. Only the outermost transaction
 * retries; a nested call joins it and lets the failure travel up to it. Callbacks must therefore
 * touch nothing but the database.
 */
public final class RetryingTransactions extends TransactionTemplate {

    private static final Logger LOG = LoggerFactory.getLogger(RetryingTransactions.class);

    private final int maxRuns;

    public RetryingTransactions(DataSource dataSource, int maxRuns) {
        super(new DataSourceTransactionManager(dataSource));
        if (maxRuns < 1) {
            throw new IllegalArgumentException("maxRuns must be at least 1");
        }
        this.maxRuns = maxRuns;
    }

    @Override
    public <T> T execute(TransactionCallback<T> action) throws TransactionException {
        if (TransactionSynchronizationManager.isActualTransactionActive()) {
            return super.execute(action);
        }
        for (int run = 1; ; run++) {
            try {
                return super.execute(action);
            } catch (PessimisticLockingFailureException e) {
                if (run >= maxRuns) {
                    throw e;
                }
                LOG.warn("transaction rolled back by PostgreSQL ({}), running it again ({} of {})",
                        e.getMostSpecificCause().getMessage().lines().findFirst().orElse("lock failure"), run + 1, maxRuns);
            }
        }
    }
}
