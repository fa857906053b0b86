package io.jobgate.infra;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.flywaydb.core.Flyway;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The connection pool and the schema migrations (Flyway, PostgreSQL only). */
public final class Database {

    private static final Logger LOG = LoggerFactory.getLogger(Database.class);

    private Database() {
    }

    public static HikariDataSource pool(String url, String user, String password, int size) {
        return pool("jobgate-db", url, user, password, size, "");
    }

    /** A pool whose sessions carry extra server settings ({@code -c name=value ...}). */
    public static HikariDataSource pool(String name, String url, String user, String password, int size, String options) {
        return new HikariDataSource(config(name, url, user, password, size, options));
    }

    /**
     * The same pool, opening no connection until {@link StartingDataSource#ready}: the beans hold it
     * while the database is still starting.
     */
    public static StartingDataSource startingPool(String name, String url, String user, String password, int size,
                                                  String options) {
        StartingDataSource pool = new StartingDataSource();
        config(name, url, user, password, size, options).copyStateTo(pool);
        return pool;
    }

    private static HikariConfig config(String name, String url, String user, String password, int size, String options) {
        HikariConfig config = new HikariConfig();
        config.setPoolName(name);
        config.setJdbcUrl(url);
        config.setUsername(user);
        config.setPassword(password);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(Math.min(2, size));
        config.setConnectionTimeout(10_000);
        // Statements are prepared once per connection and reused on the hot admission path.
        config.addDataSourceProperty("prepareThreshold", "1");
        config.addDataSourceProperty("ApplicationName", "jobgate");
        // Our statements are short key lookups and batch writes: a generic plan is as good as a
        // custom one and saves planning on every execution (measured: ~0.25 ms per admission batch).
        config.addDataSourceProperty("options", ("-c plan_cache_mode=force_generic_plan " + options).trim());
        return config;
    }

    /**
     * Applies pending migrations; several instances starting at once serialize on Flyway's lock. A
     * restart with the same migrations on an unchanged history skips Flyway ({@link MigrationStamp}).
     */
    public static void migrate(DataSource dataSource) {
        String stamp = MigrationStamp.current(dataSource);
        if (stamp != null && stamp.equals(MigrationStamp.recorded(dataSource))) {
            LOG.info("Database schema at version {}, up to date (the migrations and history Flyway last checked, unchanged)",
                    MigrationStamp.version(dataSource));
            return;
        }
        var result = Flyway.configure()
                .dataSource(dataSource)
                .locations("classpath:" + MigrationStamp.LOCATION)
                // A session lock rather than one held in an open transaction: CREATE INDEX CONCURRENTLY
                // (V23) waits for every open transaction, Flyway's own included, and would never finish.
                .configuration(java.util.Map.of("flyway.postgresql.transactional.lock", "false"))
                .load()
                .migrate();
        MigrationStamp.record(dataSource);
        LOG.info("Database schema at version {} ({} migrations applied now)", MigrationStamp.version(dataSource),
                result.migrationsExecuted);
    }
}
