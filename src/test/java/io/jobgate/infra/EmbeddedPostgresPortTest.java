package io.jobgate.infra;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.zonky.test.db.postgres.util.LinuxUtils;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded server's port: the configured one, else the one it had last time while that is free,
 * else a free one; kept across restarts, also after a crash left the old server running, and never
 * lost to another listener that takes it between the choice and the bind.
 */
class EmbeddedPostgresPortTest {

    private static final EmbeddedPostgresServer.Durability THROWAWAY = EmbeddedPostgresServer.Durability.THROWAWAY;

    /** One data directory for the starts below (initdb and the binaries once); no server runs between tests. */
    @TempDir
    static Path shared;

    static Path baseDir;

    /** The server's own pg_ctl (zonky unpacks the binaries once per JVM, maybe under another test's directory). */
    static Path pgCtl;

    @BeforeAll
    static void initialise() throws Exception {
        baseDir = shared.resolve("postgres");
        EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY);
        try {
            long pid = Long.parseLong(Files.readAllLines(baseDir.resolve("pgdata/postmaster.pid")).get(0).trim());
            pgCtl = Path.of(ProcessHandle.of(pid).orElseThrow().info().command().orElseThrow()).resolveSibling("pg_ctl");
        } finally {
            server.stop();
        }
    }

    @Test
    void aConfiguredPortWinsAndIsNotHeld(@TempDir Path dir) throws Exception {
        EmbeddedPostgresServer.ChosenPort port = EmbeddedPostgresServer.choose(dir, 54999, Set.of());
        assertThat(port.number()).isEqualTo(54999);
        assertThat(port.held()).isNull();
        assertThat(dir.resolve("port")).doesNotExist();
    }

    @Test
    void theChosenPortIsHeldUntilReleased(@TempDir Path dir) throws Exception {
        EmbeddedPostgresServer.ChosenPort port = EmbeddedPostgresServer.choose(dir, 0, Set.of());
        assertThat(free(port.number())).isFalse();
        port.release();
        assertThat(free(port.number())).isTrue();
    }

    @Test
    void anUnreadablePortFileIsReplaced(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("port"), "not a port\n");
        EmbeddedPostgresServer.ChosenPort port = EmbeddedPostgresServer.choose(dir, 0, Set.of());
        port.release();
        assertThat(port.number()).isPositive();
    }

    @Test
    void aRestartListensOnThePortItHadLastTime() throws Exception {
        int kept = keptPort();
        EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY);
        try {
            assertThat(server.port()).isEqualTo(kept);
            assertThat(select1(server.jdbcUrl())).isEqualTo(1);
        } finally {
            server.stop();
        }
    }

    /**
     * zonky returns as soon as a connection succeeds, while its {@code pg_ctl start} still polls; stopped in that gap,
     * that pg_ctl wrote "could not start server" late, into the next start's part of the log, which failed it. A start
     * returns only once its pg_ctl said "server started", so a stop at once and a start at once both hold.
     */
    @Test
    void aStartReturnsOnlyOnceItsPgCtlSaidItStartedSoAnImmediateStopAndStartHold() throws Exception {
        Path log = baseDir.resolve(EmbeddedPostgresServer.LOG_FILE);
        long first = Files.size(log);
        for (int i = 0; i < 3; i++) {
            long from = Files.size(log);
            EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY);
            String written = since(log, from);
            server.stop();
            assertThat(written).as("the start's part of the log when it returned").contains("server started");
        }
        EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY);
        try {
            assertThat(select1(server.jdbcUrl())).isEqualTo(1);
        } finally {
            server.stop();
        }
        assertThat(since(log, first)).doesNotContain("could not start server");
    }

    private static String since(Path log, long from) throws Exception {
        byte[] all = Files.readAllBytes(log);
        return new String(all, (int) from, all.length - (int) from, java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * A gateway killed with SIGKILL leaves its PostgreSQL running, holding the kept port: the next start
     * stops it first and listens on that same port again (an operator's psql line keeps working), instead
     * of taking a fresh port that another part, starting beside it, may be given too.
     */
    @Test
    void aRestartAfterACrashTakesBackThePortTheOrphanedServerHeld() throws Exception {
        int kept = keptPort();
        Process orphan = orphanedPostmaster(kept);
        assertThat(orphan.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(orphan.exitValue()).as("pg_ctl start of the orphan").isZero();
        assertThat(free(kept)).as("the orphan holds the kept port").isFalse();

        EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY);
        try {
            assertThat(server.port()).isEqualTo(kept);
            assertThat(select1(server.jdbcUrl())).isEqualTo(1);
            assertThat(Files.readString(baseDir.resolve("port")).trim()).isEqualTo(Integer.toString(kept));
        } finally {
            server.stop();
        }
    }

    /** Another listener takes the chosen port between the choice and PostgreSQL's bind: another port is chosen. */
    @Test
    void aChosenPortTakenBeforeTheServerBindsItIsReplaced() throws Exception {
        List<ServerSocket> squatters = new ArrayList<>();
        List<Integer> chosen = new ArrayList<>();
        try {
            EmbeddedPostgresServer server = EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY, Map.of(), port -> {
                chosen.add(port);
                if (chosen.size() == 1) {
                    squatters.add(squat(port));
                }
            });
            try {
                assertThat(chosen).hasSize(2);
                assertThat(server.port()).isEqualTo(chosen.get(1)).isNotEqualTo(chosen.get(0));
                assertThat(select1(server.jdbcUrl())).isEqualTo(1);
                assertThat(Files.readString(baseDir.resolve("port")).trim()).isEqualTo(Integer.toString(server.port()));
            } finally {
                server.stop();
            }
        } finally {
            for (ServerSocket squatter : squatters) {
                squatter.close();
            }
        }
    }

    /** A configured port is the operator's: taken, the start fails at once, saying which port and who holds it. */
    @Test
    void aConfiguredPortInUseFailsInOneLineNamingItsHolder() throws Exception {
        try (ServerSocket squatter = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            int port = squatter.getLocalPort();
            assertThatThrownBy(() -> EmbeddedPostgresServer.start(baseDir, port, THROWAWAY))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("The embedded PostgreSQL cannot listen on 127.0.0.1:" + port
                            + " (jobgate.db.embedded-port): it is in use by pid " + ProcessHandle.current().pid()
                            + " (java, this gateway); set another port or 0 (the one it had last time while free, else a free one)");
        }
        // Nothing was left holding the directory: the next start takes it.
        EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY).stop();
    }

    /** A postmaster that exits on a bad setting ends the start with PostgreSQL's own reason. */
    @Test
    void aServerThatCannotStartSaysWhyAtOnce() throws Exception {
        assertThatThrownBy(() -> EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY, Map.of("shared_buffers", "lots")))
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining("did not start on port")
                .hasMessageContaining("shared_buffers")
                .hasMessageNotContaining("\n");
        EmbeddedPostgresServer.start(baseDir, 0, THROWAWAY).stop();
    }

    private static int keptPort() throws Exception {
        return Integer.parseInt(Files.readString(baseDir.resolve("port")).trim());
    }

    /** pg_ctl start as a gateway's embedded start runs it, from a process that then goes away. */
    private static Process orphanedPostmaster(int port) throws Exception {
        List<String> command = new ArrayList<>();
        if (LinuxUtils.isUnshareAvailable()) {
            command.addAll(List.of("unshare", "-U"));
        }
        command.addAll(List.of(pgCtl.toString(), "-D", baseDir.resolve("pgdata").toString(), "-l",
                baseDir.resolve("orphan.log").toString(), "-o", "-p " + port + " -c listen_addresses=127.0.0.1", "-w", "start"));
        return new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(baseDir.resolve("orphan-pg_ctl.log").toFile()).start();
    }

    private static ServerSocket squat(int port) {
        try {
            return new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            return true;
        } catch (java.io.IOException taken) {
            return false;
        }
    }

    private static int select1(String url) throws Exception {
        try (Connection c = DriverManager.getConnection(url); ResultSet rs = c.createStatement().executeQuery("SELECT 1")) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
