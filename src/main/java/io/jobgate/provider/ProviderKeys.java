package io.jobgate.provider;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;

/**
 * The entries a provider file may have ({@code jobgate.provider.<name>.<key>}), as the gateway reads them:
 * one list, so that each can be given by the environment alone, whether or not the file names it
 * (docs/providers.md, "Settings").
 *
 * <p>An environment variable is named after its entry in upper case with dots and dashes as underscores
 * ({@link io.jobgate.infra.Settings#environmentName}), which cannot be read back into an entry by itself
 * ({@code CANARY_MIN_SAMPLE} could be {@code canary.min-sample} or {@code canary-min.sample}). So the
 * catalog never guesses: it asks for the variable of every entry that may exist — these keys, the entries
 * of the file, and the provider settings its adapter route reads ({@code {{jobgate.provider.<name>.<key>}}})
 * — and reads two families whose last part is the provider's own word by a fixed rule instead:
 * {@code ERROR_<status>_<CODE>} is {@code error.<status>.<code>} and {@code PRICE_<UNIT>_MICROS} is
 * {@code price.<unit>-micros}, the code or unit in lower case with its underscores as written (a code with a
 * dot or dash can only be written in the file). Two entries that would share one variable stop the start.
 */
public final class ProviderKeys {

    /** The preset kinds a provider may serve (its {@code revision.<kind>} labels). */
    public static final List<String> KINDS = List.of("image", "transcription", VideoOrder.KIND, io.jobgate.preset.Preset.SUMMARY);

    /**
     * Entries the gateway reads from every provider file, and the two every HTTP adapter has. {@code enabled}
     * is read for every adapter route as its file is read (infra's RouteStartRules), not by the route itself.
     */
    public static final List<String> FIXED = List.of(
            "kinds", "enabled", "revision", "max-concurrency", "call-deadline-ms", "idempotent-submit", "rate-limit-backoff-seconds",
            "operations", "readiness-url", "readiness-authorization", "error-code-fields",
            "webhook-secret", "webhook-scheme", "webhook-jwks-url", "worker-key-sha256", "worker-absent-seconds",
            "duration-tolerance-ms", "max-video-output-bytes", ProviderCatalog.MAX_INPUT_BYTES,
            "price." + ProviderCatalog.IMAGE_PRICE, "price." + ProviderCatalog.AUDIO_MINUTE_PRICE,
            "price." + ProviderCatalog.INPUT_KTOKENS_PRICE, "price." + ProviderCatalog.OUTPUT_KTOKENS_PRICE,
            ProviderCatalog.SUMMARY_MAX_OUTPUT_TOKENS,
            "canary.share", "canary.label", "canary.window-seconds", "canary.min-sample", "canary.max-error-rate",
            "canary.max-p95-ms", "canary.max-invalid-output-rate", "canary.min-evaluated", "canary.min-field-accuracy",
            "canary.min-totals-correct",
            "base-url", "api-key",
            // AWS APIs: what the bean awsSigV4 (the adapter helper AwsSigV4) signs with
            "aws-region", "aws-access-key-id", "aws-secret-access-key", "aws-session-token", "aws-credentials");

    private static final Pattern ERROR = Pattern.compile("ERROR_([1-5][0-9][0-9])_(.+)");
    private static final Pattern PRICE = Pattern.compile("PRICE_(.+)_MICROS");

    private ProviderKeys() {
    }

    /**
     * Every entry the gateway knows a provider file may have: {@link #FIXED}, and the families spelled out —
     * {@code revision.<kind>}, {@code size.<class>}, {@code size.<class>.<resolution>},
     * {@code price.video-second-micros.<resolution>}.
     */
    public static Set<String> known() {
        Set<String> keys = new TreeSet<>(FIXED);
        KINDS.forEach(kind -> keys.add("revision." + kind));
        for (String aspect : PresetCatalog.ASPECT_CLASSES) {
            keys.add("size." + aspect);
            VideoOrder.RESOLUTIONS.forEach(resolution -> keys.add("size." + aspect + "." + resolution));
        }
        VideoOrder.RESOLUTIONS.forEach(resolution -> keys.add("price." + ProviderCatalog.videoSecondPrice(resolution)));
        return keys;
    }

    /**
     * The entry of a family whose last part is the provider's own word, from the part of a variable's name
     * after {@code JOBGATE_PROVIDER_<NAME>_}: {@code ERROR_429_INSUFFICIENT_QUOTA} is
     * {@code error.429.insufficient_quota}, {@code ERROR_402_*} is {@code error.402.*},
     * {@code PRICE_PREDICT_SECONDS_MICROS} is {@code price.predict_seconds-micros}; empty for any other name.
     */
    public static Optional<String> family(String variableTail) {
        Matcher error = ERROR.matcher(variableTail);
        if (error.matches()) {
            return Optional.of("error." + error.group(1) + "." + error.group(2).toLowerCase(Locale.ROOT));
        }
        Matcher price = PRICE.matcher(variableTail);
        if (price.matches()) {
            return Optional.of("price." + price.group(1).toLowerCase(Locale.ROOT) + "-micros");
        }
        return Optional.empty();
    }
}
