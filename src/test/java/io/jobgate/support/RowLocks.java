package io.jobgate.support;

import java.sql.Connection;
import java.sql.SQLException;

/** Whether a row is free right now, asked from a session of its own (the lock statement with NOWAIT). */
public final class RowLocks {

    private RowLocks() {
    }

    /** {@code row} + " free", " still locked" (lock_not_available), or " probe failed: …". */
    public static String probe(String lockNowait, String row) {
        try (Connection other = TestDatabase.connect()) {
            other.setAutoCommit(false);
            other.createStatement().execute(lockNowait);
            other.rollback();
            return row + " free";
        } catch (SQLException e) {
            return row + ("55P03".equals(e.getSQLState()) ? " still locked" : " probe failed: " + e.getMessage());
        } catch (Exception e) {
            return row + " probe failed: " + e.getMessage();
        }
    }
}
