package io.jobgate.infra;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A restart skips Flyway only when nothing changed: the stamp Flyway's table carries must match both
 * the bundled migrations and the schema history; a changed history, an edited or added migration or
 * a stale stamp runs Flyway again.
 */
class MigrationStampTest {

    @Test
    void anUnchangedDatabaseMatchesItsStampAndAChangedHistoryOrStampDoesNot() throws Exception {
        try (HikariDataSource ds = Database.pool(TestDatabase.url(), TestDatabase.user(), TestDatabase.password(), 4)) {
            Database.migrate(ds);
            String stamp = MigrationStamp.current(ds);
            assertThat(stamp).isNotNull().isEqualTo(MigrationStamp.recorded(ds));

            // The history changed behind our back (a repair, another version): the stamp no longer matches.
            try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
                s.execute("UPDATE flyway_schema_history SET description = description || '!' WHERE installed_rank = 1");
                try {
                    assertThat(MigrationStamp.current(ds)).isNotEqualTo(MigrationStamp.recorded(ds));
                } finally {
                    s.execute("UPDATE flyway_schema_history SET description = left(description, -1) WHERE installed_rank = 1");
                }
                assertThat(MigrationStamp.current(ds)).isEqualTo(stamp);

                // A stale stamp: the next start runs Flyway, which finds nothing to do and stamps again.
                s.execute("COMMENT ON TABLE flyway_schema_history IS 'jobgate migrations stale history stale'");
                assertThat(MigrationStamp.current(ds)).isNotEqualTo(MigrationStamp.recorded(ds));
                Database.migrate(ds);
                assertThat(MigrationStamp.recorded(ds)).isEqualTo(stamp);
            }
        }
    }

    @Test
    void theVersionIsTheNewestAppliedMigrationAlsoWhenARestartSkipsFlyway() throws Exception {
        try (HikariDataSource ds = Database.pool(TestDatabase.url(), TestDatabase.user(), TestDatabase.password(), 2)) {
            Database.migrate(ds);
            Database.migrate(ds); // the restart: nothing to apply, Flyway's own result would say null
            String newest;
            try (var files = Files.list(Path.of("src/main/resources", MigrationStamp.LOCATION))) {
                newest = files.map(f -> f.getFileName().toString())
                        .filter(n -> n.matches("V\\d+__.*"))
                        .map(n -> Integer.parseInt(n.substring(1, n.indexOf("__"))))
                        .max(Integer::compare).orElseThrow().toString();
            }
            assertThat(MigrationStamp.version(ds)).isEqualTo(newest);
        }
    }

    @Test
    void theBundledDigestChangesWithAnyMigrationAndNotWithWhereTheyLie(@TempDir Path a, @TempDir Path b) throws Exception {
        Path migrations = Files.createDirectories(a.resolve(MigrationStamp.LOCATION));
        Files.writeString(migrations.resolve("V1__first.sql"), "CREATE TABLE first (id int);");
        String one = digest(a);

        Files.writeString(migrations.resolve("V1__first.sql"), "CREATE TABLE first (id bigint);");
        String edited = digest(a);
        Files.writeString(migrations.resolve("V2__second.sql"), "CREATE TABLE second (id int);");
        String added = digest(a);
        assertThat(edited).isNotEqualTo(one);
        assertThat(added).isNotEqualTo(edited);

        Path elsewhere = Files.createDirectories(b.resolve(MigrationStamp.LOCATION));
        Files.writeString(elsewhere.resolve("V1__first.sql"), "CREATE TABLE first (id bigint);");
        Files.writeString(elsewhere.resolve("V2__second.sql"), "CREATE TABLE second (id int);");
        assertThat(digest(b)).as("the same migrations in another installation").isEqualTo(added);
    }

    private static String digest(Path root) throws Exception {
        try (URLClassLoader loader = new URLClassLoader(new URL[] {root.toUri().toURL()}, null)) {
            return MigrationStamp.bundledDigest(loader);
        }
    }
}
