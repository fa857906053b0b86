package io.jobgate.provider;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;

import io.jobgate.infra.Settings;
import org.apache.camel.impl.DefaultCamelContext;

/** Provider files written for a test, and the catalog loaded from them, as the gateway loads its own. */
final class ProviderFiles {

    private ProviderFiles() {
    }

    /** {@code dir/<name>.properties}: each line of {@code entries} ({@code key = value}) as {@code jobgate.provider.<name>.<key>}. */
    static void write(Path dir, String name, String entries) throws Exception {
        StringBuilder file = new StringBuilder();
        for (String line : entries.split("\n")) {
            file.append("jobgate.provider.").append(name).append('.').append(line).append('\n');
        }
        Files.writeString(dir.resolve(name + ".properties"), file);
    }

    /** The catalog of the files in {@code dir}, with one gateway setting (a kind's default provider). */
    static ProviderCatalog catalog(Path dir, String setting, String value) throws Exception {
        DefaultCamelContext context = new DefaultCamelContext();
        Properties settings = new Properties();
        settings.setProperty(setting, value);
        context.getPropertiesComponent().setInitialProperties(settings);
        return ProviderCatalog.load(List.of(dir), new Settings(context));
    }
}
