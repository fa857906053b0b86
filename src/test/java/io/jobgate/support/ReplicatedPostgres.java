package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A PostgreSQL primary with one synchronous streaming replica, made with the steps of docs/operating.md
 * ("PostgreSQL: a synchronous streaming replica"), read from the page and run as written
 * ({@link DocumentedSteps}): the replication settings, a replication role with a password of its own (the
 * replica's {@code pg_hba.conf} line checks it), the gateway's user and database, the replica made by
 * {@code pg_basebackup -R}, {@code synchronous_standby_names} set only once the replica streams, and at the
 * failover {@code pg_ctl promote} with {@code synchronous_standby_names} cleared. What the page leaves to the
 * reader is the test's: {@code initdb} (CI's: trust on loopback), listening on loopback, the socket folder,
 * and a port per server ({@code PGPORT}; the page's two machines both use 5432). Clients reach whichever is
 * primary through a multi-host URL with {@code targetServerType=primary}. Made from the binaries in
 * {@code binDir}; as root, each command runs as the user {@code postgres} (PostgreSQL refuses root), as CI's
 * server does.
 */
public final class ReplicatedPostgres implements AutoCloseable {

    /** The gateway's database and user, as the page makes them. */
    public static final String DATABASE = "jobgate";
    public static final String USER = "jobgate";

    private final Path bin;
    private final Path base;
    private final int primaryPort;
    private final int standbyPort;
    private final boolean asPostgres;
    /** The variables the page has the reader set: the test's own values. */
    private final Map<String, String> variables = new LinkedHashMap<>();

    private ReplicatedPostgres(Path bin, Path base, int primaryPort, int standbyPort) {
        this.bin = bin;
        this.base = base;
        this.primaryPort = primaryPort;
        this.standbyPort = standbyPort;
        this.asPostgres = "root".equals(System.getProperty("user.name"));
        variables.put("REPLICATION_PASSWORD", secret());
        variables.put("DB_PASSWORD", secret());
        variables.put("PRIMARY", "127.0.0.1");
        variables.put("PRIMARY_PORT", Integer.toString(primaryPort));
        variables.put("REPLICA_ADDRESS", "127.0.0.1/32");
    }

    /** Makes and starts the primary, then the replica, and makes it synchronous once it streams: the page's steps 1-3. */
    public static ReplicatedPostgres start(Path binDir) throws Exception {
        // Its own directory under the system's temporary one: a test's own (mode 700, root's under CI) is closed to postgres.
        Path base = Files.createTempDirectory("jobgate-pg-failover");
        ReplicatedPostgres pg = new ReplicatedPostgres(binDir, base, GatewayTestSupport.freePort(), GatewayTestSupport.freePort());
        pg.createAndStart();
        return pg;
    }

    private void createAndStart() throws Exception {
        if (asPostgres) {
            run("chown", "postgres", base.toString());
        }
        // The part the page leaves to the reader: initdb, where to listen. No port here: each server takes its
        // own from PGPORT (the replica's copy of this file would otherwise carry the primary's).
        run(asUser(bin.resolve("initdb").toString(), "-D", primaryData().toString(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                "--locale=C.UTF-8"));
        Files.writeString(primaryData().resolve("postgresql.conf"), """
                listen_addresses = '127.0.0.1'
                unix_socket_directories = '%s'
                max_connections = 200
                """.formatted(base), java.nio.file.StandardOpenOption.APPEND);
        step("pg-primary", primaryData(), primaryPort);
        step("pg-replica", standbyData(), standbyPort);
        await("the replica streaming").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                .until(() -> "streaming".equals(scalar(primaryPort, "SELECT coalesce(max(state), '') FROM pg_stat_replication")));
        step("pg-synchronous", primaryData(), primaryPort);
        await("the replica synchronous").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                .until(() -> "sync".equals(scalar(primaryPort, "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication")));
    }

    /** A documented step, run as written by bash on the server of {@code data}, the page's variables set. */
    private void step(String name, Path data, int port) throws Exception {
        List<String> command = new ArrayList<>(List.of("env", "PATH=" + bin + ":/usr/bin:/bin", "PGDATA=" + data, "PGPORT=" + port,
                "PGHOST=127.0.0.1", "PGUSER=postgres"));
        variables.forEach((k, v) -> command.add(k + "=" + v));
        command.addAll(List.of("bash", "-euc", DocumentedSteps.block(name)));
        run(asUser(command.toArray(String[]::new)));
    }

    private static String secret() {
        byte[] bytes = new byte[24];
        new java.security.SecureRandom().nextBytes(bytes);
        return java.util.HexFormat.of().formatHex(bytes);
    }

    /** The gateway user's password, as the page has the reader make it. */
    public String password() {
        return variables.get("DB_PASSWORD");
    }

    /** Both servers, the primary first; {@code targetServerType=primary} finds the one that takes writes. */
    public String url(String database) {
        return "jdbc:postgresql://127.0.0.1:%d,127.0.0.1:%d/%s?targetServerType=primary".formatted(primaryPort, standbyPort, database);
    }

    /** The primary alone (before any failover): for the test's own setup and checks. */
    public String primaryUrl(String database) {
        return "jdbc:postgresql://127.0.0.1:%d/%s".formatted(primaryPort, database);
    }

    /** SIGKILL to the primary's postmaster and every backend: a machine that died, nothing flushed that was not. */
    public void killPrimary() throws Exception {
        long pid = Long.parseLong(Files.readAllLines(primaryData().resolve("postmaster.pid")).get(0).trim());
        ProcessHandle postmaster = ProcessHandle.of(pid).orElseThrow();
        List<ProcessHandle> all = new ArrayList<>(postmaster.children().toList());
        all.add(0, postmaster);
        all.forEach(ProcessHandle::destroyForcibly);
        for (ProcessHandle p : all) {
            p.onExit().get(30, TimeUnit.SECONDS);
        }
    }

    /** Promotes the replica as the page says (step 5) and waits until it takes writes; answers how long that took. */
    public Duration promoteStandby() throws Exception {
        long begun = System.nanoTime();
        step("pg-promote", standbyData(), standbyPort);
        await("the standby promoted").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50))
                .until(() -> "f".equals(scalar(standbyPort, "SELECT pg_is_in_recovery()")));
        return Duration.ofNanos(System.nanoTime() - begun);
    }

    private Path primaryData() {
        return base.resolve("primary");
    }

    private Path standbyData() {
        return base.resolve("standby");
    }

    private String[] asUser(String... command) {
        if (!asPostgres) {
            return command;
        }
        String[] wrapped = new String[command.length + 4];
        wrapped[0] = "runuser";
        wrapped[1] = "-u";
        wrapped[2] = "postgres";
        wrapped[3] = "--";
        System.arraycopy(command, 0, wrapped, 4, command.length);
        return wrapped;
    }

    private void run(String... command) throws Exception {
        Path out = Files.createTempFile(base, "cmd", ".log");
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("%s finished", String.join(" ", command)).isTrue();
        assertThat(p.exitValue()).as("%s: %s", String.join(" ", command), Files.readString(out)).isZero();
    }

    private static String scalar(int port, String sql) {
        try (Connection c = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/postgres", "postgres", "");
             Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        } catch (Exception e) {
            return null; // not up yet
        }
    }

    @Override
    public void close() throws Exception {
        for (Path data : List.of(standbyData(), primaryData())) {
            if (Files.exists(data.resolve("postmaster.pid"))) {
                try {
                    run(asUser(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-m", "immediate", "-w", "stop"));
                } catch (AssertionError | Exception ignored) {
                    // a server already gone (the killed primary leaves its pid file behind)
                }
            }
        }
    }
}
