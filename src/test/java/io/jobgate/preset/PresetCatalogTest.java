package io.jobgate.preset;

import java.nio.file.Files;
import java.nio.file.Path;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PresetCatalogTest {

    @TempDir
    Path dir;

    @Test
    void theShippedPresetsLoad() throws Exception {
        PresetCatalog catalog = PresetCatalog.load(Path.of("config/presets"));

        assertThat(catalog.resolve("invoice-clean", null).aspectClasses()).containsKeys("portrait", "square", "landscape");
        assertThat(catalog.resolve("invoice-scan", 1).outputMediaTypes()).containsExactly("image/jpeg");
        Preset transcript = catalog.resolve("call-transcript", null);
        assertThat(transcript.kind()).isEqualTo("transcription");
        assertThat(transcript.sourceRequired()).isTrue();
        assertThat(transcript.sourceMediaTypes()).containsExactly("audio/wav", "audio/mpeg");
    }

    @Test
    void aPublishedVersionCannotChangeUnderTheSameNumber() throws Exception {
        String id = "immutable-" + System.nanoTime();
        Path file = dir.resolve(id).resolve("v1.yaml");
        Files.createDirectories(file.getParent());
        String yaml = """
                id: %s
                version: 1
                kind: image
                aspect_classes: {square: {width: 512, height: 512}}
                output: {media_types: [image/png]}
                inputs: {title: {type: string, max_length: 40, required: true}}
                template: "Poster titled {{title}}"
                """.formatted(id);
        Files.writeString(file, yaml);
        try (HikariDataSource ds = TestDatabase.migratedPool(2)) {
            JdbcTemplate jdbc = new JdbcTemplate(ds);
            PresetCatalog.load(dir).verifyImmutable(jdbc);
            PresetCatalog.load(dir).verifyImmutable(jdbc); // unchanged: fine at every start

            Files.writeString(file, yaml.replace("Poster titled", "Flyer titled"));
            assertThatThrownBy(() -> PresetCatalog.load(dir).verifyImmutable(jdbc))
                    .hasMessageContaining("changed after it was published").hasMessageContaining("add v2");
        }
    }

    @Test
    void aStringFieldWithoutACapIsRejectedAtLoad() throws Exception {
        Path file = dir.resolve("uncapped").resolve("v1.yaml");
        Files.createDirectories(file.getParent());
        Files.writeString(file, """
                id: uncapped
                version: 1
                kind: image
                aspect_classes: {square: {width: 512, height: 512}}
                inputs: {title: {type: string}}
                template: "{{title}}"
                """);
        assertThatThrownBy(() -> PresetCatalog.load(dir)).hasMessageContaining("needs max_length");
    }
}
