package io.jobgate.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

/**
 * A history of finished jobs written straight into the database, for the history benchmark and for
 * the test that checks every statement of the hot path against it (triggers off while seeding; their
 * effects — balances, usage rollups — written directly).
 */
public final class HistorySeed {

    private HistorySeed() {
    }

    /**
     * {@code jobs} finished jobs of {@code tenantIds} (round robin) at {@code provider}, spread over the
     * 90 days before the last hour, each with its attempt and debit, one upload per three jobs, and the
     * published outbox events and webhook receipts of those of the last {@code outboxWindow} (what
     * retention leaves); then VACUUM ANALYZE and a CHECKPOINT.
     */
    public static void seed(DataSource dataSource, List<String> tenantIds, String provider, int jobs, Duration outboxWindow)
            throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            // No triggers while seeding (foreign keys, the balance and usage queues): their effects are
            // written directly below, so the rollups match the ledger as the live path keeps them.
            s.execute("SET LOCAL session_replication_role = replica");
            try (PreparedStatement insert = c.prepareStatement("""
                    INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version,
                                      kind, aspect_class, provider, inputs, cost_micros, max_attempts, max_lifetime_seconds,
                                      expires_at, attempts, created_at, updated_at, finalized_at, adapter_revision, result)
                    SELECT (lpad(to_hex(floor(extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7'
                            || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid,
                           (?::text[])[1 + g % ?], md5('history-' || g)::uuid::text, md5(g::text), 'succeeded', 'invoice-clean', 2,
                           'image', 'square', ?, '{}'::jsonb, 40000, 4, 1800, ts + interval '30 minutes', 1,
                           ts, ts + interval '5 seconds', ts + interval '5 seconds', 'history', '{}'::jsonb
                      FROM generate_series(1, ?) g,
                           LATERAL (SELECT now() - interval '1 hour' - (g::double precision / ?) * interval '90 days' AS ts) t""")) {
                insert.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                insert.setInt(2, tenantIds.size());
                insert.setString(3, provider);
                insert.setInt(4, jobs);
                insert.setInt(5, jobs);
                insert.executeUpdate();
            }
            String where = "WHERE j.adapter_revision = 'history' AND j.tenant_id = ANY (?::text[])";
            String ofHistory = "FROM jobs j " + where;
            List<String> statements = new ArrayList<>(List.of(
                    "INSERT INTO attempts (job_id, tenant_id, attempt, lease_token, worker, adapter, adapter_revision, started_at,"
                            + " ended_at, duration_ms, outcome, http_status, provider_request_id, billed_units, billed_unit)"
                            + " SELECT j.job_id, j.tenant_id, 1, gen_random_uuid(), 'history', j.provider, 'history', j.created_at,"
                            + " j.finalized_at, 5000, 'succeeded', 200, 'req-' || j.idempotency_key, 1, 'image' " + ofHistory,
                    "INSERT INTO ledger (tenant_id, job_id, entry_type, amount_micros, created_at, units, unit)"
                            + " SELECT j.tenant_id, j.job_id, 'debit', -j.cost_micros, j.created_at, 1, 'image' " + ofHistory,
                    "INSERT INTO outbox (job_id, tenant_id, event_type, available_at, published_at, created_at)"
                            + " SELECT j.job_id, j.tenant_id, e.type, j.created_at, j.created_at + interval '1 second', j.created_at"
                            + " FROM jobs j CROSS JOIN (VALUES ('dispatch'), ('status'), ('status')) e(type) " + where
                            + " AND j.created_at > now() - ?::interval",
                    "INSERT INTO webhook_receipts (provider, webhook_id, job_id, outcome, received_at)"
                            + " SELECT j.provider, 'history-' || j.idempotency_key, j.job_id, 'applied', j.finalized_at " + ofHistory
                            + " AND j.created_at > now() - ?::interval",
                    // One upload per three jobs, none named by a job now (the history's sources).
                    // As upload retention leaves them (its default 168 h): older ones expired and purged, so the
                    // figures with history do not include retention catching up on a seeded backlog.
                    "INSERT INTO uploads (upload_id, tenant_id, sha256, bytes, media_type, object_key, created_at, expired_at, purged_at)"
                            + " SELECT gen_random_uuid(), j.tenant_id, encode(sha256(j.idempotency_key::bytea), 'hex'), 1000,"
                            + " 'audio/wav', 'sources/sha256/' || encode(sha256(j.idempotency_key::bytea), 'hex'), j.created_at,"
                            + " CASE WHEN j.created_at < now() - interval '168 hours' THEN j.created_at + interval '168 hours' END,"
                            + " CASE WHEN j.created_at < now() - interval '168 hours' THEN j.created_at + interval '169 hours' END "
                            + ofHistory + " AND abs(hashtext(j.idempotency_key)) % 3 = 0",
                    "INSERT INTO usage_daily AS d (tenant_id, day, provider, kind, unit, jobs, units, debited_micros, refunded_micros)"
                            + " SELECT j.tenant_id, (j.created_at AT TIME ZONE 'UTC')::date, j.provider, j.kind, 'image', count(*),"
                            + " count(*), sum(j.cost_micros), 0 " + ofHistory + " GROUP BY 1, 2, 3, 4"
                            + " ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE SET jobs = d.jobs + EXCLUDED.jobs,"
                            + " units = d.units + EXCLUDED.units, debited_micros = d.debited_micros + EXCLUDED.debited_micros",
                    "INSERT INTO billing_daily AS d (tenant_id, day, provider, kind, unit, attempts, units)"
                            + " SELECT j.tenant_id, (j.created_at AT TIME ZONE 'UTC')::date, j.provider, j.kind, 'image', count(*),"
                            + " count(*) " + ofHistory + " GROUP BY 1, 2, 3, 4"
                            + " ON CONFLICT (tenant_id, day, provider, kind, unit) DO UPDATE SET attempts = d.attempts + EXCLUDED.attempts,"
                            + " units = d.units + EXCLUDED.units"));
            for (String sql : statements) {
                try (PreparedStatement p = c.prepareStatement(sql)) {
                    p.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                    if (sql.contains("?::interval")) { // the events' and receipts' window
                        p.setString(2, outboxWindow.toSeconds() + " seconds");
                    }
                    p.executeUpdate();
                }
            }
            // The balances the ledger trigger would have kept.
            try (PreparedStatement p = c.prepareStatement("UPDATE tenant_accounts a SET balance_micros = a.balance_micros - h.spent "
                    + "FROM (SELECT tenant_id, sum(cost_micros) AS spent FROM jobs WHERE adapter_revision = 'history' "
                    + "AND tenant_id = ANY (?::text[]) GROUP BY tenant_id) h WHERE a.tenant_id = h.tenant_id")) {
                p.setArray(1, c.createArrayOf("text", tenantIds.toArray()));
                p.executeUpdate();
            }
            c.commit();
            c.setAutoCommit(true);
            s.execute("VACUUM ANALYZE");
            // The seed's WAL would otherwise be checkpointed while the figures with history are taken.
            try {
                s.execute("CHECKPOINT");
            } catch (java.sql.SQLException notAllowed) {
                // CHECKPOINT needs a superuser (or pg_checkpoint): the figures then include it.
            }
        }
    }
}
