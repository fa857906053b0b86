package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.tenant.Tenant;
import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@code GET /v1/usage?from=&to=}: the caller's usage and cost by provider and kind, from the ledger
 * (units metered at admission, debits, refunds) and the providers' own billing reports stored with
 * the attempts — one line per provider, kind and unit, never blended and never estimated.
 */
public final class UsageApi {

    static final Duration DEFAULT_RANGE = Duration.ofDays(30);
    static final Duration MAX_RANGE = Duration.ofDays(366);

    private final JdbcTemplate jdbc;
    private final Clock clock;

    public UsageApi(JdbcTemplate jdbc, Clock clock) {
        this.jdbc = jdbc;
        this.clock = clock;
    }

    public void get(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        Instant to = instant(exchange.getIn().getHeader("to", String.class), "to", clock.instant());
        Instant from = instant(exchange.getIn().getHeader("from", String.class), "from", to.minus(DEFAULT_RANGE));
        if (!from.isBefore(to)) {
            throw invalid("from", "'from' must be before 'to'.");
        }
        if (Duration.between(from, to).compareTo(MAX_RANGE) > 0) {
            throw invalid("from", "A usage report spans at most 366 days.");
        }
        List<Map<String, Object>> lines = jdbc.query("""
                SELECT j.provider, j.kind, l.unit,
                       count(*) FILTER (WHERE l.entry_type = 'debit') AS jobs,
                       coalesce(sum(l.units), 0) AS units,
                       -coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'debit'), 0) AS debited_micros,
                       coalesce(sum(l.amount_micros) FILTER (WHERE l.entry_type = 'refund'), 0) AS refunded_micros
                  FROM ledger l JOIN jobs j ON j.job_id = l.job_id
                 WHERE l.tenant_id = ? AND l.entry_type IN ('debit', 'refund') AND l.created_at >= ? AND l.created_at < ?
                 GROUP BY j.provider, j.kind, l.unit ORDER BY j.provider, j.kind, l.unit""", (rs, i) -> {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("provider", rs.getString("provider"));
            line.put("kind", rs.getString("kind"));
            line.put("unit", rs.getString("unit"));
            line.put("jobs", rs.getLong("jobs"));
            line.put("units", plain(rs.getBigDecimal("units")));
            long debited = rs.getLong("debited_micros");
            long refunded = rs.getLong("refunded_micros");
            line.put("debited_micros", debited);
            line.put("refunded_micros", refunded);
            line.put("cost_micros", debited - refunded);
            return line;
        }, tenant.id(), Timestamp.from(from), Timestamp.from(to));
        List<Map<String, Object>> billed = jdbc.query("""
                SELECT a.adapter AS provider, j.kind, a.billed_unit AS unit, count(*) AS attempts, sum(a.billed_units) AS units
                  FROM attempts a JOIN jobs j ON j.job_id = a.job_id
                 WHERE j.tenant_id = ? AND a.billed_units IS NOT NULL AND a.started_at >= ? AND a.started_at < ?
                 GROUP BY a.adapter, j.kind, a.billed_unit ORDER BY 1, 2, 3""", (rs, i) -> {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("provider", rs.getString("provider"));
            line.put("kind", rs.getString("kind"));
            line.put("unit", rs.getString("unit"));
            line.put("attempts", rs.getLong("attempts"));
            line.put("units", plain(rs.getBigDecimal("units")));
            return line;
        }, tenant.id(), Timestamp.from(from), Timestamp.from(to));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("tenant_id", tenant.id());
        body.put("from", from.toString());
        body.put("to", to.toString());
        body.put("lines", lines);
        body.put("provider_billing", billed);
        HttpReply.json(exchange, 200, body, Map.of());
    }

    private static ApiProblem invalid(String field, String detail) {
        return ApiProblem.of(400, "invalid_parameter", detail).with("field", field);
    }

    private static String plain(BigDecimal value) {
        return value == null ? null : value.stripTrailingZeros().toPlainString();
    }

    /** An RFC 3339 instant or a date (its start, UTC). */
    static Instant instant(String value, String field, Instant absent) {
        if (value == null || value.isBlank()) {
            return absent;
        }
        try {
            return value.length() == 10 ? LocalDate.parse(value).atStartOfDay(ZoneOffset.UTC).toInstant() : Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw invalid(field, "'" + field + "' must be a date (2026-11-01) or an instant (2026-11-01T00:00:00Z).");
        }
    }
}
