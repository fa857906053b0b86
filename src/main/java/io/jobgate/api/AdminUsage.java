package io.jobgate.api;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.common.ApiProblem;
import io.jobgate.provider.Pricing;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.usage.UsageReport;
import org.apache.camel.Exchange;

/**
 * {@code GET /v1/admin/usage?from=&to=}: what each tenant's jobs cost, across tenants, per provider
 * and kind. The cost comes from the provider's own billing data where it reports it (billed units at
 * its price list: {@code basis: provider_billing}); where it does not, from the price-list metering
 * at admission ({@code basis: price_list_estimate}). Beside it, what the tenant was charged (ledger).
 * Read from the same daily rollups as the tenant's {@code /v1/usage}. Each line, tenant and member
 * carries its margin (charged minus cost); {@code members} sums the lines per provider and kind across
 * tenants, with the pools each provider is a member of: a pool job's charge lands on the member that
 * served it (the roll-up waits for its job to end), so a member's margin is what its jobs paid
 * against what it billed.
 */
public final class AdminUsage {

    public static final String BILLED = "provider_billing";
    public static final String ESTIMATE = "price_list_estimate";

    private final UsageReport report;
    private final ProviderCatalog providers;
    private final io.jobgate.pool.PoolCatalog pools;
    private final Clock clock;

    public AdminUsage(UsageReport report, ProviderCatalog providers, io.jobgate.pool.PoolCatalog pools, Clock clock) {
        this.report = report;
        this.providers = providers;
        this.pools = pools;
        this.clock = clock;
    }

    public void get(Exchange exchange) {
        Instant now = clock.instant(); // one "now" for the range and the report (see UsageApi)
        Instant to = UsageApi.instant(exchange.getIn().getHeader("to", String.class), "to", now);
        // The same default range as the tenant's report: whole UTC days, from the start of the day 30 days ago.
        Instant from = UsageApi.instant(exchange.getIn().getHeader("from", String.class), "from",
                to.minus(UsageApi.DEFAULT_RANGE).truncatedTo(java.time.temporal.ChronoUnit.DAYS));
        if (!from.isBefore(to)) {
            throw ApiProblem.of(400, "invalid_parameter", "'from' must be before 'to'.").with("field", "from");
        }
        if (Duration.between(from, to).compareTo(UsageApi.MAX_RANGE) > 0) {
            throw ApiProblem.of(400, "invalid_parameter", "A usage report spans at most 366 days.").with("field", "from");
        }
        List<Map<String, Object>> tenants = new ArrayList<>();
        Map<String, Map<String, Object>> members = new java.util.TreeMap<>();
        for (String tenant : report.tenants()) {
            List<Map<String, Object>> lines = lines(report.lines(tenant, from, to, now), report.providerBilling(tenant, from, to, now));
            if (lines.isEmpty()) {
                continue;
            }
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("tenant_id", tenant);
            t.put("cost_micros", lines.stream().mapToLong(l -> (Long) l.get("cost_micros")).sum());
            t.put("charged_micros", lines.stream().mapToLong(l -> (Long) l.get("charged_micros")).sum());
            t.put("margin_micros", (Long) t.get("charged_micros") - (Long) t.get("cost_micros"));
            t.put("estimated", lines.stream().anyMatch(l -> ESTIMATE.equals(l.get("basis"))));
            t.put("lines", lines);
            tenants.add(t);
            lines.forEach(line -> addTo(members, line));
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("from", from.toString());
        body.put("to", to.toString());
        body.put("tenants", tenants);
        body.put("members", new ArrayList<>(members.values()));
        HttpReply.json(exchange, 200, body, Map.of());
    }

    /** One line per provider and kind: its cost on the best basis there is, and what was charged. */
    List<Map<String, Object>> lines(List<Map<String, Object>> metered, List<Map<String, Object>> billed) {
        Map<String, Map<String, Object>> byKey = new java.util.TreeMap<>();
        for (Map<String, Object> m : metered) {
            Map<String, Object> line = byKey.computeIfAbsent(m.get("provider") + "/" + m.get("kind"), k -> line(m));
            line.put("charged_micros", (Long) line.get("charged_micros") + (Long) m.get("cost_micros"));
            line.put("estimate_micros", (Long) line.get("estimate_micros") + estimateMicros(m));
        }
        for (Map<String, Object> b : billed) {
            Map<String, Object> line = byKey.computeIfAbsent(b.get("provider") + "/" + b.get("kind"), k -> line(b));
            Provider provider = providers.find((String) b.get("provider")).orElse(null);
            BigDecimal units = b.get("units") instanceof BigDecimal d ? d : null;
            BigDecimal micros = provider == null ? null : Pricing.billedMicros(provider, (String) b.get("unit"), units);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> reported = (List<Map<String, Object>>) line.computeIfAbsent("provider_billing", k -> new ArrayList<>());
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("unit", b.get("unit"));
            r.put("attempts", b.get("attempts"));
            r.put("units", units);
            r.put("cost_micros", micros == null ? null : micros.setScale(0, RoundingMode.HALF_EVEN).longValueExact());
            reported.add(r);
        }
        List<Map<String, Object>> lines = new ArrayList<>();
        for (Map<String, Object> line : byKey.values()) {
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> reported = (List<Map<String, Object>>) line.get("provider_billing");
            boolean billedAll = reported != null && reported.stream().allMatch(r -> r.get("cost_micros") != null);
            line.put("basis", billedAll ? BILLED : ESTIMATE);
            line.put("cost_micros", billedAll ? reported.stream().mapToLong(r -> (Long) r.get("cost_micros")).sum()
                    : (Long) line.get("estimate_micros"));
            line.put("margin_micros", (Long) line.get("charged_micros") - (Long) line.get("cost_micros"));
            lines.add(line);
        }
        return lines;
    }

    /**
     * The price-list estimate of a metered line: its units at its provider's own list (a pool's member served
     * them, and the tenant paid the pool's price), else what was debited for them (a unit the list does not price).
     */
    private long estimateMicros(Map<String, Object> metered) {
        Provider provider = providers.find((String) metered.get("provider")).orElse(null);
        BigDecimal units = metered.get("units") instanceof BigDecimal d ? d : null;
        BigDecimal micros = provider == null ? null : Pricing.billedMicros(provider, (String) metered.get("unit"), units);
        return micros == null ? (Long) metered.get("debited_micros") : micros.setScale(0, RoundingMode.HALF_EVEN).longValueExact();
    }

    /** A tenant's line added to its provider's and kind's total across tenants. */
    void addTo(Map<String, Map<String, Object>> members, Map<String, Object> line) {
        String provider = (String) line.get("provider");
        Map<String, Object> member = members.computeIfAbsent(provider + "/" + line.get("kind"), k -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("provider", provider);
            m.put("kind", line.get("kind"));
            m.put("pools", pools.all().stream().filter(p -> p.member(provider).isPresent()).map(io.jobgate.pool.Pool::name).toList());
            m.put("charged_micros", 0L);
            m.put("cost_micros", 0L);
            m.put("margin_micros", 0L);
            m.put("estimated", false);
            return m;
        });
        for (String field : List.of("charged_micros", "cost_micros", "margin_micros")) {
            member.put(field, (Long) member.get(field) + (Long) line.get(field));
        }
        member.put("estimated", (Boolean) member.get("estimated") || ESTIMATE.equals(line.get("basis")));
    }

    private static Map<String, Object> line(Map<String, Object> from) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("provider", from.get("provider"));
        line.put("kind", from.get("kind"));
        line.put("charged_micros", 0L);
        line.put("estimate_micros", 0L);
        return line;
    }
}
