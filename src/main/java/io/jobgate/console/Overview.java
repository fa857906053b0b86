package io.jobgate.console;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

import io.jobgate.canary.CanaryViews;
import io.jobgate.pool.PoolViews;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The console's overview (docs/console.md): per tenant, its open jobs by status, its oldest job waiting to run and its
 * refusals; per provider, its calls in flight and its gate; per pool, its members' state and calls in flight; finished jobs and p95 accept to final per minute
 * over the last hour. Read at most once per {@link #FRESH} for every viewer together: the page's refreshes never make a
 * query per viewer on the hot tables. The canary candidates are read at each call ({@link #canaries}).
 */
public final class Overview {

    /** How long one reading serves every viewer. */
    static final Duration FRESH = Duration.ofSeconds(5);

    private final JdbcTemplate jdbc;
    private final ProviderCatalog providers;
    private final CanaryViews canaries;
    private final PoolViews pools;
    private final Supplier<Map<String, Long>> refusals;
    private final Clock clock;
    private Map<String, Object> last;
    private Instant readAt = Instant.EPOCH;

    public Overview(JdbcTemplate jdbc, ProviderCatalog providers, CanaryViews canaries, PoolViews pools,
                    Supplier<Map<String, Long>> refusals, Clock clock) {
        this.jdbc = jdbc;
        this.providers = providers;
        this.canaries = canaries;
        this.pools = pools;
        this.refusals = refusals;
        this.clock = clock;
    }

    /** The overview, read again if the last reading is older than {@link #FRESH}. */
    public synchronized Map<String, Object> now() {
        Instant at = clock.instant();
        if (last == null || at.isAfter(readAt.plus(FRESH))) {
            last = read(at);
            readAt = at;
        }
        return last;
    }

    private Map<String, Object> read(Instant at) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("read_at", at.toString());
        o.put("tenants", tenants(at));
        Map<String, Long> inFlight = inFlight();
        o.put("providers", providers(inFlight));
        // A pool's calls in flight: its members' (a member's calls are its own whichever pool placed them).
        o.put("pools", pools.list().stream().map(p -> Map.of("name", p.name(), "kind", p.kind(),
                "in_flight", p.members().stream().mapToLong(m -> inFlight.getOrDefault(m.provider(), 0L)).sum(),
                "members", p.members().stream().map(m -> Map.of("provider", m.provider(), "state", m.state(),
                        "in_flight", inFlight.getOrDefault(m.provider(), 0L))).toList())).toList());
        o.put("last_hour", lastHour(at));
        return o;
    }

    /** Open jobs by status per tenant (the open-jobs index only), its oldest job due to run, its refusals here. */
    private List<Map<String, Object>> tenants(Instant at) {
        Map<String, Map<String, Object>> byTenant = new TreeMap<>();
        jdbc.query("SELECT tenant_id FROM tenants", rs -> {
            tenant(byTenant, rs.getString("tenant_id"));
        });
        jdbc.query("SELECT tenant_id, status, count(*) AS jobs FROM jobs WHERE finalized_at IS NULL GROUP BY 1, 2", rs -> {
            tenant(byTenant, rs.getString("tenant_id")).merge("open", rs.getLong("jobs"), (a, b) -> (Long) a + (Long) b);
            tenant(byTenant, rs.getString("tenant_id")).put(rs.getString("status"), rs.getLong("jobs"));
        });
        jdbc.query("SELECT tenant_id, min(created_at) AS oldest FROM jobs WHERE finalized_at IS NULL"
                + " AND status IN ('queued', 'retry_wait') AND (next_attempt_at IS NULL OR next_attempt_at <= now()) GROUP BY 1", rs -> {
                    long seconds = Math.max(0, Duration.between(rs.getTimestamp("oldest").toInstant(), at).toSeconds());
                    tenant(byTenant, rs.getString("tenant_id")).put("oldest_waiting_seconds", seconds);
                });
        refusals.get().forEach((tenant, count) -> {
            if (!tenant.isEmpty()) {
                tenant(byTenant, tenant).put("refusals", count);
            }
        });
        return new ArrayList<>(byTenant.values());
    }

    private static Map<String, Object> tenant(Map<String, Map<String, Object>> byTenant, String tenant) {
        return byTenant.computeIfAbsent(tenant, t -> {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("tenant", t);
            v.put("open", 0L);
            return v;
        });
    }

    /** Each provider's calls in flight: its slots taken. */
    private Map<String, Long> inFlight() {
        Map<String, Long> inFlight = new TreeMap<>();
        jdbc.query("SELECT provider, count(*) AS taken FROM provider_slots WHERE lease_token IS NOT NULL GROUP BY 1",
                rs -> { inFlight.put(rs.getString("provider"), rs.getLong("taken")); });
        return inFlight;
    }

    /** Each provider's calls in flight (as {@link #inFlight} read them) and its gate: open, or closed until when and why. */
    private List<Map<String, Object>> providers(Map<String, Long> inFlight) {
        Map<String, Map<String, Object>> gates = new TreeMap<>();
        jdbc.query("SELECT provider, closed_until, closed_reason FROM provider_gates WHERE closed_until > now()", rs -> {
            gates.put(rs.getString("provider"), Map.of("closed_until", rs.getTimestamp("closed_until").toInstant().toString(),
                    "closed_reason", String.valueOf(rs.getString("closed_reason"))));
        });
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Provider p : providers.all()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("provider", p.name());
            row.put("kinds", String.join(", ", p.kinds()));
            row.put("in_flight", inFlight.getOrDefault(p.name(), 0L));
            row.put("max_concurrency", p.maxConcurrency());
            row.put("gate", gates.get(p.name()));
            rows.add(row);
        }
        return rows;
    }

    /**
     * The canary candidates, read at each call (a handful of rows, never the hot tables): an operator's stop or promote
     * shows at once.
     */
    public List<Map<String, Object>> canaries() {
        return canaries.list().stream().map(Overview::canary).toList();
    }

    private static Map<String, Object> canary(CanaryViews.Canary c) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("provider", c.provider());
        v.put("revision", c.revision());
        v.put("status", c.status());
        v.put("running", "running".equals(c.status()));
        v.put("gate", c.gate());
        v.put("reason", c.reason());
        v.put("changed_by", c.changedBy());
        v.put("share_percent", c.sharePercent());
        return v;
    }

    /** Per minute over the last hour: jobs that succeeded, and p95 of accept to final in seconds (the succeeded jobs' index). */
    private List<Map<String, Object>> lastHour(Instant at) {
        return jdbc.query("""
                SELECT date_trunc('minute', finalized_at) AS minute, count(*) AS jobs,
                       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - created_at)) AS p95
                  FROM jobs WHERE status = 'succeeded' AND finalized_at >= ? GROUP BY 1 ORDER BY 1""", (rs, i) -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("minute", rs.getTimestamp("minute").toInstant().toString());
                    m.put("jobs", rs.getLong("jobs"));
                    m.put("p95_seconds", rs.getDouble("p95"));
                    return m;
                }, java.sql.Timestamp.from(at.minus(Duration.ofHours(1))));
    }
}
