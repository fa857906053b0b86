package io.jobgate.provider;

import io.jobgate.preset.Preset;
import io.jobgate.preset.VideoOrder;
import io.jobgate.upload.Upload;

/**
 * The price of a job, from the request's real parameters and the provider's unit prices. The
 * client never sends a price.
 */
public final class Pricing {

    private static final long MILLIS_PER_MINUTE = 60_000;

    private Pricing() {
    }

    /** @param video the video order (null for other kinds) */
    public static long costMicros(Preset preset, Provider provider, Upload source, VideoOrder video) {
        return switch (preset.kind()) {
            case "image" -> Math.multiplyExact(provider.price(ProviderCatalog.IMAGE_PRICE), preset.outputs());
            case "transcription" -> Math.multiplyExact(provider.price(ProviderCatalog.AUDIO_MINUTE_PRICE),
                    billedMinutes(source == null ? null : source.durationMillis()));
            // model (the adapter's, priced in its file) x resolution x seconds x outputs
            case VideoOrder.KIND -> Math.multiplyExact(provider.price(ProviderCatalog.videoSecondPrice(video.resolution())),
                    video.videoSeconds());
            default -> throw new IllegalStateException("no pricing for kind " + preset.kind());
        };
    }

    /**
     * A summary's price, fixed when it is ordered: its prompt's tokens (estimated from the transcript) at the
     * provider's input price and the most it may answer ({@code summary-max-output-tokens}, sent as the call's
     * cap) at its output price, both per thousand tokens, rounded up to a whole micro-unit.
     */
    public static long summaryCostMicros(Provider provider, long inputTokens) {
        long micros = Math.addExact(Math.multiplyExact(inputTokens, provider.price(ProviderCatalog.INPUT_KTOKENS_PRICE)),
                Math.multiplyExact((long) provider.summaryMaxOutputTokens(), provider.price(ProviderCatalog.OUTPUT_KTOKENS_PRICE)));
        return (micros + 999) / 1000;
    }

    /** What a summary is metered as when ordered: the tokens its price covers (prompt estimate and output cap). */
    public static Usage summaryMetered(Provider provider, long inputTokens) {
        return new Usage(Math.addExact(inputTokens, provider.summaryMaxOutputTokens()), "tokens");
    }

    /** What a job is metered as at admission: its units and their name. */
    public record Usage(long units, String unit) {
    }

    public static Usage metered(Preset preset, Upload source, VideoOrder video) {
        return switch (preset.kind()) {
            case "image" -> new Usage(preset.outputs(), "images");
            case "transcription" -> new Usage(billedMinutes(source == null ? null : source.durationMillis()), "audio_minutes");
            case VideoOrder.KIND -> new Usage(video.videoSeconds(), "video_seconds");
            default -> throw new IllegalStateException("no metering for kind " + preset.kind());
        };
    }

    /**
     * What {@code units} of a provider's own billing unit cost at its price list, or null when its
     * settings price no such unit: {@code images} and {@code audio_minutes}/{@code audio_seconds} by
     * the job prices, {@code video_seconds.<resolution>} (seconds of video at a resolution class, fal's
     * basis for Veo) by {@code price.video-second-micros.<resolution>}, any other unit by
     * {@code price.<unit>-micros} (e.g. {@code price.tokens-micros}).
     */
    /** A billed unit of seconds of video at a resolution class: {@code video_seconds.720p}. */
    public static final String VIDEO_SECONDS = "video_seconds.";

    public static java.math.BigDecimal billedMicros(Provider provider, String unit, java.math.BigDecimal units) {
        if (unit == null || units == null) {
            return null;
        }
        java.math.BigDecimal per = switch (unit) {
            case "images" -> price(provider, ProviderCatalog.IMAGE_PRICE, 1);
            case "audio_minutes" -> price(provider, ProviderCatalog.AUDIO_MINUTE_PRICE, 1);
            case "audio_seconds" -> price(provider, ProviderCatalog.AUDIO_MINUTE_PRICE, 60);
            default -> unit.startsWith(VIDEO_SECONDS)
                    ? price(provider, ProviderCatalog.videoSecondPrice(unit.substring(VIDEO_SECONDS.length())), 1)
                    : price(provider, unit + "-micros", 1);
        };
        return per == null ? null : per.multiply(units);
    }

    private static java.math.BigDecimal price(Provider provider, String key, int perUnits) {
        Long micros = provider.prices().get(key);
        return micros == null ? null : java.math.BigDecimal.valueOf(micros)
                .divide(java.math.BigDecimal.valueOf(perUnits), 6, java.math.RoundingMode.HALF_EVEN);
    }

    /** Whole minutes, rounded up, at least one: how transcription is billed. */
    static long billedMinutes(Long durationMillis) {
        if (durationMillis == null || durationMillis <= 0) {
            return 1;
        }
        return (durationMillis + MILLIS_PER_MINUTE - 1) / MILLIS_PER_MINUTE;
    }
}
