package io.jobgate.provider;

import java.nio.file.Path;
import java.util.List;

import io.jobgate.common.ApiProblem;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A provider's limit on a job's source upload ({@code max-input-bytes}, e.g. OpenAI's 25 MB for an
 * audio file) is decided at admission, before the 202: a named provider the upload exceeds refuses it
 * with {@code input_too_large} (the limit, the providers that take it); without a name the job goes to
 * the first provider that takes it. Never a job that fails after admission for its size.
 */
class ProviderInputLimitsTest {

    @TempDir
    Path dir;

    void provider(String name, String extra) throws Exception {
        ProviderFiles.write(dir, name, "kinds = transcription\nprice.audio-minute-micros = 6000\n" + extra);
    }

    ProviderCatalog catalog(String defaultTranscription) throws Exception {
        return ProviderFiles.catalog(dir, "jobgate.providers.default.transcription", defaultTranscription);
    }

    static Preset callTranscript() throws Exception {
        return PresetCatalog.load(Path.of("config/presets")).resolve("call-transcript", null);
    }

    @Test
    void aNamedProviderRefusesAnUploadBeyondItsLimitNamingTheLimitAndWhoTakesIt() throws Exception {
        provider("whisper", "max-input-bytes = 1000\n");
        provider("roomy", "");
        ProviderCatalog catalog = catalog("whisper");
        Preset preset = callTranscript();

        assertThat(catalog.choose("whisper", preset, null, 1000).name()).as("at the limit").isEqualTo("whisper");
        assertThatThrownBy(() -> catalog.choose("whisper", preset, null, 1001)).isInstanceOfSatisfying(ApiProblem.class, p -> {
            assertThat(p.status()).isEqualTo(422);
            assertThat(p.code()).isEqualTo("input_too_large");
            assertThat(p.members()).containsEntry("max_bytes", 1000L).containsEntry("providers", List.of("roomy"))
                    .containsEntry("field", "upload_id");
            assertThat(p.getMessage()).contains("'whisper'", "1000 bytes", "1001 bytes", "roomy");
        });
    }

    @Test
    void withoutANameAnUploadBeyondTheDefaultsLimitGoesToAProviderThatTakesIt() throws Exception {
        provider("whisper", "max-input-bytes = 1000\n");
        provider("roomy", "");
        ProviderCatalog catalog = catalog("whisper");
        Preset preset = callTranscript();

        assertThat(catalog.choose(null, preset, null, 999).name()).as("the default while it takes it").isEqualTo("whisper");
        assertThat(catalog.choose(null, preset, null, 5000).name()).as("beyond its limit").isEqualTo("roomy");
    }

    @Test
    void anUploadNoProviderTakesIsRefusedWithTheLargestLimit() throws Exception {
        provider("whisper", "max-input-bytes = 1000\n");
        provider("azure", "max-input-bytes = 2000\n");
        ProviderCatalog catalog = catalog("whisper");

        assertThatThrownBy(() -> catalog.choose(null, callTranscript(), null, 3000)).isInstanceOfSatisfying(ApiProblem.class, p -> {
            assertThat(p.code()).isEqualTo("input_too_large");
            assertThat(p.members()).containsEntry("max_bytes", 2000L).containsEntry("providers", List.of());
        });
    }

    @Test
    void aLimitThatIsNotAPositiveNumberStopsTheStartNamingTheSetting() throws Exception {
        provider("whisper", "max-input-bytes = 25MB\n");
        assertThatThrownBy(() -> catalog("whisper")).hasMessageContaining("max-input-bytes");
    }
}
