package io.jobgate.infra;

import java.nio.file.Path;
import java.util.Optional;

import io.jobgate.common.SettingsReader;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.PropertiesComponent;

/**
 * Typed view of the gateway's settings. Values come from Camel's properties component, so an
 * environment variable overrides a file entry the usual way ({@code jobgate.data-dir} ←
 * {@code JOBGATE_DATA_DIR}). Defaults are written once, in config/application.properties (the
 * settings table of docs/settings.md is checked against it): no accessor here takes a default. Bad or
 * missing values fail at start, naming the setting.
 */
public final class Settings implements SettingsReader {

    private final PropertiesComponent properties;

    public Settings(CamelContext context) {
        this.properties = context.getPropertiesComponent();
    }

    public Optional<String> optional(String key) {
        return properties.resolveProperty(key).map(String::trim).filter(v -> !v.isEmpty());
    }

    /** A setting that must have a value (its default is written once, in config/application.properties). */
    public String required(String key) {
        return optional(key).orElseThrow(() -> new IllegalStateException("setting " + key + " is required"));
    }

    public long longValue(String key, long min, long max) {
        long value;
        try {
            value = Long.parseLong(required(key));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("setting " + key + " must be a whole number", e);
        }
        if (value < min || value > max) {
            throw new IllegalStateException("setting " + key + " must be between " + min + " and " + max + ", was " + value);
        }
        return value;
    }

    public int intValue(String key, int min, int max) {
        return (int) longValue(key, min, max);
    }

    public java.time.Duration millis(String key, long min, long max) {
        return java.time.Duration.ofMillis(longValue(key, min, max));
    }

    public java.time.Duration seconds(String key, long min, long max) {
        return java.time.Duration.ofSeconds(longValue(key, min, max));
    }

    public boolean bool(String key) {
        String value = required(key);
        if (!value.equals("true") && !value.equals("false")) {
            throw new IllegalStateException("setting " + key + " must be true or false, was " + value);
        }
        return Boolean.parseBoolean(value);
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

    public Path path(String key) {
        return Path.of(required(key)).toAbsolutePath().normalize();
    }
}
