package io.jobgate.bench;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;

/**
 * The reference: pgbench running the admission's three inserts (job, outbox event, ledger debit)
 * in one transaction, on copies of the tables (same columns, constraints and indexes; no triggers
 * or foreign keys) in a scratch schema of the same server.
 */
final class PgBench {

    private static final Pattern URL = Pattern.compile("jdbc:postgresql://([^:/?]+)(?::(\\d+))?/([^?]+).*");
    private static final Pattern TPS = Pattern.compile("tps = ([0-9.]+) \\(without initial connection time\\)");
    private static final String SCHEMA = "jobgate_pgbench";

    private final DataSource dataSource;
    private final String binary;
    private final String host;
    private final String port;
    private final String database;
    private final String user;
    private final String password;
    private final String version;
    private Path script;

    private PgBench(DataSource dataSource, String binary, String host, String port, String database, String user,
                    String password, String version) {
        this.dataSource = dataSource;
        this.binary = binary;
        this.host = host;
        this.port = port;
        this.database = database;
        this.user = user;
        this.password = password;
        this.version = version;
    }

    static PgBench locate(DataSource ds) throws Exception {
        HikariDataSource hikari = (HikariDataSource) ds;
        Matcher m = URL.matcher(hikari.getJdbcUrl());
        if (!m.matches()) {
            throw new IllegalStateException("cannot read host and database from " + hikari.getJdbcUrl());
        }
        String version;
        try (Connection c = ds.getConnection(); Statement s = c.createStatement();
             var rs = s.executeQuery("SHOW server_version")) {
            rs.next();
            version = rs.getString(1);
        }
        return new PgBench(ds, findBinary(), m.group(1), m.group(2) == null ? "5432" : m.group(2), m.group(3),
                hikari.getUsername(), hikari.getPassword(), version);
    }

    /** CPU ticks of the server's processes so far, when it runs on this machine; else null. */
    Long serverCpuTicks() {
        try (java.sql.Connection c = dataSource.getConnection(); java.sql.Statement s = c.createStatement()) {
            return DrainBench.postgresCpuTicks(s);
        } catch (java.sql.SQLException e) {
            return null;
        }
    }

    String serverDescription() {
        return "PostgreSQL " + version + " at " + host + ":" + port + (binary == null ? " (pgbench not found)" : "");
    }

    /** Transactions per second at {@code clients}, or null without a pgbench binary. */
    Double run(int clients, int seconds) throws Exception {
        if (binary == null) {
            return null;
        }
        if (script == null) {
            prepare();
        }
        List<String> cmd = new ArrayList<>(List.of(binary, "-n", "-M", "prepared", "-c", Integer.toString(clients),
                "-j", Integer.toString(Math.min(clients, Runtime.getRuntime().availableProcessors())),
                "-T", Integer.toString(seconds), "-f", script.toString(), "-h", host, "-p", port, "-U", user, database));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (password != null && !password.isEmpty()) {
            pb.environment().put("PGPASSWORD", password);
        }
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor();
        Matcher m = TPS.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("pgbench failed:\n" + out);
        }
        return Double.parseDouble(m.group(1));
    }

    private void prepare() throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
            s.execute("CREATE SCHEMA " + SCHEMA);
            for (String table : List.of("jobs", "outbox", "ledger")) {
                s.execute("CREATE TABLE " + SCHEMA + "." + table + " (LIKE public." + table + " INCLUDING ALL)");
            }
        }
        String id = "lpad(to_hex(:k::bigint), 32, '0')::uuid";
        script = Files.createTempFile("jobgate-pgbench", ".sql");
        Files.writeString(script, """
                \\set k random(1, 9000000000000000000)
                BEGIN;
                INSERT INTO %1$s.jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version, kind, aspect_class, provider, inputs, source_bytes, cost_micros, max_attempts, max_lifetime_seconds, expires_at) VALUES (%2$s, 'bench', 'pgbench-' || :k::bigint, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'queued', 'invoice-clean', 1, 'image', 'portrait', 'simulator', '{"supplier_name": "Bench GmbH", "invoice_id": "B-1", "currency": "EUR", "line_items": [{"description": "Load", "quantity": 1, "unit_price": 10}]}', 0, 40000, 4, 1800, now() + interval '30 minutes');
                INSERT INTO %1$s.outbox (job_id, tenant_id, event_type) VALUES (%2$s, 'bench', 'dispatch');
                INSERT INTO %1$s.ledger (tenant_id, job_id, entry_type, amount_micros) VALUES ('bench', %2$s, 'debit', -40000);
                COMMIT;
                """.formatted(SCHEMA, id));
    }

    void cleanUp() throws Exception {
        if (script != null) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA IF EXISTS " + SCHEMA + " CASCADE");
            }
            Files.deleteIfExists(script);
        }
    }

    private static String findBinary() {
        List<String> candidates = new ArrayList<>();
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            candidates.add(dir + "/pgbench");
        }
        File[] versions = new File("/usr/lib/postgresql").listFiles();
        if (versions != null) {
            for (File v : versions) {
                candidates.add(v.getPath() + "/bin/pgbench");
            }
        }
        return candidates.stream().filter(p -> new File(p).canExecute()).findFirst().orElse(null);
    }
}
