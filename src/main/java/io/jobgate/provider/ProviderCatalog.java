package io.jobgate.provider;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
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
import io.jobgate.preset.Preset;

/**
 * Providers from {@code <dir>/<name>.properties} in the provider directories. Each entry is named
 * {@code jobgate.provider.<name>.<key>}; the same name as a setting or environment variable
 * ({@code JOBGATE_PROVIDER_<NAME>_<KEY>}) overrides the file, so an operator can re-point or
 * re-price an adapter without editing files. A provider dropped in while the gateway runs is
 * found on first use: an unknown name re-reads the directories (at most once a second).
 */
public final class ProviderCatalog {

    public static final String IMAGE_PRICE = "image-micros";
    public static final String AUDIO_MINUTE_PRICE = "audio-minute-micros";

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
        for (String kind : new String[] {"image", "transcription"}) {
            settings.optional("jobgate.providers.default." + kind).ifPresent(n -> defaults.put(kind, n));
        }
        return new ProviderCatalog(scan(directories, settings::resolve), defaults, directories, settings::resolve);
    }

    private static Scan scan(List<Path> directories, java.util.function.UnaryOperator<String> placeholders) throws IOException {
        Map<String, Provider> providers = new TreeMap<>();
        Map<String, String> entries = new TreeMap<>();
        for (Path directory : directories) {
            if (!Files.isDirectory(directory)) {
                continue;
            }
            try (Stream<Path> files = Files.list(directory)) {
                for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".properties")).sorted().toList()) {
                    String name = file.getFileName().toString().replaceFirst("\\.properties$", "");
                    Properties props = new Properties();
                    try (Reader reader = Files.newBufferedReader(file)) {
                        props.load(reader);
                    }
                    providers.put(name, provider(name, props, placeholders));
                    props.stringPropertyNames().forEach(k -> entries.put(k, props.getProperty(k).trim()));
                }
            }
        }
        return new Scan(Map.copyOf(providers), Map.copyOf(entries));
    }

    /** Every provider of the last scan. */
    public java.util.List<Provider> all() {
        return java.util.List.copyOf(scan.providers().values());
    }

    /** The provider of that name; an unknown name re-reads the directories (at most once a second). */
    public Optional<Provider> find(String name) {
        Provider provider = scan.providers().get(name);
        if (provider == null && rescan()) {
            provider = scan.providers().get(name);
        }
        return Optional.ofNullable(provider);
    }

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

    private static Provider provider(String name, Properties file, java.util.function.UnaryOperator<String> placeholders) {
        String prefix = "jobgate.provider." + name + ".";
        Map<String, String> values = new TreeMap<>();
        file.stringPropertyNames().forEach(key -> {
            if (!key.startsWith(prefix)) {
                throw new IllegalStateException("entry " + key + " in providers/" + name + ".properties must start with " + prefix);
            }
            String shortKey = key.substring(prefix.length());
            values.put(shortKey, placeholders.apply(override(key).orElse(file.getProperty(key).trim())));
        });
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
        int maxConcurrency = whole(prefix + "max-concurrency", values.getOrDefault("max-concurrency", "8"), 1, 10_000);
        long deadlineMs = whole(prefix + "call-deadline-ms", values.getOrDefault("call-deadline-ms", "120000"), 100, 3_600_000);
        int rateLimitBackoff = whole(prefix + "rate-limit-backoff-seconds",
                values.getOrDefault("rate-limit-backoff-seconds", "60"), 1, 86_400);
        return new Provider(name, kinds, Map.copyOf(prices), values.getOrDefault("revision", "1"), maxConcurrency,
                Duration.ofMillis(deadlineMs), Boolean.parseBoolean(values.getOrDefault("idempotent-submit", "false")),
                Duration.ofSeconds(rateLimitBackoff), Map.copyOf(values));
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

    /** The requested provider, or the default for the preset's kind. */
    public Provider choose(String requested, Preset preset) {
        String name = requested != null ? requested : defaults.get(preset.kind());
        Provider provider = name == null ? null : find(name).orElse(null);
        if (provider == null || !provider.kinds().contains(preset.kind())) {
            String serving = scan.providers().values().stream().filter(p -> p.kinds().contains(preset.kind()))
                    .map(Provider::name).collect(Collectors.joining(", "));
            throw ApiProblem.of(422, "unknown_provider", "No provider '" + name + "' serves " + preset.kind()
                    + " jobs; available: " + serving + ".").with("field", "provider");
        }
        return provider;
    }
}
