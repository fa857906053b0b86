package io.jobgate.infra;

import java.nio.file.Path;
import java.util.Optional;

import org.apache.camel.CamelContext;
import org.apache.camel.spi.PropertiesComponent;

/**
 * Typed view of the gateway's settings. Values come from Camel's properties component, so an
 * environment variable overrides a file entry the usual way ({@code jobgate.data-dir} ←
 * {@code JOBGATE_DATA_DIR}). Bad values fail at start, naming the setting.
 */
public final class Settings {

    private final PropertiesComponent properties;

    public Settings(CamelContext context) {
        this.properties = context.getPropertiesComponent();
    }

    public Optional<String> optional(String key) {
        return properties.resolveProperty(key).map(String::trim).filter(v -> !v.isEmpty());
    }

    public String string(String key, String defaultValue) {
        return optional(key).orElse(defaultValue);
    }

    public String required(String key) {
        return optional(key).orElseThrow(() -> new IllegalStateException("setting " + key + " is required"));
    }

    public long longValue(String key, long defaultValue, long min, long max) {
        long value;
        try {
            value = optional(key).map(Long::parseLong).orElse(defaultValue);
        } catch (NumberFormatException e) {
            throw new IllegalStateException("setting " + key + " must be a whole number", e);
        }
        if (value < min || value > max) {
            throw new IllegalStateException("setting " + key + " must be between " + min + " and " + max + ", was " + value);
        }
        return value;
    }

    public int intValue(String key, int defaultValue, int min, int max) {
        return (int) longValue(key, defaultValue, min, max);
    }

    public boolean bool(String key, boolean defaultValue) {
        return optional(key).map(Boolean::parseBoolean).orElse(defaultValue);
    }

    /**
     * The environment variable that overrides a setting: upper case, dots and dashes as underscores
     * ({@code jobgate.provider.openai.base-url} → {@code JOBGATE_PROVIDER_OPENAI_BASE_URL}).
     */
    public static String environmentName(String key) {
        return key.toUpperCase(java.util.Locale.ROOT).replace('.', '_').replace('-', '_');
    }

    /** Resolves {@code {{placeholders}}} in a value (settings, environment overrides). */
    public String resolve(String text) {
        return text != null && text.contains("{{") ? properties.parseUri(text) : text;
    }

    public Path path(String key, String defaultValue) {
        return Path.of(string(key, defaultValue)).toAbsolutePath().normalize();
    }
}
