package io.jobgate.infra;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import com.zaxxer.hikari.HikariDataSource;

/**
 * A pool handed to the beans while its database is still starting: the embedded PostgreSQL starts
 * in the background while the gateway is wired and its routes loaded, and the schema is migrated
 * when the context starts. The pool opens no connection until then; a connection asked for earlier
 * waits for that moment instead of failing, so nothing is wrong, only slower, if wiring needs one.
 */
public final class StartingDataSource extends HikariDataSource {

    private final CompletableFuture<Void> ready = new CompletableFuture<>();

    /** The database answers and its schema is current: connections may be opened. */
    public void ready() {
        ready.complete(null);
    }

    /** The database did not start: every waiting and later request fails with this cause. */
    public void failed(Throwable cause) {
        ready.completeExceptionally(cause);
    }

    @Override
    public Connection getConnection() throws SQLException {
        awaitReady();
        return super.getConnection();
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        awaitReady();
        return super.getConnection(username, password);
    }

    private void awaitReady() throws SQLException {
        if (ready.isDone() && !ready.isCompletedExceptionally()) {
            return;
        }
        try {
            ready.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SQLException("interrupted while the database was starting", e);
        } catch (ExecutionException e) {
            throw new SQLException("the database did not start: " + e.getCause(), e.getCause());
        }
    }
}
