package io.jobgate.common;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Set;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.CannotCreateTransactionException;

/**
 * What kind of database failure ended some work, where running it again is the answer: the database
 * gone ({@link #lost}), or a lock cycle PostgreSQL broke ({@link #lockCycle}).
 */
public final class DatabaseFailures {

    /** Connection exceptions are SQL state class 08; these are a server shutting down or starting up. */
    private static final Set<String> LOST_SERVER_STATES = Set.of("57P01", "57P02", "57P03");

    private static final String HIKARI_CLOSED = "Connection is closed";

    private DatabaseFailures() {
    }

    /**
     * The database gone (a connection lost or refused, a server shutting down or still starting: a primary
     * that died and a replica being promoted), not the work's own fault. Such work is right to run again
     * once the database is back (docs/operating.md, "Failover").
     */
    public static boolean lost(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof CannotCreateTransactionException || t instanceof DataAccessResourceFailureException
                    || t instanceof SQLTransientConnectionException) {
                return true;
            }
            if (t instanceof SQLException sql && sql.getSQLState() != null
                    && (sql.getSQLState().startsWith("08") || LOST_SERVER_STATES.contains(sql.getSQLState()))) {
                return true;
            }
            // HikariCP's answer (no SQL state) on a connection it already closed as broken, to work still holding it.
            if (t instanceof SQLException sql && sql.getSQLState() == null && HIKARI_CLOSED.equals(sql.getMessage())) {
                return true;
            }
        }
        return false;
    }

    /**
     * A deadlock (40P01) or serialization failure (40001): PostgreSQL rolled the transaction back whole,
     * so it may run again.
     */
    public static boolean lockCycle(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof org.springframework.dao.PessimisticLockingFailureException) {
                return true;
            }
            if (t instanceof SQLException sql && ("40P01".equals(sql.getSQLState()) || "40001".equals(sql.getSQLState()))) {
                return true;
            }
        }
        return false;
    }
}
