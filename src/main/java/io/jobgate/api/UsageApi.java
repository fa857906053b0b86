package io.jobgate.api;

import io.jobgate.common.ApiProblem;
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
import io.jobgate.usage.UsageReport;
import org.apache.camel.Exchange;

/**
 * {@code GET /v1/usage?from=&to=}: the caller's usage and cost by provider and kind, from the ledger
 * (units metered at admission, debits, refunds) and the providers' own billing reports stored with
 * the attempts — one line per provider, kind and unit, never blended and never estimated; read from
 * the daily rollups ({@link UsageReport}).
 */
public final class UsageApi {

    static final Duration DEFAULT_RANGE = Duration.ofDays(30);
    static final Duration MAX_RANGE = Duration.ofDays(366);

    private final UsageReport report;
    private final Clock clock;

    public UsageApi(UsageReport report, Clock clock) {
        this.report = report;
        this.clock = clock;
    }

    public void get(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        // One "now" for the range and the report: a report that ends now reads today from the rollups
        // (a second reading of the clock, a moment later, made every such report read today's raw rows).
        Instant now = clock.instant();
        Instant to = instant(exchange.getIn().getHeader("to", String.class), "to", now);
        // By default the 30 whole UTC days before today and today so far: whole days are read from the
        // daily rollups, so the default report costs the same however long the history.
        Instant from = instant(exchange.getIn().getHeader("from", String.class), "from",
                to.minus(DEFAULT_RANGE).truncatedTo(java.time.temporal.ChronoUnit.DAYS));
        if (!from.isBefore(to)) {
            throw invalid("from", "'from' must be before 'to'.");
        }
        if (Duration.between(from, to).compareTo(MAX_RANGE) > 0) {
            throw invalid("from", "A usage report spans at most 366 days.");
        }
        List<Map<String, Object>> lines = report.lines(tenant.id(), from, to, now);
        List<Map<String, Object>> billed = report.providerBilling(tenant.id(), from, to, now);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("tenant_id", tenant.id());
        body.put("from", from.toString());
        body.put("to", to.toString());
        // What the tenant can still spend, now (not at 'to'): the figure a 402 budget_exhausted compares with.
        long balance = report.balanceMicros(tenant.id());
        Map<String, Object> balanceView = new LinkedHashMap<>();
        balanceView.put("amount_micros", balance);
        balanceView.put("amount", java.math.BigDecimal.valueOf(balance, 6).stripTrailingZeros().toPlainString());
        body.put("balance", balanceView);
        body.put("lines", lines);
        body.put("provider_billing", billed);
        HttpReply.json(exchange, 200, body, Map.of());
    }

    private static ApiProblem invalid(String field, String detail) {
        return ApiProblem.of(400, "invalid_parameter", detail).with("field", field);
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
