package io.jobgate.video;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A video job's order at the door: the preset's allowed durations and resolutions, priced on the
 * server from the provider's table (shown in the 202, debited, metered as video_seconds); anything
 * else refused with a stable code, never rounded; a price or duration outside the inputs refused.
 */
class VideoAdmissionTest extends GatewayTestBase {

    static String clip(String provider, Object seconds, Object resolution, String aspect) {
        return """
                {"preset_id": "invoice-clip", "aspect_class": "%s", "provider": "%s",
                 "inputs": {"duration_seconds": %s, "resolution": %s, "supplier_name": "Clip GmbH",
                            "invoice_id": "V-1", "currency": "EUR", "total": 1200.5}}"""
                .formatted(aspect, provider, seconds, resolution instanceof String s ? "\"" + s + "\"" : resolution);
    }

    Response post(String body) {
        return api.postJob(ACME, "v-" + UUID.randomUUID(), body);
    }

    @Test
    void everyAllowedDurationAndResolutionIsPricedShownDebitedAndMeteredInVideoSeconds() {
        Map<String, Long> perSecond = Map.of("720p", 100_000L, "1080p", 100_000L);
        for (int seconds : List.of(4, 6, 8)) {
            for (String resolution : List.of("720p", "1080p")) {
                for (String aspect : List.of("landscape", "portrait")) {
                    Response r = post(clip("fal", seconds, resolution, aspect));
                    assertThat(r.status()).as(r.text()).isEqualTo(202);
                    long expected = perSecond.get(resolution) * seconds;
                    assertThat(r.json().path("kind").asText()).isEqualTo("video");
                    assertThat(r.json().path("cost").path("amount_micros").asLong()).isEqualTo(expected);
                    UUID id = UUID.fromString(r.json().path("job_id").asText());
                    Map<String, Object> debit = Db.single("SELECT amount_micros, units::int AS units, unit FROM ledger "
                            + "WHERE job_id = ? AND entry_type = 'debit'", id);
                    assertThat(debit).containsEntry("amount_micros", -expected).containsEntry("units", seconds)
                            .containsEntry("unit", "video_seconds");
                }
            }
        }
    }

    @Test
    void theSimulatorsPriceTableDependsOnTheResolution() {
        Response hd = post(clip("simulator", 6, "720p", "landscape"));
        Response fullHd = post(clip("simulator", 6, "1080p", "landscape"));
        assertThat(hd.json().path("cost").path("amount_micros").asLong()).isEqualTo(6 * 20_000L);
        assertThat(fullHd.json().path("cost").path("amount_micros").asLong()).isEqualTo(6 * 40_000L);
    }

    @Test
    void aDurationOutsideTheSetIsRefusedNeverRounded() {
        for (Object seconds : List.of(5, 7, 9, 0, -4, "6.0", "\"6\"", 6.5, 60)) {
            Response r = post(clip("fal", seconds, "720p", "landscape"));
            assertThat(r.status()).as(seconds + ": " + r.text()).isEqualTo(422);
            assertThat(r.code()).as(String.valueOf(seconds)).isEqualTo("invalid_duration");
            assertThat(r.json().path("field").asText()).isEqualTo("inputs.duration_seconds");
            assertThat(r.json().path("allowed").toString()).isEqualTo("[4,6,8]");
        }
        Response missing = post(clip("fal", 6, "720p", "landscape").replace("\"duration_seconds\": 6, ", ""));
        assertThat(missing.code()).isEqualTo("invalid_duration");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE kind = 'video' AND inputs->>'duration_seconds' NOT IN ('4','6','8')"))
                .isZero();
    }

    @Test
    void anUnknownResolutionOrAspectClassIsRefused() {
        for (String resolution : List.of("480p", "4k", "1080", "720P")) {
            Response r = post(clip("fal", 6, resolution, "landscape"));
            assertThat(r.status()).as(r.text()).isEqualTo(422);
            assertThat(r.code()).isEqualTo("invalid_resolution");
        }
        Response square = post(clip("fal", 6, "720p", "square"));
        assertThat(square.status()).isEqualTo(422);
        assertThat(square.code()).isEqualTo("invalid_aspect_class");
    }

    @Test
    void aCostOrDurationOutsideThePresetsInputsIsRefused() {
        Response cost = post(clip("fal", 4, "720p", "landscape").replaceFirst("\\{", "{\"cost_micros\": 1, "));
        assertThat(cost.status()).isEqualTo(422);
        assertThat(cost.code()).isEqualTo("invalid_request");
        Response topLevel = post(clip("fal", 4, "720p", "landscape").replaceFirst("\\{", "{\"duration_seconds\": 4, "));
        assertThat(topLevel.code()).isEqualTo("invalid_request");
        Response inInputs = post(clip("fal", 4, "720p", "landscape").replace("\"total\"", "\"price_micros\": 1, \"total\""));
        assertThat(inInputs.status()).isEqualTo(422);
        assertThat(inInputs.code()).isEqualTo("invalid_input");
        assertThat(inInputs.json().path("field").asText()).isEqualTo("inputs.price_micros");
    }
}
