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

    public static EmbeddedPostgresServer start(Path baseDir, int port, Durability durability) throws IOException {
        return start(baseDir, port, durability, java.util.Map.of());
    }

    /** As {@link #start(Path, int, Durability)}, with more server settings (a bench's {@code shared_preload_libraries}). */
    public static EmbeddedPostgresServer start(Path baseDir, int port, Durability durability, java.util.Map<String, String> settings)
            throws IOException {
        Path dataDir = baseDir.resolve("pgdata");
        Path workDir = baseDir.resolve("pgbin");
        Files.createDirectories(dataDir);
        Files.createDirectories(workDir);
        // zonky unpacks its binaries into this folder; keep them beside the data, not in /tmp.
        System.setProperty("ot.epg.working-dir", workDir.toString());
        long started = System.nanoTime();
        // A server left running by a gateway that died (SIGKILL, OOM killer) would make this start
        // wait for a server that can never start on the same directory: stop it first.
        OrphanedPostmaster.stopIfOrphaned(dataDir, Duration.ofSeconds(15));
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                .setDataDirectory(dataDir)
                .setCleanDataDirectory(false)
                .setOverrideWorkingDirectory(workDir.toFile())
                .setPgBinaryResolver(BUNDLED_BINARIES)
                .setRegisterShutdownHook(false) // the Camel context stops it after the routes
                .setPGStartupWait(Duration.ofSeconds(60))
                .setServerConfig("max_connections", "200");
        // zonky always passes -F (fsync off) and sets synchronous_commit=off, settings for tests;
        // a -c given after -F wins, so the durable default turns all three back on.
        String on = durability == Durability.DURABLE ? "on" : "off";
        builder.setServerConfig("fsync", on)
                .setServerConfig("synchronous_commit", on)
                .setServerConfig("full_page_writes", on);
        settings.forEach(builder::setServerConfig);
        if (port > 0) {
            builder.setPort(port);
        }
        EmbeddedPostgres postgres = builder.start();
        // How to reach it, in the line: a newcomer looks for the port here.
        LOG.info("Embedded PostgreSQL ({}) on port {} with data in {} ({} ms); psql -h 127.0.0.1 -p {} -U postgres postgres",
                durability.name().toLowerCase(java.util.Locale.ROOT), postgres.getPort(), dataDir,
                (System.nanoTime() - started) / 1_000_000, postgres.getPort());
        return new EmbeddedPostgresServer(postgres);
    }

    public String jdbcUrl() {
        return jdbcUrl(postgres.getPort());
    }

    /** The URL of the server on {@code port}, known before it started (zonky's form). */
    public static String jdbcUrl(int port) {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    /**
     * The port the server in {@code baseDir} listens on: the configured one, else the one it had last
     * time (kept in {@code baseDir/port}) while it is free, else a free one, kept for next time. Known
     * before the server starts, so the pools are made while it starts; the same on every restart, so
     * an operator's {@code psql} keeps working.
     */
    public static int choosePort(Path baseDir, int configured) throws IOException {
        if (configured > 0) {
            return configured;
        }
        Path file = baseDir.resolve("port");
        if (Files.exists(file)) {
            try {
                int kept = Integer.parseInt(Files.readString(file).trim());
                if (kept > 0 && kept < 65536 && free(kept)) {
                    return kept;
                }
            } catch (NumberFormatException unreadable) {
                LOG.warn("{} does not hold a port number; choosing a new port", file);
            }
        }
        int chosen;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            chosen = socket.getLocalPort();
        }
        Files.createDirectories(baseDir);
        Files.writeString(file, chosen + "\n");
        return chosen;
    }

    private static boolean free(int port) {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    public void stop() throws IOException {
        postgres.close();
    }
}
