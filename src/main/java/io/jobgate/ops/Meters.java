package io.jobgate.ops;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * jobgate's own series beside Camel's, in Prometheus text at {@code /observe/metrics}. Counters
 * count on the instance that did the work; gauges that need a query are refreshed on a schedule
 * (routes/metrics.camel.yaml) from PostgreSQL, so every instance reports the same truth. Labels are
 * ids (tenant, provider, status, category), never user text.
 */
public final class Meters {

    private final org.apache.camel.CamelContext context;
    private final JdbcTemplate jdbc;
    private final Clock clock;
    private volatile MeterRegistry registry;
    private volatile MultiGauge queueJobs;
    private volatile MultiGauge oldestAge;

    public Meters(org.apache.camel.CamelContext context, JdbcTemplate jdbc, Clock clock) {
        this.context = context;
        this.jdbc = jdbc;
        this.clock = clock;
    }

    /** Camel's own registry (camel-micrometer binds it while the context starts): one endpoint for all series. */
    private MeterRegistry registry() {
        MeterRegistry r = registry;
        if (r == null) {
            java.util.Set<MeterRegistry> found = context.getRegistry().findByType(MeterRegistry.class);
            r = found.stream().filter(m -> m.getClass().getSimpleName().startsWith("Prometheus")).findFirst()
                    .orElse(found.stream().findFirst().orElse(null));
            if (r == null) {
                r = new io.micrometer.core.instrument.simple.SimpleMeterRegistry(); // metrics off: count into nothing served
            }
            registry = r;
        }
        return r;
    }

    /** A job reached a terminal state ({@code category}: the failure's, null for a success). */
    public void jobFinished(String tenant, String status, String category) {
        counter("jobgate_jobs_finished_total", "terminal jobs by status and category",
                "tenant", tenant, "status", status, "category", category == null ? "" : category).increment();
    }

    /** An attempt ended: {@code succeeded}, {@code pending}, or its error category. */
    public void attempt(String provider, String tenant, String outcome) {
        counter("jobgate_attempts_total", "attempt outcomes", "provider", provider, "tenant", tenant, "outcome", outcome).increment();
    }

    public void rateLimited(String provider, String tenant) {
        counter("jobgate_provider_rate_limited_total", "429 answers of providers", "provider", provider, "tenant", tenant).increment();
    }

    public void admissionRefused(String tenant, String code) {
        counter("jobgate_admission_refusals_total", "refused admissions by problem code",
                "tenant", tenant == null ? "" : tenant, "code", code).increment();
    }

    private Counter counter(String name, String description, String... tags) {
        return Counter.builder(name).description(description).tags(tags).register(registry());
    }

    /** Route step (on a schedule): the gauges that need a query. */
    public void refresh(Exchange exchange) {
        if (queueJobs == null) {
            queueJobs = MultiGauge.builder("jobgate_queue_jobs").description("open jobs per tenant and status").register(registry());
            oldestAge = MultiGauge.builder("jobgate_queue_oldest_age_seconds")
                    .description("age of the oldest eligible (due, not running) job per tenant").register(registry());
        }
        List<Map<String, Object>> open = jdbc.queryForList(
                "SELECT tenant_id, status, count(*) AS n FROM jobs WHERE finalized_at IS NULL GROUP BY tenant_id, status");
        queueJobs.register(open.stream().map(r -> MultiGauge.Row.of(Tags.of("tenant", (String) r.get("tenant_id"),
                "status", (String) r.get("status")), ((Number) r.get("n")).doubleValue())).toList(), true);
        // Eligible: a dispatch event due and not yet out (a tenant with none reports 0).
        List<Map<String, Object>> oldest = jdbc.queryForList("""
                SELECT t.tenant_id, min(o.available_at) AS due FROM tenants t
                  LEFT JOIN outbox o ON o.tenant_id = t.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
                                    AND o.available_at <= ?
                 GROUP BY t.tenant_id""", java.sql.Timestamp.from(clock.instant()));
        oldestAge.register(oldest.stream().map(r -> {
            java.sql.Timestamp due = (java.sql.Timestamp) r.get("due");
            double age = due == null ? 0 : Math.max(0, Duration.between(due.toInstant(), clock.instant()).toMillis() / 1000.0);
            return MultiGauge.Row.of(Tags.of("tenant", (String) r.get("tenant_id")), age);
        }).toList(), true);
    }
}
