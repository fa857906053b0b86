package io.jobgate.provider;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.jobgate.common.ApiProblem;
import io.jobgate.infra.Settings;
import io.jobgate.preset.AspectClass;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;

/**
 * Providers from {@code <dir>/<name>.properties} in the provider directories. Each entry is named
 * {@code jobgate.provider.<name>.<key>}; the same name as a system property or environment variable
 * ({@code JOBGATE_PROVIDER_<NAME>_<KEY>}) overrides the file, or gives an entry the file does not have
 * (every entry {@link ProviderKeys} knows, and every provider setting its adapter route reads), so an
 * operator can re-point, re-price or canary an adapter without editing files. A provider dropped in while
 * the gateway runs is found on first use: an unknown name re-reads the directories (at most once a second).
 */
public final class ProviderCatalog {

    /** A provider's limit on a job's source upload, in bytes (absent: none of its own). */
    static final String MAX_INPUT_BYTES = "max-input-bytes";

    public static final String IMAGE_PRICE = "image-micros";
    public static final String AUDIO_MINUTE_PRICE = "audio-minute-micros";

    /** A thousand prompt (input) tokens of a summary: {@code price.input-ktokens-micros}. */
    public static final String INPUT_KTOKENS_PRICE = "input-ktokens-micros";
    /** A thousand completion (output) tokens of a summary: {@code price.output-ktokens-micros}. */
    public static final String OUTPUT_KTOKENS_PRICE = "output-ktokens-micros";
    /** The most tokens a summary may answer (sent as the call's output cap, and what its price reserves). */
    public static final String SUMMARY_MAX_OUTPUT_TOKENS = "summary-max-output-tokens";

    /** A second of video at a resolution class: {@code price.video-second-micros.720p}. */
    public static String videoSecondPrice(String resolution) {
        return "video-second-micros." + resolution;
    }

    private static final long RESCAN_NANOS = 250_000_000L;

    /** What the directories held at the last scan: providers, and every file entry by its full key. */
    private record Scan(Map<String, Provider> providers, Map<String, String> entries) {
    }

    private volatile Scan scan;
    private final Map<String, String> defaults;
    private final List<Path> directories;
    private final java.util.function.UnaryOperator<String> placeholders;
    private volatile long scannedAt = System.nanoTime();

    private ProviderCatalog(Scan scan, Map<String, String> defaultsByKind, List<Path> directories,
                            java.util.function.UnaryOperator<String> placeholders) {
        this.scan = scan;
        this.placeholders = placeholders;
        this.defaults = Map.copyOf(defaultsByKind);
        this.directories = List.copyOf(directories);
        Map<String, Provider> providers = scan.providers();
        defaults.forEach((kind, name) -> {
            Provider p = providers.get(name);
            if (p == null || !p.kinds().contains(kind)) {
                throw new IllegalStateException("default provider for " + kind + " is '" + name
                        + "', which is not configured for that kind");
            }
        });
    }

    public static ProviderCatalog load(List<Path> directories, Settings settings) throws IOException {
        Map<String, String> defaults = new LinkedHashMap<>();
        for (String kind : new String[] {"image", "transcription", VideoOrder.KIND, Preset.SUMMARY}) {
            settings.optional("jobgate.providers.default." + kind).ifPresent(n -> defaults.put(kind, n));
        }
        return new ProviderCatalog(scan(directories, settings::resolve), defaults, directories, settings::resolve);
    }

    private static Scan scan(List<Path> directories, java.util.function.UnaryOperator<String> placeholders) throws IOException {
        Map<String, Provider> providers = new TreeMap<>();
        Map<String, String> entries = new TreeMap<>();
        for (io.jobgate.common.PropertiesFiles.Named file : io.jobgate.common.PropertiesFiles.read(directories)) {
            Properties props = file.properties();
            providers.put(file.name(), provider(file.name(), props, placeholders));
            props.stringPropertyNames().forEach(k -> entries.put(k, props.getProperty(k).trim()));
        }
        sharedVariables(providers.values());
        return new Scan(Map.copyOf(providers), Map.copyOf(entries));
    }

