package io.jobgate.pool;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.jobgate.fate.MemberState;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Each pool's members as an operator sees them (docs/operator-api.md, "Pools"): the state placement works with (its
 * gate, its cooldown and probe, an operator's drain), its weight, and the calls it has in flight across instances.
 * Read for {@code GET /v1/admin/pools} and for the {@code jobgate_pool_*} gauges.
 */
public final class PoolViews {

    /**
     * @param state {@code open}, {@code closed} (its gate, until {@code closed_until}), {@code cooling} (until
     *              {@code cooling_until}), {@code probe-open}, {@code probing} or {@code drained}: the first that holds
     *              of drained, its health, its gate
     */
    public record Member(String provider, String state, int weight,
                         @JsonProperty("max_wait_seconds") long maxWaitSeconds,
                         @JsonProperty("closed_until") String closedUntil,
                         @JsonProperty("cooling_until") String coolingUntil,
                         @JsonProperty("probe_job_id") UUID probeJobId,
                         @JsonProperty("failures_in_window") int failures,
                         @JsonProperty("failure_threshold") int failureThreshold,
                         @JsonProperty("failure_window_seconds") long failureWindowSeconds,
                         @JsonProperty("cooldown_seconds") long cooldownSeconds,
                         @JsonProperty("calls_in_flight") long callsInFlight,
                         @JsonProperty("drained_at") String drainedAt,
                         @JsonProperty("drained_by") String drainedBy,
                         @JsonProperty("drained_reason") String drainedReason) {
    }

    public record PoolView(String name, String kind, List<Member> members) {
    }

    private final PoolCatalog pools;
    private final PoolHealth health;
    private final JdbcTemplate jdbc;
    private final Clock clock;

    public PoolViews(PoolCatalog pools, PoolHealth health, JdbcTemplate jdbc, Clock clock) {
        this.pools = pools;
        this.health = health;
        this.jdbc = jdbc;
        this.clock = clock;
    }

    /** Every pool, by name, its members in their declared order. */
    public List<PoolView> list() {
        if (pools.all().isEmpty()) {
            return List.of();
        }
        Instant now = clock.instant();
        Map<String, Map<String, PoolHealth.Row>> rows = health.rows();
        Map<String, Instant> gates = new HashMap<>();
        jdbc.query("SELECT provider, closed_until FROM provider_gates WHERE closed_until > ?",
                rs -> { gates.put(rs.getString(1), rs.getTimestamp(2).toInstant()); }, Timestamp.from(now));
        Map<String, Long> inFlight = new HashMap<>();
        jdbc.query("SELECT provider, count(*) FROM provider_slots WHERE lease_token IS NOT NULL GROUP BY provider",
                rs -> { inFlight.put(rs.getString(1), rs.getLong(2)); });
        return pools.all().stream().map(pool -> new PoolView(pool.name(), pool.kind(), pool.members().stream().map(m -> {
            PoolHealth.Row row = rows.getOrDefault(pool.name(), Map.of()).get(m.provider());
            PoolHealth.State state = row == null ? PoolHealth.State.HEALTHY : PoolHealth.stateOf(row, m, null, now);
            Instant closed = gates.get(m.provider());
            String shown = state.state() != MemberState.HEALTHY ? state.state().wire() : closed != null ? "closed" : "open";
            boolean cooling = row != null && row.coolingUntil() != null;
            return new Member(m.provider(), shown, m.weight(), m.maxWait().toSeconds(), text(closed),
                    cooling ? text(row.coolingUntil()) : null, cooling ? row.probeJobId() : null,
                    row == null || cooling || !row.windowStartedAt().plus(m.failureWindow()).isAfter(now) ? 0 : row.failures(), m.failureThreshold(), m.failureWindow().toSeconds(),
                    m.cooldown().toSeconds(), inFlight.getOrDefault(m.provider(), 0L), row == null ? null : text(row.drainedAt()),
                    row == null ? null : row.drainedBy(), row == null ? null : row.drainedReason());
        }).toList())).toList();
    }

    public PoolView view(String pool) {
        return list().stream().filter(p -> p.name().equals(pool)).findFirst().orElseThrow();
    }

    private static String text(Instant at) {
        return at == null ? null : at.toString();
    }
}
