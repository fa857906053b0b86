package io.jobgate.video;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.jobgate.output.Mp4Probe;
import io.jobgate.output.OutputCheck;
import io.jobgate.output.OutputSubject;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.simulator.VideoRenderer;
import io.jobgate.upload.MediaTypes;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The simulator's clips are real MP4s, and the check reads their duration and frame size from the container. */
class Mp4ProbeTest {

    static byte[] clip(int width, int height, int seconds) {
        return VideoRenderer.render(JsonNodeFactory.instance.objectNode().put("invoice_id", "V-1").put("total", 12.5)
                .put("currency", "EUR").put("supplier_name", "Clip GmbH"), width, height, seconds);
    }

    static Mp4Probe.Scan scan(byte[] bytes) throws Exception {
        ByteArrayOutputStream copy = new ByteArrayOutputStream();
        Mp4Probe.Scan scan = Mp4Probe.copy(new ByteArrayInputStream(bytes), copy, Long.MAX_VALUE);
        assertThat(copy.toByteArray()).isEqualTo(bytes); // copied through whole, whatever it is
        return scan;
    }

    @Test
    void aRenderedClipIsAnMp4OfItsSizeAndDuration() throws Exception {
        byte[] mp4 = clip(1280, 720, 4);
        assertThat(MediaTypes.sniff(mp4)).contains(MediaTypes.MP4);
        Mp4Probe.Scan scan = scan(mp4);
        assertThat(scan.unreadable()).isNull();
        assertThat(scan.bytes()).isEqualTo(mp4.length);
        assertThat(scan.facts().width()).isEqualTo(1280);
        assertThat(scan.facts().height()).isEqualTo(720);
        assertThat(scan.facts().durationMillis()).isEqualTo(4000);
    }

    @Test
    void theCheckRefusesAWrongFrameSizeOrDurationAndWhatIsNotAnMp4() throws Exception {
        Preset clip = PresetCatalog.load(Path.of("config/presets")).resolve("invoice-clip", 1);
        Mp4Probe.Scan scan = scan(clip(720, 1280, 4));
        OutputCheck.Checked ok = OutputCheck.checkVideo(scan, clip, new PixelSize(720, 1280), new OutputSubject.Video(4, 100));
        assertThat(ok).isEqualTo(new OutputCheck.Checked("video/mp4", 720, 1280, 4000L));

        assertThatThrownBy(() -> OutputCheck.checkVideo(scan, clip, new PixelSize(1280, 720), new OutputSubject.Video(4, 100)))
                .hasMessageContaining("output is 720x1280, the adapter renders the order at 1280x720");
        assertThatThrownBy(() -> OutputCheck.checkVideo(scan, clip, new PixelSize(720, 1280), new OutputSubject.Video(6, 250)))
                .hasMessageContaining("output lasts 4000 ms, the order is 6 s");
        Mp4Probe.Scan html = scan("<html>busy</html>".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> OutputCheck.checkVideo(html, clip, null, null)).hasMessageContaining("no ISO BMFF ftyp box");
        byte[] cut = java.util.Arrays.copyOf(clip(1280, 720, 4), 2000);
        assertThat(scan(cut).unreadable()).isNotNull();
    }
}
