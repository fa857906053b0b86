package io.jobgate.provider;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import io.jobgate.preset.PixelSize;

/**
 * One provider's settings ({@code config/providers/<name>.properties}, each entry overridable by
 * environment variable): the preset kinds it serves, its unit prices in micro-units
 * ({@code price.image-micros}, {@code price.audio-minute-micros}, …) and what the worker needs to
 * call its adapter route {@code direct:provider-<name>}.
 *
 * @param label            the human label of its revisions ({@code revision}); an operation of its own
 *                         says {@code revision.<kind>}; the recorded revision adds a derived hash ({@link #revision(String)})
 * @param maxConcurrency   requests in flight to this provider across all instances ({@code max-concurrency})
 * @param callDeadline     how long one adapter call may take ({@code call-deadline-ms})
 * @param idempotentSubmit the provider deduplicates a resubmission by our idempotency key
 *                         ({@code idempotent-submit}), so a call cut short may be repeated safely
 * @param rateLimitBackoff how long to leave the provider alone after a 429 whose {@code Retry-After}
 *                         cannot be read ({@code rate-limit-backoff-seconds}): conservative, since
 *                         the provider did ask for a pause and only its length is unknown
 * @param sizes            the size table: for every aspect class it renders, the exact pixel size it
 *                         asks for and gets ({@code size.<class> = <width>x<height>}; video:
 *                         {@code size.<class>.<resolution>}, keyed {@code <class>.<resolution>})
 * @param errors           the error table of all its operations ({@link ProviderErrors})
 * @param settings         every entry of the file by its short key, after overrides
 * @param adapter          its adapter route file as the catalog last saw it (digest, settings it reads)
 */
public record Provider(String name, Set<String> kinds, Map<String, Long> prices, String label,
                       int maxConcurrency, Duration callDeadline, boolean idempotentSubmit,
                       Duration rateLimitBackoff, Map<String, PixelSize> sizes, ProviderErrors errors,
                       Map<String, String> settings, AdapterSource adapter) {

    /**
     * The adapter revision of one operation (a preset kind), recorded on attempts, results, manifests,
     * logs and metrics: its label ({@code revision.<kind>}, else {@code revision}) and a hash of what
     * shapes its requests ({@link RevisionIdentity}). Image generation and transcription change on
     * their own, so each has its own.
     */
    public String revision(String kind) {
        return RevisionIdentity.of(label(kind), adapter, settings, kind);
    }

    /** The human label of one operation's revisions: {@code revision.<kind>}, else {@code revision}. */
    public String label(String kind) {
        String own = kind == null ? null : settings.get("revision." + kind);
        return own == null || own.isBlank() ? label : own;
    }

    /** The same provider with one setting changed (tests, and settings derived at run time). */
    public Provider withSettings(String key, String value) {
        Map<String, String> changed = new java.util.TreeMap<>(settings);
        changed.put(key, value);
        return new Provider(name, kinds, prices, label, maxConcurrency, callDeadline, idempotentSubmit, rateLimitBackoff, sizes,
                errors, Map.copyOf(changed), adapter);
    }

    /** The same provider with these settings (an immutable map; the typed fields stay as they are). */
    Provider withSettings(Map<String, String> replaced) {
        return new Provider(name, kinds, prices, label, maxConcurrency, callDeadline, idempotentSubmit, rateLimitBackoff, sizes,
                errors, replaced, adapter);
    }

    /** The same provider with its adapter route file as now loaded. */
    public Provider withAdapter(AdapterSource source) {
        return source.equals(adapter) ? this : new Provider(name, kinds, prices, label, maxConcurrency, callDeadline,
                idempotentSubmit, rateLimitBackoff, sizes, errors, settings, source);
    }

    /** The exact size it renders for an aspect class, if it renders that class. */
    public java.util.Optional<PixelSize> size(String aspectClass) {
        return java.util.Optional.ofNullable(aspectClass == null ? null : sizes.get(aspectClass));
    }

    /** The exact frame size it renders a video class at, at a resolution class ({@code size.<class>.<resolution>}). */
    public java.util.Optional<PixelSize> size(String aspectClass, String resolution) {
        if (resolution == null) {
            return size(aspectClass);
        }
        return java.util.Optional.ofNullable(aspectClass == null ? null : sizes.get(aspectClass + "." + resolution));
    }

    /** The most tokens a summary may answer ({@code summary-max-output-tokens}, 1,024 unless set). */
    public int summaryMaxOutputTokens() {
        return Integer.parseInt(settings.getOrDefault(ProviderCatalog.SUMMARY_MAX_OUTPUT_TOKENS, "1024").trim());
    }

    public long price(String unit) {
        Long price = prices.get(unit);
        if (price == null) {
            throw new IllegalStateException("provider " + name + " has no price." + unit);
        }
        return price;
    }

    /** Does the adapter serve this operation ({@code submit} always; {@code lookup}, {@code webhook} when listed in {@code operations})? */
    public boolean supports(String operation) {
        return "submit".equals(operation) || java.util.Arrays.stream(settings.getOrDefault("operations", "submit").split(","))
                .map(String::trim).anyMatch(operation::equals);
    }

    /** The adapter route's endpoint. */
    public String adapterUri() {
        return "direct:provider-" + name;
    }
}
