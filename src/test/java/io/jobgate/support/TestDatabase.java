package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;

/**
 * The PostgreSQL server of the test run, shared by every test class of the JVM: the server named
 * by {@code JOBGATE_TEST_JDBC_URL} (CI: a real PostgreSQL 15), else embedded PostgreSQL binaries
 * started once. With {@code JOBGATE_TEST_REQUIRE_EXTERNAL_DB=true} a missing URL fails the run
 * instead of silently falling back.
 */
public final class TestDatabase {

    private static volatile String url;
    private static String user;
    private static String password;

    private TestDatabase() {
    }

    public static synchronized String url() {
        if (url == null) {
            String external = System.getenv("JOBGATE_TEST_JDBC_URL");
            if (external != null && !external.isBlank()) {
                url = external;
                user = env("JOBGATE_TEST_JDBC_USER", "postgres");
                password = env("JOBGATE_TEST_JDBC_PASSWORD", "");
            } else if (requireExternal()) {
                throw new IllegalStateException("JOBGATE_TEST_REQUIRE_EXTERNAL_DB is set but JOBGATE_TEST_JDBC_URL is not");
            } else {
                try {
                    Path dir = Files.createTempDirectory("jobgate-test-pg");
                    System.setProperty("ot.epg.working-dir", dir.resolve("bin").toString());
                    EmbeddedPostgres pg = EmbeddedPostgres.builder().setDataDirectory(dir.resolve("data"))
                            .setServerConfig("max_connections", "300")
                            // HotPathPlansTest reads what the gateway ran from pg_stat_statements.
                            .setServerConfig("shared_preload_libraries", "pg_stat_statements")
                            .setServerConfig("pg_stat_statements.track", "all")
                            .setServerConfig("track_activity_query_size", "16384").start();
                    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                        try {
                            pg.close();
                        } catch (Exception ignored) {
                            // the JVM is ending
                        }
                    }));
                    url = pg.getJdbcUrl("postgres", "postgres");
                    user = "postgres";
                    password = "";
                } catch (Exception e) {
                    throw new IllegalStateException("cannot start embedded PostgreSQL for tests", e);
                }
            }
        }
        return url;
    }

    /** The database's URL if {@link #url()} has run, else null; never starts one (for {@link HangWatchdog}). */
    static String urlIfStarted() {
        return url;
    }

    public static boolean requireExternal() {
        return Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_EXTERNAL_DB"));
    }

    public static String user() {
        url();
        return user;
    }

    public static String password() {
        url();
        return password;
    }

    public static Connection connect() throws Exception {
        return DriverManager.getConnection(url(), user(), password());
    }

    /** A pool of {@code size} connections to the test database, its schema migrated to the newest version. */
    public static com.zaxxer.hikari.HikariDataSource migratedPool(int size) {
        com.zaxxer.hikari.HikariDataSource pool = io.jobgate.infra.Database.pool(url(), user(), password(), size);
        try {
            io.jobgate.infra.Database.migrate(pool);
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
        return pool;
    }

    /** Empties the job tables and zeroes the reservations, so each test class starts from its config. */
    public static void reset() throws Exception {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            boolean migrated;
            try (var rs = s.executeQuery("SELECT to_regclass('public.jobs') IS NOT NULL")) {
                rs.next();
                migrated = rs.getBoolean(1);
            }
            if (migrated) {
                s.execute("TRUNCATE ledger, outbox, jobs, uploads RESTART IDENTITY CASCADE");
                try (var rs = s.executeQuery("SELECT to_regclass('public.preset_defaults') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("TRUNCATE preset_defaults, preset_default_changes"); // an operator's choices: per test class
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.usage_daily') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        // Rollups of the rows just removed, and their queue (no foreign key ties it to the ledger, V27).
                        s.execute("TRUNCATE usage_daily, billing_daily, billing_pending, usage_pending");
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.canaries') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("TRUNCATE canaries, canary_actions"); // a class's canary candidates (evaluations went with jobs)
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.webhook_endpoints') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("TRUNCATE webhook_delivery_attempts, webhook_deliveries, webhook_endpoints"); // a class's tenant webhooks
                    }
                }
                // A gate a class closed (a 429 in a test) must not hold the next class's jobs.
                s.execute("DELETE FROM provider_gates");
                try (var rs = s.executeQuery("SELECT to_regclass('public.provider_slots') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("DELETE FROM provider_slots"); // calls in flight went with the jobs
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.provider_window') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("DELETE FROM provider_window"); // the providers' dispatched jobs (V30) went with the jobs
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.workers_seen') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("TRUNCATE workers_seen"); // a class's external workers (their tasks went with the jobs, V41)
                    }
                }
                s.execute("UPDATE tenant_accounts SET balance_micros = 0, open_jobs = 0, queued_bytes = 0");
                s.execute("UPDATE gateway_capacity SET in_flight = 0");
                try (var rs = s.executeQuery("SELECT to_regclass('public.dispatch_window') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("UPDATE tenant_accounts SET running_jobs = 0");
                        s.execute("UPDATE dispatch_window SET running = 0");
                    }
                }
                try (var rs = s.executeQuery("SELECT to_regclass('public.tenant_releases') IS NOT NULL")) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        s.execute("UPDATE tenant_releases SET open_jobs = 0, queued_bytes = 0, running_jobs = 0"); // V24
                    }
                }
            }
        }
    }

    private static String env(String name, String defaultValue) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? defaultValue : value;
    }
}
