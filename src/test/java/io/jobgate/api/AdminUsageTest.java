package io.jobgate.api;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.jobgate.infra.Settings;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The basis of each cost line: the provider's billed units at its price list where it can be priced, else the estimate. */
class AdminUsageTest {

    final AdminUsage usage;

    AdminUsageTest() throws Exception {
        Path dir = java.nio.file.Files.createTempDirectory("jobgate-usage");
        java.nio.file.Files.copy(Path.of("config/providers/openai.properties"), dir.resolve("openai.properties"));
        java.nio.file.Files.copy(Path.of("config/providers/fal.properties"), dir.resolve("fal.properties"));
        usage = new AdminUsage(null, ProviderCatalog.load(List.of(dir),
                new Settings(new DefaultCamelContext())), io.jobgate.pool.PoolCatalog.none(), java.time.Clock.systemUTC());
    }

    static Map<String, Object> metered(String provider, String kind, long debited, long refunded) {
        return Map.of("provider", provider, "kind", kind, "unit", "x", "jobs", 1L, "units", BigDecimal.ONE,
                "debited_micros", debited, "refunded_micros", refunded, "cost_micros", debited - refunded);
    }

    static Map<String, Object> billed(String provider, String kind, String unit, String units) {
        return Map.of("provider", provider, "kind", kind, "unit", unit, "attempts", 2L, "units", new BigDecimal(units));
    }

    @Test
    void billedSecondsArePricedByTheMinutePriceAndMarkedAsProviderBilling() {
        // openai: 6000 micros an audio minute; 90 billed seconds cost 9000.
        List<Map<String, Object>> lines = usage.lines(List.of(metered("openai", "transcription", 12000, 0)),
                List.of(billed("openai", "transcription", "audio_seconds", "90")));
        assertThat(lines).singleElement().satisfies(l -> {
            assertThat(l.get("basis")).isEqualTo(AdminUsage.BILLED);
            assertThat(l.get("cost_micros")).isEqualTo(9000L);
            assertThat(l.get("charged_micros")).isEqualTo(12000L);
            assertThat(l.get("margin_micros")).isEqualTo(3000L);
        });
    }

    @Test
    void withoutBillingOrWithAnUnpricedUnitTheCostIsThePriceListEstimate() {
        List<Map<String, Object>> lines = usage.lines(List.of(metered("openai", "image", 126000, 63000),
                        metered("openai", "transcription", 6000, 0)),
                List.of(billed("openai", "transcription", "tokens", "1500")));
        assertThat(lines).hasSize(2).allSatisfy(l -> assertThat(l.get("basis")).isEqualTo(AdminUsage.ESTIMATE));
        assertThat(lines.get(0)).containsEntry("kind", "image").containsEntry("cost_micros", 126000L)
                .containsEntry("charged_micros", 63000L);
        assertThat(lines.get(1)).containsEntry("kind", "transcription").containsEntry("cost_micros", 6000L);
    }

    @Test
    void secondsOfVideoArePricedAtTheirResolutionsPricePerSecond() {
        // fal bills Veo per second of video: 14 s at 720p and 8 s at 1080p, 100000 micros a second each.
        List<Map<String, Object>> lines = usage.lines(List.of(metered("fal", "video", 2_200_000, 0)),
                List.of(billed("fal", "video", "video_seconds.720p", "14"), billed("fal", "video", "video_seconds.1080p", "8")));
        assertThat(lines).singleElement().satisfies(l -> {
            assertThat(l.get("basis")).isEqualTo(AdminUsage.BILLED);
            assertThat(l.get("cost_micros")).isEqualTo(2_200_000L);
        });
    }
}
