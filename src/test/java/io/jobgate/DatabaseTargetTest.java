package io.jobgate;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Guards CI against a silent fall-back: when CI asks for an external PostgreSQL, the suite really
 * talks to it, and it is the major version CI installed.
 */
class DatabaseTargetTest {

    @Test
    void theSuiteRunsOnTheServerCiAskedFor() throws Exception {
        String expectedMajor = System.getenv("JOBGATE_TEST_EXPECT_PG_MAJOR");
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SHOW server_version_num")) {
            rs.next();
            int major = rs.getInt(1) / 10000;
            if (TestDatabase.requireExternal()) {
                assertThat(TestDatabase.url()).isEqualTo(System.getenv("JOBGATE_TEST_JDBC_URL"));
            }
            if (expectedMajor != null && !expectedMajor.isBlank()) {
                assertThat(major).isEqualTo(Integer.parseInt(expectedMajor));
            } else {
                assertThat(major).isGreaterThanOrEqualTo(14);
            }
        }
    }
}
