package io.jobgate.preset;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;

import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/** The wiring of preset: the catalog read from the configuration folder, and the operator's defaults it answers with. */
public final class PresetWiring {

    private PresetWiring() {
    }

    public record Presets(PresetCatalog catalog, PresetDefaults defaults) {
    }

    public static Presets bind(CamelContext context, Path configDir, JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock)
            throws IOException {
        PresetCatalog presets = PresetCatalog.load(configDir.resolve("presets"));
        // Which version new jobs get when they name none: the operator's choice, else the latest.
        PresetDefaults presetDefaults = new PresetDefaults(jdbc, transactions, presets, clock);
        presets.useDefaults(presetDefaults::pinned);
        context.getRegistry().bind("presetCatalog", presets);
        return new Presets(presets, presetDefaults);
    }
}
