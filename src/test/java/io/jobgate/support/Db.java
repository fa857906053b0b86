package io.jobgate.support;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.LinkedHashMap;
import java.util.Map;

/** Direct SQL for assertions on what the gateway really wrote. */
public final class Db {

    private Db() {
    }

    public static long count(String sql, Object... args) {
        Object v = single(sql, args).values().iterator().next();
        return ((Number) v).longValue();
    }

    /** Every row of a query, columns by label. */
    public static java.util.List<Map<String, Object>> rows(String sql) {
        java.util.List<Map<String, Object>> out = new java.util.ArrayList<>();
        try (Connection c = TestDatabase.connect(); var s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                Map<String, Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    row.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                }
                out.add(row);
            }
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    public static Map<String, Object> single(String sql, Object... args) {
        try (Connection c = TestDatabase.connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("no row for " + sql);
                }
                Map<String, Object> row = new LinkedHashMap<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    row.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                }
                return row;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Fault injection: until closed, inserts into {@code table} fail for jobs whose idempotency key
     * starts with {@code keyPrefix}, as a crash half way through the transaction would.
     */
    public static Fault failInsertsFor(String table, String keyPrefix) {
        return failInsertsFor(table, keyPrefix, "P0001");
    }

    /** As {@link #failInsertsFor(String, String)}, the failure with SQL state {@code sqlState} (57P03: a server not taking connections). */
    public static Fault failInsertsFor(String table, String keyPrefix, String sqlState) {
        String name = "test_fail_" + table;
        execute("""
                CREATE OR REPLACE FUNCTION %1$s() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF EXISTS (SELECT 1 FROM jobs WHERE job_id = NEW.job_id AND idempotency_key LIKE '%2$s%%') THEN
                    RAISE EXCEPTION 'injected %3$s failure' USING ERRCODE = '%4$s';
                  END IF;
                  RETURN NEW;
                END $$;
                CREATE TRIGGER %1$s BEFORE INSERT ON %3$s FOR EACH ROW EXECUTE FUNCTION %1$s();""".formatted(name, keyPrefix, table, sqlState));
        return () -> execute("DROP TRIGGER " + name + " ON " + table + "; DROP FUNCTION " + name + "();");
    }

    /** An injected fault, removed on close. */
    public interface Fault extends AutoCloseable {
        @Override
        void close();
    }

    public static void execute(String sql) {
        try (Connection c = TestDatabase.connect(); var s = c.createStatement()) {
            s.execute(sql);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** One statement with parameters. */
    public static int update(String sql, Object... args) {
        try (Connection c = TestDatabase.connect(); var s = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                s.setObject(i + 1, args[i]);
            }
            return s.executeUpdate();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
