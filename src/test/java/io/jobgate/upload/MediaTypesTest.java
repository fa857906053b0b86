package io.jobgate.upload;

import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class MediaTypesTest {

    @Test
    void sniffsEachSupportedTypeFromItsBytes() {
        assertThat(MediaTypes.sniff(Samples.png(2, 2))).contains(MediaTypes.PNG);
        assertThat(MediaTypes.sniff(Samples.jpeg(2, 2))).contains(MediaTypes.JPEG);
        assertThat(MediaTypes.sniff(Samples.pdf())).contains(MediaTypes.PDF);
        assertThat(MediaTypes.sniff(Samples.wav(10))).contains(MediaTypes.WAV);
        assertThat(MediaTypes.sniff(Samples.mp3(2))).contains(MediaTypes.MP3);
        byte[] id3 = {'I', 'D', '3', 4, 0, 0, 0, 0, 0, 0};
        assertThat(MediaTypes.sniff(id3)).contains(MediaTypes.MP3);
        assertThat(MediaTypes.sniff("GIF89a....".getBytes())).isEmpty();
        assertThat(MediaTypes.sniff(new byte[] {(byte) 0x89, 'P'})).isEmpty();
    }

    @Test
    void normalizesDeclaredTypes() {
        assertThat(MediaTypes.normalize("Image/JPG; charset=binary")).isEqualTo(MediaTypes.JPEG);
        assertThat(MediaTypes.normalize("audio/x-wav")).isEqualTo(MediaTypes.WAV);
        assertThat(MediaTypes.normalize(null)).isEmpty();
    }

    @Test
    void measuresAudioDuration() {
        assertThat(AudioDuration.millis(MediaTypes.WAV, Samples.wav(61_000))).isEqualTo(61_000L);
        // 100 frames of 417 bytes at 128 kbit/s = 2.606 s
        assertThat(AudioDuration.millis(MediaTypes.MP3, Samples.mp3(100))).isEqualTo(2606L);
        assertThat(AudioDuration.millis(MediaTypes.PNG, Samples.png(2, 2))).isNull();
    }
}
