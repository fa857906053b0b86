package io.jobgate.ops;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import javax.sql.DataSource;

import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * Readiness of the gateway's one source of truth: DOWN when PostgreSQL does not answer, so
 * /observe/health/ready tells a load balancer to stop sending jobs here. Not a liveness check: a
 * restart of this process would not bring the database back.
 */
public final class DatabaseHealthCheck extends BackgroundHealthCheck {

    private final DataSource dataSource;

    public DatabaseHealthCheck(DataSource dataSource) {
        super("jobgate", "database");
        this.dataSource = dataSource;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void probe(HealthCheckResultBuilder builder) {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.setQueryTimeout(5);
            try (ResultSet rs = s.executeQuery("SELECT 1")) {
                rs.next();
            }
            builder.up();
        } catch (Exception e) {
            builder.message("PostgreSQL does not answer: " + e.getMessage()).error(e).down();
        }
    }
}