    /**
     * Two entries — of one provider, or of two whose names differ only by a dot, dash or underscore — that
     * one environment variable would set: the start stops, naming both, rather than set one of them by chance.
     */
    private static void sharedVariables(java.util.Collection<Provider> providers) {
        Map<String, String> byVariable = new TreeMap<>();
        for (Provider provider : providers) {
            Set<String> keys = new java.util.TreeSet<>(ProviderKeys.known());
            keys.addAll(provider.settings().keySet());
            for (String key : keys) {
                String entry = "jobgate.provider." + provider.name() + "." + key;
                String other = byVariable.putIfAbsent(Settings.environmentName(entry), entry);
                if (other != null && !other.equals(entry)) {
                    throw new IllegalStateException("provider entries " + other + " and " + entry + " would share the environment variable "
                            + Settings.environmentName(entry) + ": rename one");
                }
            }
        }
    }

    /** Every provider of the last scan. */
    public java.util.List<Provider> all() {
        return scan.providers().values().stream().map(this::withAdapter).toList();
    }

    /** The provider of that name; an unknown name re-reads the directories (at most once a second). */
    public Optional<Provider> find(String name) {
        return Optional.ofNullable(settingsOf(name)).map(this::withAdapter);
    }

    /** The provider of that name as its settings file has it (without its adapter file), or null. */
    private Provider settingsOf(String name) {
        Provider provider = scan.providers().get(name);
        if (provider == null && rescan()) {
            provider = scan.providers().get(name);
        }
        return provider;
    }

    /**
     * Tells the catalog where to read a provider's adapter route file as loaded now (digest and the
     * settings it reads): part of its revision, and changed by a hot reload without a settings change.
     */
    public void readAdapterSources(java.util.function.Function<String, AdapterSource> sources) {
        this.adapterSources = sources;
    }

    private volatile java.util.function.Function<String, AdapterSource> adapterSources = name -> AdapterSource.UNKNOWN;

    private Provider withAdapter(Provider provider) {
        AdapterSource source = adapterSources.apply(provider.name());
        Map<String, String> settings = settingsReadBy(provider, source);
        return settings == provider.settings() ? provider.withAdapter(source) : provider.withAdapter(source).withSettings(settings);
    }

    /**
     * The settings of {@code provider} with those a route file reads ({@code source}, its stable adapter's or a
     * canary candidate's) that the provider file does not name but the environment (or a system property) gives:
     * they shape its requests, so they count in its revision. The provider's own map when there are none; else
     * made once per (settings read, route file loaded), so the map keeps its identity between calls (revision ids
     * are cached by it).
     */
    public Map<String, String> settingsReadBy(Provider provider, AdapterSource source) {
        if (source == null || source.settingKeys() == null || provider.settings().keySet().containsAll(source.settingKeys())) {
            return provider.settings();
        }
        String cacheKey = provider.name() + "@" + source.digest();
        ReadBy known = readBy.get(cacheKey);
        if (known != null && known.base() == provider.settings() && known.source() == source) {
            return known.settings();
        }
        Map<String, String> merged = new TreeMap<>(provider.settings());
        String prefix = "jobgate.provider." + provider.name() + ".";
        for (String key : source.settingKeys()) {
            if (!merged.containsKey(key)) {
                override(prefix + key).ifPresent(value -> merged.put(key, placeholders.apply(value)));
            }
        }
        Map<String, String> settings = merged.size() == provider.settings().size() ? provider.settings() : Map.copyOf(merged);
        if (readBy.size() > 256) {
            readBy.clear(); // route files reloaded many times: old sources are not asked again
        }
        readBy.put(cacheKey, new ReadBy(provider.settings(), source, settings));
        return settings;
    }

    /** Settings with a route file's environment-only entries, and what they were made from. */
    private record ReadBy(Map<String, String> base, AdapterSource source, Map<String, String> settings) {
    }

    private final Map<String, ReadBy> readBy = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * A provider file's entry by its full key, as written in the file (environment variables and
     * system properties override it in Camel's properties component, which asks this last).
     */
    public Optional<String> fileEntry(String key) {
        String value = scan.entries().get(key);
        if (value == null && key.startsWith("jobgate.provider.") && rescan()) {
            value = scan.entries().get(key);
        }
        return Optional.ofNullable(value);
    }

