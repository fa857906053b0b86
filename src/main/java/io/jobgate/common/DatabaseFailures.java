package io.jobgate.common;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Set;

import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.CannotCreateTransactionException;

/**
 * Whether a failure is the database gone (a connection lost or refused, a server shutting down or
 * still starting: a primary that died and a replica being promoted), not the work's own fault. Such
 * work is right to run again once the database is back (docs/operating.md, "Failover").
 */
public final class DatabaseLost {

    /** Connection exceptions are SQL state class 08; these are a server shutting down or starting up. */
    private static final Set<String> LOST_SERVER_STATES = Set.of("57P01", "57P02", "57P03");

    private static final String HIKARI_CLOSED = "Connection is closed";

    private DatabaseLost() {
    }

    public static boolean is(Throwable failure) {
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
}
