package io.jobgate.common;

import java.time.Duration;
import java.util.Optional;

/**
 * The typed reads of the gateway's settings, as infra's {@code Settings} gives them: a package's wiring reads
 * its own settings through this, so a package that may not use infra still names the settings it needs
 * beside the beans they shape. Bad or missing values fail at start, naming the setting; no read takes a
 * default (defaults are written once, in config/application.properties).
 */
public interface SettingsReader {

    Optional<String> optional(String key);

    /** A setting that must have a value. */
    String required(String key);

    long longValue(String key, long min, long max);

    int intValue(String key, int min, int max);

    Duration millis(String key, long min, long max);

    Duration seconds(String key, long min, long max);

    boolean bool(String key);
}