    private synchronized boolean rescan() {
        if (System.nanoTime() - scannedAt < RESCAN_NANOS) {
            return false;
        }
        scannedAt = System.nanoTime();
        try {
            scan = scan(directories, placeholders);
            return true;
        } catch (IOException | IllegalStateException e) {
            throw new IllegalStateException("provider settings unreadable: " + e.getMessage(), e);
        }
    }

    /** An environment variable (JOBGATE_PROVIDER_X_BASE_URL) or system property of the same name wins over the file. */
    private static Optional<String> override(String key) {
        return Optional.ofNullable(System.getProperty(key)).or(() -> Optional.ofNullable(System.getenv(Settings.environmentName(key))))
                .map(String::trim).filter(v -> !v.isEmpty());
    }

    /**
     * The entries of provider {@code name} that the environment (or a system property) gives while its file
     * does not name them: each key {@link ProviderKeys} knows by its own variable, the error-table and price
     * families by their rule, and any {@code jobgate.provider.<name>.*} system property (its name is the key).
     */
    static Map<String, String> environmentOnly(String name, Set<String> inFile) {
        String prefix = "jobgate.provider." + name + ".";
        Map<String, String> found = new TreeMap<>();
        Set<String> knownVariables = new java.util.HashSet<>();
        for (String key : ProviderKeys.known()) {
            knownVariables.add(Settings.environmentName(prefix + key));
            if (!inFile.contains(key)) {
                override(prefix + key).ifPresent(value -> found.put(key, value));
            }
        }
        String variablePrefix = Settings.environmentName(prefix);
        System.getenv().forEach((variable, value) -> {
            if (variable.startsWith(variablePrefix) && !knownVariables.contains(variable) && !value.isBlank()) {
                ProviderKeys.family(variable.substring(variablePrefix.length()))
                        .filter(key -> !inFile.contains(key))
                        .ifPresent(key -> found.putIfAbsent(key, value.trim()));
            }
        });
        for (String property : System.getProperties().stringPropertyNames()) {
            String value = System.getProperty(property);
            if (property.startsWith(prefix) && value != null && !value.isBlank() && !inFile.contains(property.substring(prefix.length()))) {
                found.put(property.substring(prefix.length()), value.trim()); // a system property wins, as over the file
            }
        }
        return found;
    }

