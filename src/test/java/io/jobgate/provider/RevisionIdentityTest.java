package io.jobgate.provider;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import io.jobgate.infra.Settings;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A revision's identity is derived from the shipped OpenAI adapter's route file and its effective
 * settings: a request-shaping change (model, quality, size, base URL, the route file) makes a new
 * revision; a secret, a price or a base URL's port does not.
 */
class RevisionIdentityTest {

    @TempDir
    Path dir;

    static final String ROUTE = "routes/providers/openai.camel.yaml";
    static final String MODEL = "jobgate.provider.openai.image-model";

    /** Overrides another test class left set (system properties win over the file): put back afterwards. */
    final java.util.Map<String, String> saved = new java.util.HashMap<>();

    @org.junit.jupiter.api.BeforeEach
    void isolate() {
        for (String key : System.getProperties().stringPropertyNames()) {
            if (key.startsWith("jobgate.provider.openai.")) {
                saved.put(key, System.getProperty(key));
                System.clearProperty(key);
            }
        }
    }

    @AfterEach
    void restore() {
        System.clearProperty(MODEL);
        saved.forEach(System::setProperty);
    }

    /** The shipped openai.properties with {@code extra} lines added (a later line wins), the shipped route. */
    String revision(String extra, String routeText) throws Exception {
        Files.writeString(dir.resolve("openai.properties"),
                Files.readString(Path.of("config/providers/openai.properties")) + "\n" + extra + "\n");
        ProviderCatalog catalog = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
        catalog.readAdapterSources(name -> AdapterSource.of(name, routeText));
        return catalog.find("openai").orElseThrow().revision("image");
    }

    String revision(String extra) throws Exception {
        return revision(extra, Files.readString(Path.of(ROUTE)));
    }

    @Test
    void theIdIsTheLabelAndAShortHashStableAcrossLoads() throws Exception {
        String first = revision("");
        assertThat(first).matches("openai-images-2@[0-9a-f]{10}");
        assertThat(revision("")).isEqualTo(first);
    }

    @Test
    void aRequestShapingSettingMakesANewRevision() throws Exception {
        String base = revision("");
        assertThat(revision("jobgate.provider.openai.image-model = gpt-image-1.5")).isNotEqualTo(base);
        assertThat(revision("jobgate.provider.openai.image-quality = high")).isNotEqualTo(base);
        assertThat(revision("jobgate.provider.openai.size.portrait = 1024x1792")).isNotEqualTo(base);
        assertThat(revision("jobgate.provider.openai.base-url = https://proxy.example.com/v1")).isNotEqualTo(base);
        // The issue's example: the environment (here a system property, read the same way) sets the model.
        System.setProperty(MODEL, "gpt-image-1-mini");
        assertThat(revision("")).isNotEqualTo(base);
    }

    @Test
    void theRouteFileItselfIsPartOfTheRevision() throws Exception {
        String text = Files.readString(Path.of(ROUTE));
        assertThat(revision("", text + "\n# a changed adapter\n")).isNotEqualTo(revision("", text));
    }

    @Test
    void secretsPricesLimitsAndPortsAreNotPartOfIt() throws Exception {
        String base = revision("");
        assertThat(revision("jobgate.provider.openai.api-key = sk-one")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.api-key = sk-two")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.price.image-micros = 1")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.max-concurrency = 2")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.base-url = https://api.openai.com:443/v1/")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.base-url = https://user:secret@api.openai.com/v1")).isEqualTo(base);
        assertThat(revision("jobgate.provider.openai.revision.image = images-x")).startsWith("images-x@")
                .endsWith(base.substring(base.indexOf('@')));
    }

    @Test
    void eachOperationHasItsOwnRevision() throws Exception {
        revision("");
        ProviderCatalog catalog = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
        catalog.readAdapterSources(name -> AdapterSource.of(name, "x"));
        Provider openai = catalog.find("openai").orElseThrow();
        assertThat(openai.revision("transcription")).startsWith("openai-transcription-2@");
        assertThat(openai.revision("transcription").substring(23)).isNotEqualTo(openai.revision("image").substring(17));
    }

    @Test
    void aSettingItsRouteReadsCountsWhenOnlyTheEnvironmentGivesIt() throws Exception {
        // A candidate route reading an entry no provider file names: given by the environment alone (here its
        // system property, which the catalog reads the same way), it shapes the candidate's revision.
        String key = "jobgate.provider.openai.candidate-image-model";
        String candidateRoute = Files.readString(Path.of(ROUTE)).replace("{{" + MODEL + "}}", "{{" + key + "}}");
        Files.writeString(dir.resolve("openai.properties"), Files.readString(Path.of("config/providers/openai.properties")));
        ProviderCatalog none = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
        AdapterSource candidate = AdapterSource.of("openai", candidateRoute);
        Provider plain = none.find("openai").orElseThrow();
        assertThat(none.settingsReadBy(plain, candidate)).as("nothing from the environment").isSameAs(plain.settings());
        try {
            // The environment is read once per settings read (each process has its own).
            System.setProperty(key, "gpt-image-1.5");
            ProviderCatalog catalog = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
            Provider openai = catalog.find("openai").orElseThrow();
            java.util.Map<String, String> first = catalog.settingsReadBy(openai, candidate);
            assertThat(first).containsEntry("candidate-image-model", "gpt-image-1.5");
            assertThat(catalog.settingsReadBy(openai, candidate)).as("made once").isSameAs(first);
            String one = RevisionIdentity.of("c", candidate, first, "image");
            System.setProperty(key, "gpt-image-2"); // another process's environment: read when its settings are
            ProviderCatalog other = ProviderCatalog.load(List.of(dir), new Settings(new DefaultCamelContext()));
            String two = RevisionIdentity.of("c", candidate, other.settingsReadBy(other.find("openai").orElseThrow(), candidate), "image");
            assertThat(two).isNotEqualTo(one);
        } finally {
            System.clearProperty(key);
        }
    }
}
