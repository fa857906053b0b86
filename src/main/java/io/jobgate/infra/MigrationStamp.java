package io.jobgate.infra;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets a restart skip Flyway when nothing changed: Flyway's start, scan of the class path and
 * validation cost about a second on two cores, on every start, to find the schema up to date.
 * After Flyway migrated or validated, the stamp records which migrations it ran with (a digest
 * of their names and bytes) and the schema history it left (a digest of its rows), as the comment
 * of Flyway's own table. A start whose bundled migrations and whose history both match the stamp
 * has nothing to migrate and nothing Flyway would refuse; anything else (a new or edited
 * migration, a history changed by another version, a repair, no stamp) runs Flyway as before.
 */
final class MigrationStamp {

    private static final Logger LOG = LoggerFactory.getLogger(MigrationStamp.class);
    static final String LOCATION = "db/migration";
    private static final String HISTORY = "flyway_schema_history";
    /** One digest of the history rows Flyway validates against the migrations. */
    private static final String HISTORY_DIGEST = "SELECT md5(coalesce(string_agg(concat_ws(':', installed_rank, version, "
            + "description, type, script, checksum, success), ',' ORDER BY installed_rank), '')) FROM " + HISTORY;

    private MigrationStamp() {
    }

    /** The stamp for the migrations on the class path and the database's history now; null if it cannot be told. */
    static String current(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT to_regclass('" + HISTORY + "') IS NOT NULL")) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    return null; // an empty database: Flyway creates everything
                }
            }
            try (ResultSet rs = s.executeQuery(HISTORY_DIGEST)) {
                rs.next();
                return "jobgate migrations " + bundledDigest() + " history " + rs.getString(1);
            }
        } catch (SQLException | IOException e) {
            LOG.debug("No migration stamp: {}", e.toString());
            return null;
        }
    }

    /** The stamp Flyway's table carries; null when none. */
    static String recorded(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT obj_description(to_regclass('" + HISTORY + "'), 'pg_class')")) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            LOG.debug("No migration stamp recorded: {}", e.toString());
            return null;
        }
    }

    /**
     * The schema's version: the highest successful migration in Flyway's history. Flyway's own
     * result names none when it had nothing to apply, so a restart would read "version null".
     */
    static String version(DataSource dataSource) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT version FROM " + HISTORY
                     + " WHERE success AND version IS NOT NULL ORDER BY installed_rank DESC LIMIT 1")) {
            return rs.next() ? rs.getString(1) : "none";
        } catch (SQLException e) {
            LOG.debug("No schema version: {}", e.toString());
            return "unknown";
        }
    }

    /** Records the stamp after Flyway ran; a database that refuses (not the table's owner) just keeps running Flyway. */
    static void record(DataSource dataSource) {
        String stamp = current(dataSource);
        if (stamp == null) {
            return;
        }
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("COMMENT ON TABLE " + HISTORY + " IS '" + stamp.replace("'", "''") + "'");
        } catch (SQLException e) {
            LOG.info("Could not stamp the schema history ({}); every start runs Flyway", e.getMessage());
        }
    }

    /** SHA-256 over the names and bytes of every migration on the class path (a jar or a folder), in name order. */
    static String bundledDigest() throws IOException {
        return bundledDigest(MigrationStamp.class.getClassLoader());
    }

    static String bundledDigest(ClassLoader classLoader) throws IOException {
        Map<String, byte[]> migrations = new TreeMap<>();
        for (URL location : Collections.list(classLoader.getResources(LOCATION))) {
            URLConnection connection = location.openConnection();
            if (connection instanceof JarURLConnection jar) {
                jar.setUseCaches(false);
                try (JarFile file = jar.getJarFile()) {
                    for (JarEntry entry : Collections.list(file.entries())) {
                        if (!entry.isDirectory() && entry.getName().startsWith(LOCATION + "/")) {
                            try (InputStream in = file.getInputStream(entry)) {
                                migrations.put(location + "!" + entry.getName(), in.readAllBytes());
                            }
                        }
                    }
                }
            } else if ("file".equals(location.getProtocol())) {
                Path folder = Path.of(java.net.URI.create(location.toString()));
                try (Stream<Path> files = Files.walk(folder)) {
                    for (Path f : files.filter(Files::isRegularFile).toList()) {
                        migrations.put(location + "!" + folder.relativize(f), Files.readAllBytes(f));
                    }
                }
            } else {
                throw new IOException("cannot list migrations at " + location);
            }
        }
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            for (var m : migrations.entrySet()) {
                // The name without where the jar or folder is: moving the installation changes nothing.
                sha.update(m.getKey().substring(m.getKey().indexOf('!') + 1).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                sha.update((byte) 0);
                sha.update(m.getValue());
                sha.update((byte) 0);
            }
            return HexFormat.of().formatHex(sha.digest());
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
