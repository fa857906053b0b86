package io.jobgate.benchpeers;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/**
 * What both peers share: a connection pool on the bench's PostgreSQL whose sessions use a schema of
 * the peer's own (created empty before, dropped after), and the enqueue loop of N jobs from a
 * number of threads.
 */
final class PeerDatabase implements AutoCloseable {

    final HikariDataSource dataSource;
    final String schema;

    private PeerDatabase(HikariDataSource dataSource, String schema) {
        this.dataSource = dataSource;
        this.schema = schema;
    }

    /** A fresh schema {@code schema} (an earlier run's is dropped first) and a pool of {@code size} sessions on it. */
    static PeerDatabase open(Map<String, String> settings, String schema, int size) throws Exception {
        if (!schema.matches("[a-z_][a-z0-9_]*")) {
            throw new IllegalArgumentException("schema name " + schema);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings.get("jdbc-url"));
        // This class loader's driver, by name: DriverManager only lists the drivers it found when the
        // gateway first used it, through the gateway's class loader.
        config.setDriverClassName("org.postgresql.Driver");
        config.setUsername(settings.getOrDefault("user", "postgres"));
        String password = settings.getOrDefault("password", "");
        if (!password.isEmpty()) {
            config.setPassword(password);
        }
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setPoolName("jobgate-peer-" + schema);
        config.setSchema(schema);
        HikariDataSource ds = new HikariDataSource(config);
        try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            s.execute("CREATE SCHEMA " + schema);
        } catch (Exception e) {
            ds.close();
            throw e;
        }
        return new PeerDatabase(ds, schema);
    }

    long count(String sql) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Runs {@code enqueue} for 0..jobs-1 spread over {@code threads} threads; returns the seconds it took. */
    static double enqueue(int jobs, int threads, IntConsumer enqueue) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            long start = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                int first = t;
                done.add(pool.submit(() -> {
                    for (int i = first; i < jobs; i += threads) {
                        enqueue.accept(i);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            return (System.nanoTime() - start) / 1e9;
        } finally {
            pool.shutdownNow();
        }
    }

    /** The version in the name of the jar a class came from: "16.7.1" of db-scheduler-16.7.1.jar. */
    static String version(Class<?> type) {
        String path = type.getProtectionDomain().getCodeSource().getLocation().getPath();
        Matcher m = Pattern.compile("-(\\d[^/]*)\\.jar$").matcher(path);
        return m.find() ? m.group(1) : "?";
    }

    /**
     * {@code settings.warm-up} jobs first, unmeasured (the JIT compiles the peer's code, as the
     * gateway's steps warm up before they measure), then {@code settings.jobs}, measured.
     */
    static Map<String, Object> warmThenMeasure(Map<String, String> settings, Round round) throws Exception {
        int warmUp = Integer.parseInt(settings.getOrDefault("warm-up", "0"));
        if (warmUp > 0) {
            Map<String, String> warm = new HashMap<>(settings);
            warm.put("jobs", Integer.toString(warmUp));
            round.run(warm);
        }
        return round.run(settings);
    }

    interface Round {
        Map<String, Object> run(Map<String, String> settings) throws Exception;
    }

    @Override
    public void close() throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } finally {
            dataSource.close();
        }
    }
}
