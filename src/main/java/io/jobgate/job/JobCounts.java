package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowCallbackHandler;

/** Counts of jobs, for the meters: open jobs per tenant and status, live leases per provider. */
public final class JobCounts {

    /** {@code jobs} open jobs of {@code tenantId} are in {@code status}. */
    public record Open(String tenantId, JobStatus status, long jobs) {
    }

    /** The statuses a lease is held in, as literals (the statement's text as it was, its plans with it). */
    private static final String LEASED = JobStatus.sqlLiterals(java.util.EnumSet.of(JobStatus.RUNNING, JobStatus.SUBMITTING));

    private final JdbcTemplate jdbc;

    public JobCounts(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** The open jobs per tenant and status (pairs without any are not listed). */
    public List<Open> open() {
        return jdbc.query("SELECT tenant_id, status, count(*) FROM jobs WHERE finalized_at IS NULL GROUP BY tenant_id, status",
                (rs, i) -> new Open(rs.getString(1), JobStatus.fromWire(rs.getString(2)).orElseThrow(), rs.getLong(3)));
    }

    /**
     * Live leases per provider: held and not run out at {@code now} (an expired lease waits for the sweeper,
     * nobody works under it). Providers without any are not listed.
     */
    public Map<String, Long> liveLeases(Instant now) {
        Map<String, Long> leases = new HashMap<>();
        jdbc.query("SELECT provider, count(*) FROM jobs"
                        + " WHERE finalized_at IS NULL AND status IN (" + LEASED + ") AND lease_token IS NOT NULL"
                        + " AND lease_expires_at > ? GROUP BY provider",
                (RowCallbackHandler) rs -> leases.put(rs.getString(1), rs.getLong(2)), Timestamp.from(now));
        return leases;
    }
}
