package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A PostgreSQL primary with one synchronous streaming replica, as a team runs it past one machine
 * (docs/operating.md, "Failover"): the standby is made by {@code pg_basebackup -R} and the primary
 * waits for it on every commit ({@code synchronous_standby_names = '*'}), so what a client saw
 * committed is on both. A test kills the primary with SIGKILL and promotes the standby
 * ({@code pg_ctl promote}); clients reach whichever is primary through a multi-host URL with
 * {@code targetServerType=primary}. Made from the binaries in {@code binDir}; as root, each command
 * runs as the user {@code postgres} (PostgreSQL refuses root), as CI's server does.
 */
public final class ReplicatedPostgres implements AutoCloseable {

    private final Path bin;
    private final Path base;
    private final int primaryPort;
    private final int standbyPort;
    private final boolean asPostgres;

    private ReplicatedPostgres(Path bin, Path base, int primaryPort, int standbyPort) {
        this.bin = bin;
        this.base = base;
        this.primaryPort = primaryPort;
        this.standbyPort = standbyPort;
        this.asPostgres = "root".equals(System.getProperty("user.name"));
    }

    /** Initialises and starts the primary, then clones, starts and waits for the synchronous standby. */
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
        run(asUser(bin.resolve("initdb").toString(), "-D", primaryData().toString(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
                "--locale=C.UTF-8"));
        // Replication connections from loopback (initdb's trust lines allow them) and a standby that must confirm every commit.
        Files.writeString(primaryData().resolve("postgresql.auto.conf"), """
                listen_addresses = '127.0.0.1'
                port = %d
                unix_socket_directories = '%s'
                max_connections = 200
                wal_level = replica
                max_wal_senders = 4
                synchronous_standby_names = '*'
                synchronous_commit = on
                """.formatted(primaryPort, base), java.nio.file.StandardOpenOption.APPEND);
        pgCtl(primaryData(), "start");
        run(asUser(bin.resolve("pg_basebackup").toString(), "-h", "127.0.0.1", "-p", Integer.toString(primaryPort), "-U", "postgres",
                "-D", standbyData().toString(), "-R", "-X", "stream", "--checkpoint=fast"));
        // Its own port, and once promoted no standby to wait for: the primary's synchronous_standby_names came
        // with the copy, and a promoted server that kept it would hold every commit for a standby it does not have.
        Files.writeString(standbyData().resolve("postgresql.auto.conf"), "port = %d%nsynchronous_standby_names = ''%n".formatted(standbyPort),
                java.nio.file.StandardOpenOption.APPEND);
        pgCtl(standbyData(), "start");
        await("the standby streaming synchronously").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100))
                .until(() -> "sync".equals(scalar(primaryPort, "SELECT coalesce(max(sync_state), '') FROM pg_stat_replication")));
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

    /** Promotes the standby and waits until it takes writes; answers how long that took. */
    public Duration promoteStandby() throws Exception {
        long begun = System.nanoTime();
        pgCtl(standbyData(), "promote");
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

    private void pgCtl(Path data, String action) throws Exception {
        run(asUser(bin.resolve("pg_ctl").toString(), "-D", data.toString(), "-l", data.resolveSibling(data.getFileName() + ".log").toString(),
                "-w", "-t", "60", action));
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
