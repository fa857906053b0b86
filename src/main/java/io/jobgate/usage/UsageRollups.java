package io.jobgate.usage;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The roll-up step (route {@code usage-rollups}): moves rows of the pending queues ({@code
 * usage_pending}, {@code billing_pending}, filled by triggers in the writers' own transactions) into
 * the day rows. Each queue is drained by one statement that deletes the rows it adds, so a crash
 * neither skips nor counts a row twice; instances drain side by side (SKIP LOCKED). The batch is
 * chosen once (= ANY (ARRAY(...)), an initplan): as "IN (SELECT ...)" a plan made while the queue
 * looked empty ran the locking subquery again for every row it deleted (seen: 584 rows, 92 ms).
 *
 * <p>A day row is keyed by the job's provider, so an entry is rolled up only once its job's provider
 * is final: a pinned job's at once, a pool job's once the job is finalized (until then a move may still
 * hand it to another member, and the report reads its pending entry with the provider it has now).
 * The charge then lands on the member that served the job, whenever the roll-up ran.
 */
public final class UsageRollups {

    private static final String LEDGER = """
            WITH taken AS (
                DELETE FROM usage_pending p
                 WHERE p.entry_id = ANY (ARRAY(
                       SELECT q.entry_id FROM usage_pending q JOIN ledger l ON l.entry_id = q.entry_id
                              LEFT JOIN jobs j ON j.job_id = l.job_id
                        WHERE j.pool IS NULL OR j.finalized_at IS NOT NULL
                        ORDER BY q.entry_id LIMIT ? FOR UPDATE OF q SKIP LOCKED))
                RETURNING p.entry_id),
            rolled AS (
                INSERT INTO usage_daily AS d (tenant_id, day, provider, kind, unit, jobs, units, debited_micros, refunded_micros)
                SELECT l.tenant_id, (l.created_at AT TIME ZONE 'UTC')::date, j.provider, j.kind, coalesce(l.unit, ''),
                       count(*) FILTER (WHERE l.entry_type = 'debit' AND l.redrive = 0), coalesce(sum(l.units), 0),
                       -coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'debit'), 0),
                       coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'refund'), 0)
                  FROM taken t JOIN ledger l ON l.entry_id = t.entry_id JOIN jobs j ON j.job_id = l.job_id
                 GROUP BY 1, 2, 3, 4, 5
                ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE
                   SET jobs = d.jobs + EXCLUDED.jobs, units = d.units + EXCLUDED.units,
                       debited_micros = d.debited_micros + EXCLUDED.debited_micros,
                       refunded_micros = d.refunded_micros + EXCLUDED.refunded_micros
                RETURNING 1)
            SELECT count(*) FROM taken""";

    private static final String BILLING = """
            WITH taken AS (
                DELETE FROM billing_pending p
                 WHERE p.pending_id = ANY (ARRAY(SELECT pending_id FROM billing_pending ORDER BY pending_id LIMIT ? FOR UPDATE SKIP LOCKED))
                RETURNING p.*),
            rolled AS (
                INSERT INTO billing_daily AS d (tenant_id, day, provider, kind, unit, attempts, units)
                SELECT tenant_id, (started_at AT TIME ZONE 'UTC')::date, provider, kind, unit, sum(attempts_delta), sum(units_delta)
                  FROM taken GROUP BY 1, 2, 3, 4, 5
                ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE
                   SET attempts = d.attempts + EXCLUDED.attempts, units = d.units + EXCLUDED.units
                RETURNING 1)
            SELECT count(*) FROM taken""";

    private final JdbcTemplate jdbc;
    private final int batch;

    public UsageRollups(JdbcTemplate jdbc, int batch) {
        this.jdbc = jdbc;
        this.batch = batch;
    }

    /** One round: at most a batch of each queue; answers how many pending rows were rolled up. */
    public int rollUp() {
        Integer ledger = jdbc.queryForObject(LEDGER, Integer.class, batch);
        Integer billing = jdbc.queryForObject(BILLING, Integer.class, batch);
        return (ledger == null ? 0 : ledger) + (billing == null ? 0 : billing);
    }

    /** Rounds until both queues are empty (a test, or an operator catching up). */
    public int rollUpAll() {
        int total = 0;
        for (int n; (n = rollUp()) > 0; ) {
            total += n;
        }
        return total;
    }
}
