package io.jobgate.support;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import javax.imageio.ImageIO;

/** Real media files for upload tests, made in memory. */
public final class Samples {

    private Samples() {
    }

    public static byte[] png(int width, int height) {
        return image("png", width, height);
    }

    /**
     * A PNG whose first {@code noisyRows} rows are noise: it does not compress, so its size is what a test of
     * outputs' bytes needs (about 1.5 bytes a pixel of those rows), where a blank one is a few hundred bytes.
     */
    public static byte[] noisyPng(int width, int height, int noisyRows) {
        try {
            BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
            java.util.Random random = new java.util.Random(7);
            for (int y = 0; y < Math.min(noisyRows, height); y++) {
                for (int x = 0; x < width; x++) {
                    img.setRGB(x, y, random.nextInt() & 0x0f0f0f);
                }
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ImageIO.write(img, "png", out);
            return out.toByteArray();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    public static byte[] jpeg(int width, int height) {
        return image("jpg", width, height);
    }

    private static byte[] image(String format, int width, int height) {
        try {
            BufferedImage img = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
            img.setRGB(0, 0, 0xFF0000);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ImageIO.write(img, format, out);
            return out.toByteArray();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** 16-bit mono PCM WAV of the given length at 8 kHz (16 000 bytes a second). */
    public static byte[] wav(int millis) {
        int sampleRate = 8000;
        int dataBytes = sampleRate * 2 * millis / 1000;
        ByteBuffer b = ByteBuffer.allocate(44 + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.put("RIFF".getBytes()).putInt(36 + dataBytes).put("WAVE".getBytes());
        b.put("fmt ".getBytes()).putInt(16).putShort((short) 1).putShort((short) 1).putInt(sampleRate)
                .putInt(sampleRate * 2).putShort((short) 2).putShort((short) 16);
        b.put("data".getBytes()).putInt(dataBytes);
        return b.array();
    }

    /** A minimal PDF header and body. */
    public static byte[] pdf() {
        return "%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n".getBytes();
    }

    /** An MPEG-1 Layer III stream at 128 kbit/s: frame headers then silence. */
    public static byte[] mp3(int frames) {
        int frameBytes = 417; // 144 * 128000 / 44100
        byte[] out = new byte[frames * frameBytes];
        for (int i = 0; i < frames; i++) {
            out[i * frameBytes] = (byte) 0xFF;
            out[i * frameBytes + 1] = (byte) 0xFB;
            out[i * frameBytes + 2] = (byte) 0x90;
            out[i * frameBytes + 3] = (byte) 0x64;
        }
        return out;
    }
}
