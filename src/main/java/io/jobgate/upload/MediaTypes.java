package io.jobgate.upload;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The media types jobgate accepts, recognised by their magic bytes rather than by what the client
 * declares: PNG, JPEG, WebP, PDF, WAV, MP3.
 */
public final class MediaTypes {

    public static final String PNG = "image/png";
    public static final String JPEG = "image/jpeg";
    public static final String WEBP = "image/webp";
    public static final String PDF = "application/pdf";
    public static final String WAV = "audio/wav";
    public static final String MP3 = "audio/mpeg";
    /** Outputs only (video jobs): not an upload type. */
    public static final String MP4 = "video/mp4";

    public static final List<String> SUPPORTED = List.of(PNG, JPEG, WEBP, PDF, WAV, MP3);

    private static final Map<String, String> ALIASES = Map.of(
            "image/jpg", JPEG, "image/pjpeg", JPEG, "audio/x-wav", WAV, "audio/wave", WAV,
            "audio/vnd.wave", WAV, "audio/mp3", MP3, "audio/x-mpeg", MP3);

    private MediaTypes() {
    }

    /** The declared type without parameters, lower-case, aliases folded ({@code image/jpg} → {@code image/jpeg}). */
    public static String normalize(String contentType) {
        if (contentType == null) {
            return "";
        }
        int semicolon = contentType.indexOf(';');
        String bare = (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim().toLowerCase(Locale.ROOT);
        return ALIASES.getOrDefault(bare, bare);
    }

    /** The file extension of a media type, for object keys and upload file names ({@code .bin} when unknown). */
    public static String extension(String mediaType) {
        String type = normalize(mediaType);
        return switch (type) {
            case PNG -> ".png";
            case JPEG -> ".jpg";
            case WEBP -> ".webp";
            case PDF -> ".pdf";
            case WAV -> ".wav";
            case MP3 -> ".mp3";
            case MP4 -> ".mp4";
            case "application/json" -> ".json";
            default -> type.startsWith("text/") ? ".txt" : ".bin";
        };
    }

    /** The type the bytes really have, if it is one we know. */
    public static Optional<String> sniff(byte[] b) {
        if (startsWith(b, 0, 0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A)) {
            return Optional.of(PNG);
        }
        if (startsWith(b, 0, 0xFF, 0xD8, 0xFF)) {
            return Optional.of(JPEG);
        }
        if (startsWith(b, 0, 'R', 'I', 'F', 'F') && startsWith(b, 8, 'W', 'E', 'B', 'P')) {
            return Optional.of(WEBP);
        }
        if (startsWith(b, 0, 'R', 'I', 'F', 'F') && startsWith(b, 8, 'W', 'A', 'V', 'E')) {
            return Optional.of(WAV);
        }
        if (startsWith(b, 4, 'f', 't', 'y', 'p')) {
            return Optional.of(MP4); // ISO BMFF: the file type box comes first
        }
        if (startsWith(b, 0, '%', 'P', 'D', 'F', '-')) {
            return Optional.of(PDF);
        }
        if (startsWith(b, 0, 'I', 'D', '3') || Mp3Frames.isFrameHeader(b, 0)) {
            return Optional.of(MP3);
        }
        return Optional.empty();
    }

    private static boolean startsWith(byte[] bytes, int offset, int... magic) {
        if (bytes.length < offset + magic.length) {
            return false;
        }
        for (int i = 0; i < magic.length; i++) {
            if ((bytes[offset + i] & 0xFF) != magic[i]) {
                return false;
            }
        }
        return true;
    }
}
