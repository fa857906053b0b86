package io.jobgate.provider;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.TreeMap;
import java.util.stream.Collectors;

import io.jobgate.infra.Settings;
import io.jobgate.preset.PresetCatalog;
import org.apache.camel.CamelContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The wiring of provider: the providers' settings read, offered as settings of their own, and checked against the presets. */
public final class ProviderWiring {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderWiring.class);

    private ProviderWiring() {
    }

    public static ProviderCatalog bind(CamelContext context, Settings settings, PresetCatalog presets) throws IOException {
        ProviderCatalog providers = ProviderCatalog.load(Arrays.stream(settings.required("jobgate.providers.dirs").split(","))
                .map(String::trim).filter(d -> !d.isEmpty()).map(Path::of).toList(), settings);
        context.getPropertiesComponent().addPropertiesSource(new ProviderSettingsSource(providers));
        // Every (preset, class, provider that may serve it): a default that cannot stops the start here.
        // One line per provider (why, per class, is in health): by design for the v1 presets, whose sizes
        // are minimums some providers' size tables stay below, so not a warning on every start.
        providers.verifyFits(presets.all()).stream()
                .collect(Collectors.groupingBy(line -> line.substring(0, line.indexOf(" left out for ")),
                        TreeMap::new, Collectors.mapping(
                                line -> line.substring(line.indexOf(" left out for ") + 14, line.indexOf(": ")),
                                Collectors.joining(", "))))
                .forEach((provider, classes) -> LOG.info("provider {} is left out for {} (the reasons: /observe/health)",
                        provider, classes));
        context.getRegistry().bind("providerCatalog", providers);
        return providers;
    }
}
