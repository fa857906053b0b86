package io.jobgate.support;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The API keys tests call the gateway with (the demo tenants of config/tenants.yaml and the test ones of
 * src/test/resources/test-tenants.yaml; only their digests are stored there), and tenants written straight
 * into the database, for tests that run the rules without a gateway.
 */
public final class TestTenants {

    private TestTenants() {
    }

    /** Tenant acme (demo). */
    public static final String ACME = "dev-acme-key";
    /** Tenant globex (demo). */
    public static final String GLOBEX = "dev-globex-key";
    /** The operators' admin key (demo). */
    public static final String ADMIN = "dev-admin-key";
    /** Tenant tiny: two open jobs at most. */
    public static final String TINY = "test-tiny-key";
    /** Tenant broke: credit for one image job. */
    public static final String BROKE = "test-broke-key";
    /** Tenant lowbytes: three kilobytes of queued sources. */
    public static final String LOWBYTES = "test-lowbytes-key";
    /** Tenant capped: five open jobs at most. */
    public static final String CAPPED = "test-capped-key";
    /** Tenant bulk: a noisy tenant with a deep backlog. */
    public static final String BULK = "test-bulk-key";
    /** Tenant duo: two jobs running at most. */
    public static final String DUO = "test-duo-key";

    /** The worker key of pull member gpubox (src/test/resources/workers; docs/workers.md): no tenant's, nor the admin's. */
    public static final String GPUBOX_WORKER = "test-gpubox-worker-key";

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
