package io.jobgate.output;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import io.jobgate.preset.AspectClass;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The output checks: media type by magic bytes, exact pixel size, JSON for transcripts. */
class OutputCheckTest {

    static Preset preset(List<String> outputTypes) {
        return new Preset("p", 1, "image", "t", Map.of(), Map.of(), false, List.of(), outputTypes, 1, null, io.jobgate.preset.ProviderHints.NONE, "x");
    }

    static final AspectClass PORTRAIT_CLASS = AspectClass.ofRatio("2:3", 768, 1152);
    /** What gpt-image-1 renders portrait at (its size table). */
    static final PixelSize PORTRAIT = new PixelSize(1024, 1536);

    @Test
    void acceptsTheExpectedTypeAtTheExactSize() throws Exception {
        OutputCheck.Checked png = OutputCheck.check(Samples.png(1024, 1536), preset(List.of("image/png")), PORTRAIT_CLASS, PORTRAIT);
        assertThat(png).isEqualTo(new OutputCheck.Checked("image/png", 1024, 1536));
        OutputCheck.Checked jpeg = OutputCheck.check(Samples.jpeg(1024, 1536), preset(List.of("image/jpeg")), PORTRAIT_CLASS, PORTRAIT);
        assertThat(jpeg.mediaType()).isEqualTo("image/jpeg");
    }

    @Test
    void refusesAnotherTypeOrSizeWhateverTheProviderClaims() {
        assertThatThrownBy(() -> OutputCheck.check(Samples.jpeg(1024, 1536), preset(List.of("image/png")), PORTRAIT_CLASS, PORTRAIT))
                .isInstanceOf(OutputCheck.Refused.class).hasMessageContaining("image/jpeg");
        assertThatThrownBy(() -> OutputCheck.check(Samples.png(1023, 1536), preset(List.of("image/png")), PORTRAIT_CLASS, PORTRAIT))
                .hasMessageContaining("1023x1536");
        assertThatThrownBy(() -> OutputCheck.check("<html>rate limited</html>".getBytes(StandardCharsets.UTF_8),
                preset(List.of("image/png")), PORTRAIT_CLASS, PORTRAIT)).isInstanceOf(OutputCheck.Refused.class);
    }

    /** The size is the adapter's: another adapter's exact size of the same class is refused; without a table, ratio and minimum. */
    @Test
    void comparesWithTheAdaptersExactSizeElseTheClassesRatioAndMinimum() throws Exception {
        assertThatThrownBy(() -> OutputCheck.check(Samples.png(1024, 1536), preset(List.of("image/png")), PORTRAIT_CLASS,
                new PixelSize(960, 1440))).hasMessageContaining("1024x1536").hasMessageContaining("960x1440");
        assertThat(OutputCheck.check(Samples.png(960, 1440), preset(List.of("image/png")), PORTRAIT_CLASS, null))
                .isEqualTo(new OutputCheck.Checked("image/png", 960, 1440));
        assertThatThrownBy(() -> OutputCheck.check(Samples.png(1000, 1440), preset(List.of("image/png")), PORTRAIT_CLASS, null))
                .hasMessageContaining("2:3");
        assertThatThrownBy(() -> OutputCheck.check(Samples.png(512, 768), preset(List.of("image/png")), PORTRAIT_CLASS, null))
                .hasMessageContaining("minimum");
    }

    @Test
    void readsWebpSizesFromTheExtendedHeader() throws Exception {
        byte[] webp = new byte[30];
        System.arraycopy("RIFF".getBytes(StandardCharsets.US_ASCII), 0, webp, 0, 4);
        webp[4] = 22;
        System.arraycopy("WEBPVP8X".getBytes(StandardCharsets.US_ASCII), 0, webp, 8, 8);
        webp[16] = 10;
        int w = 1024 - 1;
        int h = 1536 - 1;
        webp[24] = (byte) w;
        webp[25] = (byte) (w >> 8);
        webp[27] = (byte) h;
        webp[28] = (byte) (h >> 8);
        assertThat(OutputCheck.check(webp, preset(List.of("image/webp")), PORTRAIT_CLASS, PORTRAIT))
                .isEqualTo(new OutputCheck.Checked("image/webp", 1024, 1536));
    }

    @Test
    void transcriptsMustBeJsonWhenThePresetSaysSo() throws Exception {
        Preset transcript = preset(List.of("application/json"));
        assertThat(OutputCheck.check("{\"text\": \"hello\"}".getBytes(StandardCharsets.UTF_8), transcript, null, null).mediaType())
                .isEqualTo("application/json");
        assertThatThrownBy(() -> OutputCheck.check("hello, plain prose".getBytes(StandardCharsets.UTF_8), transcript, null, null))
                .hasMessageContaining("JSON");
    }
}
