package io.jobgate.ops;

import io.jobgate.support.PrometheusText;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.MovableClock;
import io.jobgate.support.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prometheus scrapes while the gauges that need a query are refreshed, their label sets changing (a
 * provider's gate closing and opening again): every scrape succeeds and shows each series once.
 * MultiGauge's overwrite once failed such a scrape with "Duplicate labels for metric jobgate_leases_active".
 */
class GaugeRefreshScrapeTest {

    /** Many rows per gauge: the more gauges a refresh replaces, the more often a scrape meets one half done. */
    static final List<String> PROVIDERS = IntStream.range(0, 64).mapToObj(i -> "scrape-test-" + i).toList();
    /** Not configured: its gauge exists while the database names it (its gate closed). */
    static final String EXTRA = "scrape-test-extra";
    static final int REFRESHES = 400;

    @Test
    void aScrapeDuringRefreshesSucceedsWithEverySeriesOnce() throws Exception {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        MovableClock clock = new MovableClock();
        try (HikariDataSource pool = TestDatabase.migratedPool(2); DefaultCamelContext context = new DefaultCamelContext()) {
            context.getRegistry().bind("prometheus", registry); // Meters finds its registry in Camel's, as camel-micrometer binds it
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            jdbc.update("INSERT INTO provider_gates (provider, closed_until) VALUES (?, ?) ON CONFLICT (provider) "
                    + "DO UPDATE SET closed_until = EXCLUDED.closed_until", EXTRA, Timestamp.from(clock.instant().plus(Duration.ofMinutes(30))));
            try {
                Meters meters = new Meters(context, jdbc, clock, PROVIDERS);
                DefaultExchange exchange = new DefaultExchange(context);
                meters.refresh(exchange);

                AtomicBoolean refreshing = new AtomicBoolean(true);
                CompletableFuture<Integer> scrapes = CompletableFuture.supplyAsync(() -> {
                    int n = 0;
                    while (refreshing.get()) {
                        assertEverySeriesOnce(PrometheusText.parse(registry.scrape()));
                        n++;
                    }
                    return n;
                });
                try {
                    // The gate's closed_until is 30 minutes away: now it is closed, an hour on it is open again.
                    for (int i = 0; i < REFRESHES && !scrapes.isDone(); i++) {
                        clock.reset();
                        if (i % 2 == 1) {
                            clock.advance(Duration.ofHours(1));
                        }
                        meters.refresh(exchange);
                    }
                } finally {
                    refreshing.set(false);
                }
                assertThat(scrapes.get(30, TimeUnit.SECONDS)).as("scrapes that ran beside the refreshes").isPositive();

                PrometheusText m = PrometheusText.parse(registry.scrape());
                assertEverySeriesOnce(m);
                for (String provider : PROVIDERS) {
                    assertThat(m.value("jobgate_leases_active", "provider", provider)).as(provider).isZero();
                    assertThat(m.value("jobgate_provider_gate_open", "provider", provider)).as(provider).isEqualTo(1);
                }
                // The last refresh ran an hour on: the gate no longer closed reads open, it does not say closed.
                assertThat(m.value("jobgate_provider_gate_open", "provider", EXTRA)).isEqualTo(1);
                clock.reset();
                meters.refresh(exchange);
                assertThat(PrometheusText.parse(registry.scrape()).value("jobgate_provider_gate_open", "provider", EXTRA)).isZero();
            } finally {
                jdbc.update("DELETE FROM provider_gates WHERE provider = ?", EXTRA);
            }
        }
    }

    static void assertEverySeriesOnce(PrometheusText scrape) {
        Set<PrometheusText.Sample> seen = new HashSet<>();
        for (PrometheusText.Sample s : scrape.samples()) {
            assertThat(seen.add(new PrometheusText.Sample(s.name(), s.labels(), 0))).as("%s once", s).isTrue();
        }
    }
}
