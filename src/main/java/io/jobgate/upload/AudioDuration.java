package io.jobgate.upload;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Duration of an uploaded audio file, which prices a transcription at admission. */
public final class AudioDuration {

    private AudioDuration() {
    }

    /** Milliseconds of audio, or null when the type has no duration or the header is unreadable. */
    public static Long millis(String mediaType, byte[] bytes) {
        return switch (mediaType) {
            case MediaTypes.WAV -> wav(bytes);
            case MediaTypes.MP3 -> Mp3Frames.durationMillis(bytes);
            default -> null;
        };
    }

    /** Walks the RIFF chunks: {@code fmt } gives the byte rate, {@code data} the length. */
    static Long wav(byte[] bytes) {
        ByteBuffer buf = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long byteRate = 0;
        int pos = 12;
        while (pos + 8 <= bytes.length) {
            String id = new String(bytes, pos, 4, java.nio.charset.StandardCharsets.US_ASCII);
            long size = Integer.toUnsignedLong(buf.getInt(pos + 4));
            if (id.equals("fmt ") && pos + 20 <= bytes.length) {
                byteRate = Integer.toUnsignedLong(buf.getInt(pos + 8 + 8));
            } else if (id.equals("data")) {
                long dataBytes = Math.min(size, bytes.length - pos - 8L);
                return byteRate > 0 ? dataBytes * 1000 / byteRate : null;
            }
            pos += 8 + (int) size + (int) (size & 1);
        }
        return null;
    }
}
