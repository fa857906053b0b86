package io.jobgate.output;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;

import javax.imageio.ImageIO;
import javax.imageio.ImageReader;
import javax.imageio.stream.ImageInputStream;

import io.jobgate.common.Json;
import io.jobgate.preset.AspectClass;
import io.jobgate.preset.PixelSize;
import io.jobgate.preset.Preset;
import io.jobgate.upload.MediaTypes;

/**
 * Is a provider's output what the preset asked for? The media type by magic bytes (never the
 * provider's word), and for images the exact pixel size the adapter declares for the job's aspect
 * class (its size table), or, where it declares none, the class's exact ratio and minimum.
 */
public final class OutputCheck {

    private OutputCheck() {
    }

    /** A checked output: its real media type and, for images and video, its size; for video its real duration. */
    public record Checked(String mediaType, Integer width, Integer height, Long durationMillis) {
        public Checked(String mediaType, Integer width, Integer height) {
            this(mediaType, width, height, null);
        }
    }

    /**
     * A video, read from its container while it streamed to quarantine ({@link Mp4Probe}): an ISO BMFF
     * file (ftyp first) the preset expects, the exact frame size of the adapter's size table, and the
     * ordered duration within the provider's tolerance.
     */
    public static Checked checkVideo(Mp4Probe.Scan scan, Preset preset, PixelSize size, OutputSubject.Video video) throws Refused {
        if (!preset.outputMediaTypes().contains(MediaTypes.MP4)) {
            throw new Refused("output is a video, the preset expects " + preset.outputMediaTypes());
        }
        if (scan.facts() == null) {
            throw new Refused("output is not a readable MP4: " + scan.unreadable());
        }
        Mp4Probe.VideoFacts f = scan.facts();
        if (size != null && (f.width() != size.width() || f.height() != size.height())) {
            throw new Refused("output is " + f.width() + "x" + f.height() + ", the adapter renders the order at " + size);
        }
        if (video != null && Math.abs(f.durationMillis() - video.durationSeconds() * 1000L) > video.toleranceMillis()) {
            throw new Refused("output lasts " + f.durationMillis() + " ms, the order is " + video.durationSeconds()
                    + " s (tolerance " + video.toleranceMillis() + " ms)");
        }
        return new Checked(MediaTypes.MP4, f.width(), f.height(), f.durationMillis());
    }

    /** Why an output is refused ({@code invalid_output}). */
    public static final class Refused extends Exception {
        Refused(String message) {
            super(message);
        }
    }

    public static Checked check(byte[] bytes, Preset preset, AspectClass aspect, PixelSize size) throws Refused {
        List<String> expected = preset.outputMediaTypes();
        Optional<String> sniffed = MediaTypes.sniff(bytes);
        if (sniffed.isPresent() && sniffed.get().startsWith("image/")) {
            if (!expected.contains(sniffed.get())) {
                throw new Refused("output is " + sniffed.get() + ", the preset expects " + expected);
            }
            int[] dims = dimensions(bytes, sniffed.get());
            if (size != null && (dims[0] != size.width() || dims[1] != size.height())) {
                throw new Refused("output is " + dims[0] + "x" + dims[1] + ", the adapter renders the aspect class at " + size);
            }
            String misfit = size == null && aspect != null ? aspect.misfit(new PixelSize(dims[0], dims[1])) : null;
            if (misfit != null) {
                throw new Refused("output " + misfit + " (aspect class " + aspect.ratio() + ")");
            }
            return new Checked(sniffed.get(), dims[0], dims[1]);
        }
        if (expected.contains("application/json")) {
            try {
                Json.MAPPER.readTree(bytes);
                return new Checked("application/json", null, null);
            } catch (IOException e) {
                throw new Refused("output is not the JSON the preset expects");
            }
        }
        if (expected.stream().anyMatch(t -> t.startsWith("text/")) && sniffed.isEmpty()) {
            return new Checked(expected.stream().filter(t -> t.startsWith("text/")).findFirst().orElseThrow(), null, null);
        }
        throw new Refused("output is " + sniffed.orElse("of an unknown type") + ", the preset expects " + expected);
    }

    /** Width and height from the image's header (WebP by its chunk header; PNG and JPEG by ImageIO without decoding). */
    static int[] dimensions(byte[] bytes, String mediaType) throws Refused {
        if (mediaType.equals(MediaTypes.WEBP)) {
            return webp(bytes);
        }
        // Cached in memory: ImageIO's own choice for a stream is a temporary file per check (its disk cache is on by default).
        try (ImageInputStream in = new javax.imageio.stream.MemoryCacheImageInputStream(new ByteArrayInputStream(bytes))) {
            Iterator<ImageReader> readers = ImageIO.getImageReaders(in);
            if (!readers.hasNext()) {
                throw new Refused("output image header unreadable");
            }
            ImageReader reader = readers.next();
            try {
                reader.setInput(in, true, true);
                return new int[] {reader.getWidth(0), reader.getHeight(0)};
            } finally {
                reader.dispose();
            }
        } catch (IOException e) {
            throw new Refused("output image header unreadable");
        }
    }

    private static int[] webp(byte[] b) throws Refused {
        if (b.length < 30) {
            throw new Refused("output WebP too short");
        }
        String chunk = new String(b, 12, 4, java.nio.charset.StandardCharsets.US_ASCII);
        switch (chunk) {
            case "VP8X":
                return new int[] {1 + u24(b, 24), 1 + u24(b, 27)};
            case "VP8L": {
                int bits = (b[21] & 0xFF) | (b[22] & 0xFF) << 8 | (b[23] & 0xFF) << 16 | (b[24] & 0xFF) << 24;
                return new int[] {1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)};
            }
            case "VP8 ":
                return new int[] {((b[26] & 0xFF) | (b[27] & 0xFF) << 8) & 0x3FFF, ((b[28] & 0xFF) | (b[29] & 0xFF) << 8) & 0x3FFF};
            default:
                throw new Refused("output WebP header unreadable");
        }
    }

    private static int u24(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8 | (b[at + 2] & 0xFF) << 16;
    }
}
