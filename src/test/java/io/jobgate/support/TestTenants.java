package io.jobgate.support;

import org.springframework.jdbc.core.JdbcTemplate;

/** Tenants written straight into the database, for tests that run the rules without a gateway. */
public final class TestTenants {

    private TestTenants() {
    }

    /** The tenant row alone (its limits as given; its API key a digest nobody holds), if not there yet. */
    public static void tenant(JdbcTemplate jdbc, String id, long maxOpenJobs, int maxRunningJobs, long maxQueuedBytes) {
        jdbc.update("""
                INSERT INTO tenants (tenant_id, display_name, api_key_sha256, max_open_jobs, max_running_jobs, max_queued_bytes)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""", id, id, id + "-key-digest", maxOpenJobs, maxRunningJobs,
                maxQueuedBytes);
    }

    /** The tenant and its account row (counters, balance; its release rows come with it, V24), as the gateway seeds them. */
    public static void withAccount(JdbcTemplate jdbc, String id, long maxOpenJobs, int maxRunningJobs, long maxQueuedBytes) {
        tenant(jdbc, id, maxOpenJobs, maxRunningJobs, maxQueuedBytes);
        jdbc.update("INSERT INTO tenant_accounts (tenant_id) VALUES (?) ON CONFLICT DO NOTHING", id);
    }
}
