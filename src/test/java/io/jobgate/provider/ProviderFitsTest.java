package io.jobgate.provider;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.jobgate.common.ApiProblem;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Which provider may serve which (preset, aspect class): its size table declares the class, at the
 * class's exact ratio, at least its minimum. Checked at start (a default that cannot stops it, an
 * optional one is left out for that class) and at admission (422 with a stable code).
 */
class ProviderFitsTest {

    @TempDir
    Path dir;

    static final String GPT = "size.square = 1024x1024\nsize.landscape = 1536x1024\nsize.portrait = 1024x1536\n";
    static final String FLUX = "size.square = 1024x1024\nsize.landscape = 1440x960\nsize.portrait = 960x1440\n";
    static final String HALF = "size.square = 1024x1024\nsize.landscape = 1536x1024\n";

    void provider(String name, String sizes) throws Exception {
        ProviderFiles.write(dir, name, "kinds = image\nprice.image-micros = 1000\n" + sizes);
    }

    ProviderCatalog catalog(String defaultImage) throws Exception {
        return ProviderFiles.catalog(dir, "jobgate.providers.default.image", defaultImage);
    }

    static PresetCatalog presets() throws Exception {
        return PresetCatalog.load(Path.of("config/presets"));
    }

    @Test
    void aDefaultProviderThatCannotServeAClassOfItsKindStopsTheStartNamingThePair() throws Exception {
        provider("gpt", GPT);
        provider("flux", FLUX);
        // v1 presets promised exact 1024x1536 portraits: flux's 960x1440 is below that minimum.
        assertThatThrownBy(() -> catalog("flux").verifyFits(presets().all()))
                .hasMessageContaining("default provider for image 'flux'").hasMessageContaining("invoice-clean v1 portrait")
                .hasMessageContaining("960x1440");
    }

    @Test
    void anOptionalProviderIsLeftOutForTheClassesItCannotServeOnly() throws Exception {
        provider("gpt", GPT);
        provider("half", HALF);
        provider("flux", FLUX);
        List<String> leftOut = catalog("gpt").verifyFits(presets().all());
        assertThat(leftOut).anyMatch(l -> l.startsWith("half left out for invoice-clean v2 portrait")
                && l.contains("declares no portrait"));
        assertThat(leftOut).anyMatch(l -> l.startsWith("flux left out for invoice-scan v1 landscape"));
        assertThat(leftOut).noneMatch(l -> l.contains("v2") && l.startsWith("flux"));
        assertThat(leftOut).noneMatch(l -> l.startsWith("gpt"));
    }

    @Test
    void admissionRefusesAProviderThatDoesNotRunOrDoesNotRenderTheClassAndPicksOneThatCanOtherwise() throws Exception {
        provider("gpt", GPT);
        provider("half", HALF);
        provider("flux", FLUX);
        ProviderCatalog catalog = catalog("gpt");
        Preset v2 = presets().resolve("invoice-clean", 2);

        assertThatThrownBy(() -> catalog.choose("half", v2, "portrait")).isInstanceOfSatisfying(ApiProblem.class, p -> {
            assertThat(p.status()).isEqualTo(422);
            assertThat(p.code()).isEqualTo("aspect_class_not_rendered");
            assertThat(p.members()).containsEntry("renders", List.of("square", "landscape"));
        });
        assertThat(catalog.choose("half", v2, "square").name()).isEqualTo("half");
        assertThat(catalog.choose("flux", v2, "portrait").name()).isEqualTo("flux");
        assertThat(catalog.choose(null, v2, "portrait").name()).isEqualTo("gpt");

        catalog.watchAdapters(name -> name.equals("gpt") ? "no adapter route is loaded for direct:provider-gpt" : null);
        assertThatThrownBy(() -> catalog.choose("gpt", v2, "square")).isInstanceOfSatisfying(ApiProblem.class, p -> {
            assertThat(p.code()).isEqualTo("provider_not_running");
            assertThat(p.getMessage()).contains("no adapter route is loaded");
        });
        // Without a name, the job goes to one that runs and renders its class.
        assertThat(catalog.choose(null, v2, "portrait").name()).isEqualTo("flux");
        assertThat(catalog.choose(null, v2, "square").name()).isIn("flux", "half");
    }

    @Test
    void aSizeTableWithAClassNoPresetKnowsOrAnUnreadableSizeIsABadSetting() throws Exception {
        provider("odd", "size.panorama = 2048x512\n");
        assertThatThrownBy(() -> catalog("odd")).hasMessageContaining("jobgate.provider.odd.size.panorama");
        Files.delete(dir.resolve("odd.properties"));
        provider("odd", "size.square = 1024\n");
        assertThatThrownBy(() -> catalog("odd")).hasMessageContaining("jobgate.provider.odd.size.square");
    }
}
