package io.jobgate.provider;

import org.apache.camel.spi.PropertiesSource;

/**
 * Lets adapter routes use their provider file's entries as placeholders
 * ({@code {{jobgate.provider.openai.base-url}}}), including files dropped in while the gateway runs.
 * Environment variables and system properties of the same name still win.
 */
public final class ProviderSettingsSource implements PropertiesSource {

    private final ProviderCatalog catalog;

    public ProviderSettingsSource(ProviderCatalog catalog) {
        this.catalog = catalog;
    }

    @Override
    public String getName() {
        return "jobgate-provider-files";
    }

    @Override
    public String getProperty(String name) {
        return name.startsWith("jobgate.provider.") ? catalog.fileEntry(name).orElse(null) : null;
    }
}