    private static Provider provider(String name, Properties file, java.util.function.UnaryOperator<String> placeholders) {
        String prefix = "jobgate.provider." + name + ".";
        Map<String, String> values = new TreeMap<>();
        Set<String> inFile = new java.util.HashSet<>();
        file.stringPropertyNames().forEach(key -> {
            if (!key.startsWith(prefix)) {
                throw new IllegalStateException("entry " + key + " in providers/" + name + ".properties must start with " + prefix);
            }
            String shortKey = key.substring(prefix.length());
            inFile.add(shortKey);
            values.put(shortKey, placeholders.apply(override(key).orElse(file.getProperty(key).trim())));
        });
        environmentOnly(name, inFile).forEach((key, value) -> values.put(key, placeholders.apply(value)));
        Set<String> kinds = Arrays.stream(values.getOrDefault("kinds", "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toUnmodifiableSet());
        Map<String, Long> prices = new TreeMap<>();
        values.forEach((key, value) -> {
            if (key.startsWith("price.")) {
                try {
                    long micros = Long.parseLong(value);
                    if (micros < 0) {
                        throw new NumberFormatException();
                    }
                    prices.put(key.substring("price.".length()), micros);
                } catch (NumberFormatException e) {
                    throw new IllegalStateException(prefix + key + " must be a non-negative whole number of micro-units");
                }
            }
        });
        if (kinds.contains("image") && !prices.containsKey(IMAGE_PRICE)) {
            throw new IllegalStateException(prefix + "price." + IMAGE_PRICE + " is required for kind image");
        }
        if (kinds.contains("transcription") && !prices.containsKey(AUDIO_MINUTE_PRICE)) {
            throw new IllegalStateException(prefix + "price." + AUDIO_MINUTE_PRICE + " is required for kind transcription");
        }
        if (kinds.contains(Preset.SUMMARY)) {
            for (String price : new String[] {INPUT_KTOKENS_PRICE, OUTPUT_KTOKENS_PRICE}) {
                if (!prices.containsKey(price)) {
                    throw new IllegalStateException(prefix + "price." + price + " is required for kind summary");
                }
            }
            whole(prefix + SUMMARY_MAX_OUTPUT_TOKENS, values.getOrDefault(SUMMARY_MAX_OUTPUT_TOKENS, "1024"), 1, 1_000_000);
        }
        if (values.containsKey(MAX_INPUT_BYTES)) {
            try {
                if (Long.parseLong(values.get(MAX_INPUT_BYTES).trim()) < 1) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalStateException(prefix + MAX_INPUT_BYTES + " must be a positive whole number of bytes");
            }
        }
        if (kinds.contains(VideoOrder.KIND)) {
            for (String key : new String[] {"duration-tolerance-ms", "max-video-output-bytes"}) {
                if (values.containsKey(key)) {
                    try {
                        if (Long.parseLong(values.get(key).trim()) < 0) {
                            throw new NumberFormatException();
                        }
                    } catch (NumberFormatException e) {
                        throw new IllegalStateException(prefix + key + " must be a non-negative whole number");
                    }
                }
            }
            for (String resolution : VideoOrder.RESOLUTIONS) {
                if (!prices.containsKey(videoSecondPrice(resolution))) {
                    throw new IllegalStateException(prefix + "price." + videoSecondPrice(resolution) + " is required for kind video");
                }
            }
        }
        int maxConcurrency = whole(prefix + "max-concurrency", values.getOrDefault("max-concurrency", "8"), 1, 10_000);
        long deadlineMs = whole(prefix + "call-deadline-ms", values.getOrDefault("call-deadline-ms", "120000"), 100, 3_600_000);
        int rateLimitBackoff = whole(prefix + "rate-limit-backoff-seconds",
                values.getOrDefault("rate-limit-backoff-seconds", "60"), 1, 86_400);
        Map<String, PixelSize> sizes = new TreeMap<>();
        values.forEach((key, value) -> {
            if (key.startsWith("size.")) {
                // size.<class>, or for video size.<class>.<resolution>
                String aspect = key.substring("size.".length());
                String resolution = aspect.contains(".") ? aspect.substring(aspect.indexOf('.') + 1) : null;
                if (resolution != null && !VideoOrder.RESOLUTIONS.contains(resolution)) {
                    throw new IllegalStateException(prefix + key + ": no resolution class '" + resolution + "'; classes: "
                            + VideoOrder.RESOLUTIONS);
                }
                if (!PresetCatalog.ASPECT_CLASSES.contains(resolution == null ? aspect : aspect.substring(0, aspect.indexOf('.')))) {
                    throw new IllegalStateException(prefix + key + ": no aspect class '" + aspect + "'; classes: "
                            + PresetCatalog.ASPECT_CLASSES);
                }
                try {
                    sizes.put(aspect, PixelSize.parse(value));
                } catch (IllegalArgumentException e) {
                    throw new IllegalStateException(prefix + key + ": " + e.getMessage());
                }
            }
        });
        return new Provider(name, kinds, Map.copyOf(prices), values.getOrDefault("revision", "1"), maxConcurrency,
                Duration.ofMillis(deadlineMs), Boolean.parseBoolean(values.getOrDefault("idempotent-submit", "false")),
                Duration.ofSeconds(rateLimitBackoff), Map.copyOf(sizes), ProviderErrors.parse(prefix, values), Map.copyOf(values),
                AdapterSource.UNKNOWN);
    }

    private static int whole(String key, String value, int min, int max) {
        try {
            int n = Integer.parseInt(value.trim());
            if (n < min || n > max) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalStateException(key + " must be a whole number between " + min + " and " + max + ", was " + value);
        }
    }

    /**
     * Tells the catalog whether a provider's adapter route is loaded and started right now, and
     * why not ({@code null} when it is): a provider is offered only while its settings are valid
     * and its route runs.
     */
    public void watchAdapters(java.util.function.Function<String, String> whyNotRunning) {
        this.whyNotRunning = whyNotRunning;
    }

    private volatile java.util.function.Function<String, String> whyNotRunning = name -> null;

    /** Why {@code provider}'s adapter route does not run now (health shows it), or empty when it runs. */
    public Optional<String> notRunning(String provider) {
        return Optional.ofNullable(whyNotRunning.apply(provider));
    }

    /** Why {@code provider} cannot serve {@code aspectClass} of {@code preset}, or null when it can. */
    public static String misfit(Provider provider, Preset preset, String aspectClass) {
        if (!provider.kinds().contains(preset.kind())) {
            return "it does not serve " + preset.kind() + " presets";
        }
        if (aspectClass == null) {
            return null;
        }
        AspectClass wanted = preset.aspectClasses().get(aspectClass);
        if (VideoOrder.KIND.equals(preset.kind())) {
            return videoMisfit(provider, preset, aspectClass, wanted);
        }
        Optional<PixelSize> size = provider.size(aspectClass);
        if (size.isEmpty()) {
            return "its size table declares no " + aspectClass + " (size." + aspectClass + ")";
        }
        String misfit = wanted == null ? null : wanted.misfit(size.get());
        return misfit == null ? null : aspectClass + " of " + preset.id() + " v" + preset.version() + " is "
                + wanted.ratio() + (wanted.minWidth() > 0 ? " from " + wanted.minWidth() + "x" + wanted.minHeight() : "")
                + ", and " + misfit;
    }

    /**
     * A video class fits when the size table declares it at every resolution the preset allows, each at
     * the class's exact ratio with the resolution's short side (720p: 1280x720 landscape, 720x1280 portrait).
     */
    private static String videoMisfit(Provider provider, Preset preset, String aspectClass, AspectClass wanted) {
        for (String resolution : preset.inputs().get(VideoOrder.RESOLUTION_FIELD).values()) {
            Optional<PixelSize> size = provider.size(aspectClass, resolution);
            if (size.isEmpty()) {
                return "its size table declares no " + aspectClass + " at " + resolution + " (size." + aspectClass + "." + resolution + ")";
            }
            String misfit = wanted == null ? null : wanted.misfit(size.get());
            if (misfit == null && Math.min(size.get().width(), size.get().height()) != VideoOrder.shortSide(resolution)) {
                misfit = size.get() + " does not have the short side of " + resolution;
            }
            if (misfit != null) {
                return aspectClass + " of " + preset.id() + " v" + preset.version() + " at " + resolution + " is "
                        + (wanted == null ? "?" : wanted.ratio()) + ", and " + misfit;
            }
        }
        return null;
    }

    /** The aspect classes of {@code preset} that {@code provider} renders. */
    public static List<String> renders(Provider provider, Preset preset) {
        return preset.aspectClasses().keySet().stream().filter(c -> misfit(provider, preset, c) == null).toList();
    }

    /**
     * Every (preset, class, provider that may serve it) checked: a default provider that cannot serve a
     * class of its kind stops the start, naming the pair; what an optional one cannot serve is
     * returned, one line each (left out for that class: the caller logs it and health shows it).
     */
    public List<String> verifyFits(List<Preset> presets) {
        for (Misfit misfit : misfits(presets)) {
            if (misfit.provider().equals(defaults.get(misfit.preset().kind()))) {
                throw new IllegalStateException("default provider for " + misfit.preset().kind() + " '" + misfit.provider()
                        + "' cannot serve " + misfit.preset().id() + " v" + misfit.preset().version() + " "
                        + misfit.aspectClass() + ": " + misfit.why());
            }
        }
        return leftOut(presets);
    }

    /**
     * The same lines as {@link #verifyFits} for the providers as they are now (a settings file dropped
     * in since the start included), never throwing: what health shows.
     */
    public List<String> leftOut(List<Preset> presets) {
        return misfits(presets).stream().map(m -> m.provider() + " left out for " + m.preset().id() + " v"
                + m.preset().version() + " " + m.aspectClass() + ": " + m.why()).toList();
    }

    private record Misfit(String provider, Preset preset, String aspectClass, String why) {
    }

    private List<Misfit> misfits(List<Preset> presets) {
        List<Misfit> misfits = new java.util.ArrayList<>();
        for (Preset preset : presets) {
            for (Provider provider : scan.providers().values()) {
                if (!provider.kinds().contains(preset.kind())) {
                    continue;
                }
                for (String aspect : preset.aspectClasses().keySet()) {
                    String why = misfit(provider, preset, aspect);
                    if (why != null) {
                        misfits.add(new Misfit(provider.name(), preset, aspect, why));
                    }
                }
            }
        }
        return misfits;
    }

    /**
     * The provider a job goes to. A named one must serve the preset's kind ({@code unknown_provider}),
     * run ({@code provider_not_running}: settings valid and its adapter route loaded and started) and
     * render the job's class ({@code aspect_class_not_rendered}, with the classes it renders). Without a
     * name: the default for the kind (for a kind without one, the image default) when it can, else the
     * first (by name) that can.
     */
    public Provider choose(String requested, Preset preset, String aspectClass) {
        return choose(requested, preset, aspectClass, 0);
    }

    /**
     * As {@link #choose(String, Preset, String)}, for a job whose source upload is {@code inputBytes}
     * long: a provider whose {@code max-input-bytes} it exceeds never gets it, decided here, before the
     * {@code 202}, not by the provider's refusal after it ({@code input_too_large}, naming the limit
     * and the running providers that take it). Without a name, the first provider that fits takes it.
     */
    public Provider choose(String requested, Preset preset, String aspectClass, long inputBytes) {
        return choose(requested, preset, aspectClass, inputBytes, name -> null);
    }

    /**
     * As {@link #choose(String, Preset, String, long)}, for a tenant whose rules of where its jobs run say why it may not
     * use a provider ({@code whyNotAllowed}: the reason, or null when it may): a named provider it may not use is
     * refused ({@code provider_not_allowed}); without a name, only one it may use is chosen, and when every fitting
     * one is ruled out, {@code provider_not_allowed} too.
     */
    public Provider choose(String requested, Preset preset, String aspectClass, long inputBytes,
                           java.util.function.UnaryOperator<String> whyNotAllowed) {
        if (requested != null) {
            Provider provider = find(requested).filter(p -> p.kinds().contains(preset.kind())).orElse(null);
            if (provider == null) {
                throw unknown(requested, preset);
            }
            String denied = whyNotAllowed.apply(provider.name());
            if (denied != null) {
                throw ApiProblem.of(422, "provider_not_allowed", "Provider '" + provider.name() + "' may not take this job: "
                        + denied + ".").with("field", "provider");
            }
            String notRunning = whyNotRunning.apply(provider.name());
            if (notRunning != null) {
                throw ApiProblem.of(422, "provider_not_running", "Provider '" + provider.name() + "' takes no jobs now: "
                        + notRunning + ".").with("field", "provider");
            }
            if (misfit(provider, preset, aspectClass) != null && rescan()) {
                provider = find(requested).orElse(provider); // a fixed settings file may have been dropped in
            }
            String misfit = misfit(provider, preset, aspectClass);
            if (misfit != null) {
                throw ApiProblem.of(422, "aspect_class_not_rendered", "Provider '" + provider.name() + "' cannot render this job: "
                                + misfit + "; it renders: " + String.join(", ", renders(provider, preset)) + ".")
                        .with("field", "provider").with("renders", renders(provider, preset));
            }
            if (!takes(provider, inputBytes)) {
                throw tooLarge(provider, preset, aspectClass, inputBytes);
            }
            return provider;
        }
        // A kind without a default of its own (video) goes to the image default when it serves it.
        String preferred = defaults.getOrDefault(preset.kind(), defaults.get("image"));
        // Fit and running are decided on the settings alone; only the chosen one gets its adapter
        // file's revision (looked up among the routes: once per admission, not once per provider).
        Stream<Provider> candidates = Stream.concat(Stream.ofNullable(settingsOf(preferred == null ? "" : preferred)),
                scan.providers().values().stream().filter(p -> !p.name().equals(preferred)));
        List<Provider> fitting = candidates
                .filter(p -> misfit(p, preset, aspectClass) == null && whyNotRunning.apply(p.name()) == null)
                .toList();
        if (fitting.isEmpty()) {
            throw ApiProblem.of(422, "aspect_class_not_rendered", "No running provider renders "
                    + (aspectClass == null ? preset.kind() + " jobs" : aspectClass + " of " + preset.id() + " v" + preset.version())
                    + " now.").with("field", aspectClass == null ? "provider" : "aspect_class");
        }
        List<Provider> allowed = fitting.stream().filter(p -> whyNotAllowed.apply(p.name()) == null).toList();
        if (allowed.isEmpty()) {
            throw ApiProblem.of(422, "provider_not_allowed", "No running provider that renders this job may take it: "
                    + fitting.stream().map(p -> p.name() + ": " + whyNotAllowed.apply(p.name())).collect(java.util.stream.Collectors.joining("; "))
                    + ".").with("field", "provider");
        }
        return allowed.stream().filter(p -> takes(p, inputBytes)).findFirst().map(this::withAdapter)
                .orElseThrow(() -> tooLarge(null, preset, aspectClass, inputBytes));
    }

    /**
     * Why {@code provider} cannot take a job of {@code preset} and {@code aspectClass} whose upload is {@code inputBytes}
     * long right now — the checks {@link #choose} makes (kind and size table, route running, input size) — or null when
     * it can: what a pool's placement asks of each member.
     */
    public String whyNotServing(Provider provider, Preset preset, String aspectClass, long inputBytes) {
        String misfit = misfit(provider, preset, aspectClass);
        if (misfit != null) {
            return misfit;
        }
        String notRunning = whyNotRunning.apply(provider.name());
        if (notRunning != null) {
            return "it takes no jobs now: " + notRunning;
        }
        return takes(provider, inputBytes) ? null
                : "it takes source uploads of at most " + maxInputBytes(provider).getAsLong() + " bytes; this one is " + inputBytes;
    }

    /** A provider's limit on a job's source upload ({@code max-input-bytes}), if it declares one. */
    public static java.util.OptionalLong maxInputBytes(Provider provider) {
        String value = provider.settings().get(MAX_INPUT_BYTES);
        return value == null || value.isBlank() ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(Long.parseLong(value.trim()));
    }

    private static boolean takes(Provider provider, long inputBytes) {
        java.util.OptionalLong max = maxInputBytes(provider);
        return max.isEmpty() || inputBytes <= max.getAsLong();
    }

    /** The refusal of an upload too large for {@code provider} (null: for every provider that could render the job). */
    private ApiProblem tooLarge(Provider provider, Preset preset, String aspectClass, long inputBytes) {
        List<Provider> able = scan.providers().values().stream()
                .filter(p -> misfit(p, preset, aspectClass) == null && whyNotRunning.apply(p.name()) == null).toList();
        List<String> taking = able.stream().filter(p -> takes(p, inputBytes)).map(Provider::name).sorted().toList();
        long limit = (provider != null ? Stream.of(provider) : able.stream())
                .mapToLong(p -> maxInputBytes(p).orElse(Long.MAX_VALUE)).max().orElse(0);
        String who = provider != null ? "Provider '" + provider.name() + "' takes" : "No running provider of " + preset.kind() + " jobs takes";
        return ApiProblem.of(422, "input_too_large", who + " source uploads of at most " + limit + " bytes; this one is " + inputBytes
                        + " bytes." + (taking.isEmpty() ? " No running provider takes it: split the audio, or compress it."
                        : " Providers that take it: " + String.join(", ", taking) + " (name one in \"provider\")."))
                .with("field", "upload_id").with("max_bytes", limit).with("providers", taking);
    }

    private ApiProblem unknown(String name, Preset preset) {
        String serving = scan.providers().values().stream().filter(p -> p.kinds().contains(preset.kind()))
                .map(Provider::name).collect(Collectors.joining(", "));
        return ApiProblem.of(422, "unknown_provider", "No provider '" + name + "' serves " + preset.kind()
                + " jobs; available: " + serving + ".").with("field", "provider");
    }
}
