package io.jobgate.provider;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import io.jobgate.api.ApiProblem;
import io.jobgate.infra.Settings;
import io.jobgate.preset.Preset;

/**
 * Providers from {@code config/providers/<name>.properties}. Each entry is named
 * {@code jobgate.provider.<name>.<key>}; the same name as a setting or environment variable
 * ({@code JOBGATE_PROVIDER_<NAME>_<KEY>}) overrides the file, so an operator can re-point or
 * re-price an adapter without editing files.
 */
public final class ProviderCatalog {

    public static final String IMAGE_PRICE = "image-micros";
    public static final String AUDIO_MINUTE_PRICE = "audio-minute-micros";

    private final Map<String, Provider> providers;
    private final Map<String, String> defaults;

    public ProviderCatalog(Map<String, Provider> providers, Map<String, String> defaultsByKind) {
        this.providers = Map.copyOf(providers);
        this.defaults = Map.copyOf(defaultsByKind);
        defaults.forEach((kind, name) -> {
            Provider p = providers.get(name);
            if (p == null || !p.kinds().contains(kind)) {
                throw new IllegalStateException("default provider for " + kind + " is '" + name
                        + "', which is not configured for that kind");
            }
        });
    }

    public static ProviderCatalog load(Path directory, Settings settings) throws IOException {
        Map<String, Provider> providers = new TreeMap<>();
        try (Stream<Path> files = Files.list(directory)) {
            for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".properties")).sorted().toList()) {
                String name = file.getFileName().toString().replaceFirst("\\.properties$", "");
                Properties props = new Properties();
                try (Reader reader = Files.newBufferedReader(file)) {
                    props.load(reader);
                }
                providers.put(name, provider(name, props, settings));
            }
        }
        Map<String, String> defaults = new LinkedHashMap<>();
        for (String kind : new String[] {"image", "transcription"}) {
            settings.optional("jobgate.providers.default." + kind).ifPresent(n -> defaults.put(kind, n));
        }
        return new ProviderCatalog(providers, defaults);
    }

    private static Provider provider(String name, Properties file, Settings settings) {
        String prefix = "jobgate.provider." + name + ".";
        Map<String, String> values = new TreeMap<>();
        file.stringPropertyNames().forEach(key -> {
            if (!key.startsWith(prefix)) {
                throw new IllegalStateException("entry " + key + " in providers/" + name + ".properties must start with " + prefix);
            }
            String shortKey = key.substring(prefix.length());
            values.put(shortKey, settings.optional(key).orElse(file.getProperty(key).trim()));
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
        return new Provider(name, kinds, Map.copyOf(prices));
    }

    /** The requested provider, or the default for the preset's kind. */
    public Provider choose(String requested, Preset preset) {
        String name = requested != null ? requested : defaults.get(preset.kind());
        Provider provider = name == null ? null : providers.get(name);
        if (provider == null || !provider.kinds().contains(preset.kind())) {
            String serving = providers.values().stream().filter(p -> p.kinds().contains(preset.kind()))
                    .map(Provider::name).collect(Collectors.joining(", "));
            throw ApiProblem.of(422, "unknown_provider", "No provider '" + name + "' serves " + preset.kind()
                    + " jobs; available: " + serving + ".").with("field", "provider");
        }
        return provider;
    }
}
