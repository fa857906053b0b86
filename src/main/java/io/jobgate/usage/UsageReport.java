package io.jobgate.usage;

import java.math.BigDecimal;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A tenant's usage over {@code [from, to)}: the whole UTC days inside the range from the day rows
 * plus the pending tail not rolled up yet, the partial days at its edges from the raw rows (through
 * indexes by tenant and time). Each part is one statement, so a roll-up committing meanwhile is
 * seen either as pending or as rolled up, never both.
 */
public final class UsageReport {

    private final JdbcTemplate jdbc;

    /** "Now" is the caller's: see {@link #lines}'s {@code asOf}. */
    public UsageReport(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * The whole days inside [from, to); an empty span (start = end = to) when there is none. A range
     * that ends now or later holds all of today that exists, so today counts as a whole day (read from
     * its rollup row and the pending tail, not from the raw rows).
     */
    record Days(Instant start, Instant end) {
        static Days within(Instant from, Instant to, Instant now) {
            Instant start = from.truncatedTo(ChronoUnit.DAYS).equals(from) ? from : from.truncatedTo(ChronoUnit.DAYS).plus(1, ChronoUnit.DAYS);
            Instant end = to.truncatedTo(ChronoUnit.DAYS);
            Instant tomorrow = now.truncatedTo(ChronoUnit.DAYS).plus(1, ChronoUnit.DAYS);
            if (!to.isBefore(now) && end.isBefore(tomorrow)) {
                end = tomorrow;
            }
            return start.isBefore(end) ? new Days(start, end) : new Days(to, to);
        }

        Date firstDay() {
            return Date.valueOf(LocalDate.ofInstant(start, ZoneOffset.UTC));
        }

        Date endDay() {
            return Date.valueOf(LocalDate.ofInstant(end, ZoneOffset.UTC));
        }
    }

    /** Every tenant known to the gateway (operator reports across tenants). */
    public List<String> tenants() {
        return jdbc.queryForList("SELECT tenant_id FROM tenants ORDER BY tenant_id", String.class);
    }

    /** Metered at admission, per provider, kind and unit: jobs, units, debited, refunded, cost (micro-units). */
    /** The tenant's balance now (micro-units; the ledger's sum, kept by its trigger). */
    public long balanceMicros(String tenant) {
        Long balance = jdbc.query("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = ?",
                rs -> rs.next() ? rs.getLong(1) : null, tenant);
        return balance == null ? 0 : balance;
    }

    /**
     * @param asOf the instant the caller took as "now" ({@code to} of a report that ends now is this
     *             same instant): such a report reads today from the rollups, not today's raw rows
     */
    public List<Map<String, Object>> lines(String tenant, Instant from, Instant to, Instant asOf) {
        Days days = Days.within(from, to, asOf);
        return jdbc.query("""
                SELECT provider, kind, nullif(unit, '') AS unit, sum(jobs) AS jobs, sum(units) AS units,
                       sum(debited) AS debited_micros, sum(refunded) AS refunded_micros
                  FROM (SELECT provider, kind, unit, jobs, units, debited_micros AS debited, refunded_micros AS refunded
                          FROM usage_daily WHERE tenant_id = ? AND day >= ? AND day < ?
                        UNION ALL
                        SELECT j.provider, j.kind, coalesce(l.unit, ''), CASE WHEN l.entry_type = 'debit' AND l.redrive = 0 THEN 1 ELSE 0 END,
                               coalesce(l.units, 0), CASE WHEN l.entry_type = 'debit' THEN -l.amount_micros ELSE 0 END,
                               CASE WHEN l.entry_type = 'refund' THEN l.amount_micros ELSE 0 END
                          FROM ledger l JOIN jobs j ON j.job_id = l.job_id
                         WHERE l.tenant_id = ? AND l.entry_type IN ('debit', 'refund')
                           AND ((l.created_at >= ? AND l.created_at < ?) OR (l.created_at >= ? AND l.created_at < ?))
                        UNION ALL
                        SELECT j.provider, j.kind, coalesce(l.unit, ''), CASE WHEN l.entry_type = 'debit' AND l.redrive = 0 THEN 1 ELSE 0 END,
                               coalesce(l.units, 0), CASE WHEN l.entry_type = 'debit' THEN -l.amount_micros ELSE 0 END,
                               CASE WHEN l.entry_type = 'refund' THEN l.amount_micros ELSE 0 END
                          FROM usage_pending p JOIN ledger l ON l.entry_id = p.entry_id JOIN jobs j ON j.job_id = l.job_id
                         WHERE l.tenant_id = ? AND l.created_at >= ? AND l.created_at < ?) parts
                 GROUP BY provider, kind, unit ORDER BY provider, kind, unit""", (rs, i) -> {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("provider", rs.getString("provider"));
            line.put("kind", rs.getString("kind"));
            line.put("unit", rs.getString("unit"));
            line.put("jobs", rs.getLong("jobs"));
            line.put("units", number(rs.getBigDecimal("units")));
            long debited = rs.getLong("debited_micros");
            long refunded = rs.getLong("refunded_micros");
            line.put("debited_micros", debited);
            line.put("refunded_micros", refunded);
            line.put("cost_micros", debited - refunded);
            return line;
        }, tenant, days.firstDay(), days.endDay(),
                tenant, ts(from), ts(days.start()), ts(days.end()), ts(to),
                tenant, ts(days.start()), ts(days.end()));
    }

    /** What the providers billed, per provider, kind and unit: attempts and units, as they reported them. */
    /** @param asOf as for {@link #lines} */
    public List<Map<String, Object>> providerBilling(String tenant, Instant from, Instant to, Instant asOf) {
        Days days = Days.within(from, to, asOf);
        return jdbc.query("""
                SELECT provider, kind, nullif(unit, '') AS unit, sum(attempts) AS attempts, sum(units) AS units
                  FROM (SELECT provider, kind, unit, attempts, units FROM billing_daily WHERE tenant_id = ? AND day >= ? AND day < ?
                        UNION ALL
                        SELECT provider, kind, unit, attempts_delta, units_delta FROM billing_pending
                         WHERE tenant_id = ? AND started_at >= ? AND started_at < ?
                        UNION ALL
                        SELECT a.adapter, j.kind, coalesce(a.billed_unit, ''), 1, a.billed_units
                          FROM attempts a JOIN jobs j ON j.job_id = a.job_id
                         WHERE a.billed_units IS NOT NULL AND a.tenant_id = ?
                           AND ((a.started_at >= ? AND a.started_at < ?) OR (a.started_at >= ? AND a.started_at < ?))) parts
                 GROUP BY provider, kind, unit HAVING sum(attempts) <> 0 OR sum(units) <> 0
                 ORDER BY provider, kind, unit""", (rs, i) -> {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("provider", rs.getString("provider"));
            line.put("kind", rs.getString("kind"));
            line.put("unit", rs.getString("unit"));
            line.put("attempts", rs.getLong("attempts"));
            line.put("units", number(rs.getBigDecimal("units")));
            return line;
        }, tenant, days.firstDay(), days.endDay(),
                tenant, ts(days.start()), ts(days.end()),
                tenant, ts(from), ts(days.start()), ts(days.end()), ts(to));
    }

    private static Timestamp ts(Instant instant) {
        return Timestamp.from(instant);
    }

    /** Units as a JSON number, exact (a BigDecimal without trailing zeros). */
    private static BigDecimal number(BigDecimal value) {
        return value == null ? null : new BigDecimal(value.stripTrailingZeros().toPlainString());
    }
}
