package io.jobgate.output;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;

import org.mp4parser.IsoFile;
import org.mp4parser.boxes.iso14496.part12.MovieBox;
import org.mp4parser.boxes.iso14496.part12.MovieHeaderBox;
import org.mp4parser.boxes.iso14496.part12.TrackBox;
import org.mp4parser.boxes.iso14496.part12.TrackHeaderBox;

/**
 * Reads an MP4 (ISO BMFF) while copying it through, in one pass and in bounded memory: the
 * top-level boxes are walked by their headers; the small ones that describe the movie ({@code ftyp},
 * {@code moov}) are kept and parsed with mp4parser's isoparser, the media data ({@code mdat}, any
 * size) only flows through. So a clip of hundreds of megabytes goes from the provider to
 * quarantine without being held, and its duration and frame size come from the container itself.
 */
public final class Mp4Probe {

    /** A moov box bigger than this is not a clip of ours (it indexes hours of media). */
    static final int MAX_KEPT_BYTES = 32 * 1024 * 1024;
    private static final int CHUNK = 64 * 1024;

    private Mp4Probe() {
    }

    /** What the container says: its major brand, the movie's duration and the video track's frame size. */
    public record VideoFacts(String brand, long durationMillis, int width, int height) {
    }

    /**
     * The result of a copy: how many bytes went through, and the facts, or why the bytes are not a
     * readable MP4 (the bytes were still copied whole: a refused output is kept as evidence).
     */
    public record Scan(long bytes, VideoFacts facts, String unreadable) {
    }

    /** The output is longer than the cap: copying stopped there. */
    public static final class TooLarge extends IOException {
        TooLarge(long cap) {
            super("output exceeds " + cap + " bytes");
        }
    }

    /** Copies {@code in} to {@code out} (at most {@code maxBytes}) and reads the MP4's facts on the way. */
    public static Scan copy(InputStream in, OutputStream out, long maxBytes) throws IOException {
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        Counter counted = new Counter(out, maxBytes);
        String unreadable = null;
        boolean first = true;
        byte[] header = new byte[16];
        while (unreadable == null) {
            int n = in.readNBytes(header, 0, 8);
            if (n == 0) {
                break;
            }
            counted.write(header, 0, n);
            if (n < 8) {
                unreadable = "the container ends inside a box header";
                break;
            }
            long size = u32(header, 0);
            String type = new String(header, 4, 4, StandardCharsets.ISO_8859_1);
            int headerLength = 8;
            if (size == 1) {
                if (in.readNBytes(header, 8, 8) < 8) {
                    counted.write(header, 8, 8);
                    unreadable = "the container ends inside a box header";
                    break;
                }
                counted.write(header, 8, 8);
                size = u64(header, 8);
                headerLength = 16;
            }
            if (first && !type.equals("ftyp")) {
                unreadable = "no ISO BMFF ftyp box at the start (not an MP4)";
                break;
            }
            first = false;
            if (size != 0 && size < headerLength) {
                unreadable = "box '" + printable(type) + "' has an impossible size " + size;
                break;
            }
            long payload = size == 0 ? Long.MAX_VALUE : size - headerLength; // 0: the box runs to the end
            if (type.equals("ftyp") || type.equals("moov")) {
                if (payload > MAX_KEPT_BYTES) {
                    unreadable = "box '" + type + "' of " + size + " bytes is too large for a clip";
                    break;
                }
                byte[] body = in.readNBytes((int) payload);
                counted.write(body);
                if (body.length < payload && size != 0) {
                    unreadable = "the container ends inside box '" + type + "'";
                    break;
                }
                kept.write(header, 0, 4);
                kept.write(header, 4, 4);
                if (headerLength == 16) {
                    kept.write(header, 8, 8);
                }
                kept.write(body);
            } else if (through(in, counted, payload) < payload && size != 0) {
                unreadable = "the container ends inside box '" + printable(type) + "'";
                break;
            }
        }
        // Whatever is left (after an unreadable part) is kept too: a refused output stays whole in quarantine.
        in.transferTo(counted);
        if (unreadable == null) {
            try {
                return new Scan(counted.count, facts(kept.toByteArray()), null);
            } catch (IOException | RuntimeException e) {
                unreadable = e.getMessage() == null ? "the movie header is unreadable" : e.getMessage();
            }
        }
        return new Scan(counted.count, null, unreadable);
    }

    /** The facts of the kept boxes, parsed with isoparser. */
    static VideoFacts facts(byte[] boxes) throws IOException {
        try (IsoFile iso = new IsoFile(Channels.newChannel(new ByteArrayInputStream(boxes)))) {
            org.mp4parser.boxes.iso14496.part12.FileTypeBox ftyp = iso.getBoxes(
                    org.mp4parser.boxes.iso14496.part12.FileTypeBox.class).stream().findFirst().orElse(null);
            MovieBox moov = iso.getMovieBox();
            if (ftyp == null || moov == null || moov.getMovieHeaderBox() == null) {
                throw new IllegalStateException("no movie header (moov/mvhd) in the container");
            }
            MovieHeaderBox mvhd = moov.getMovieHeaderBox();
            if (mvhd.getTimescale() <= 0) {
                throw new IllegalStateException("the movie header has no timescale");
            }
            long millis = Math.round(mvhd.getDuration() * 1000.0 / mvhd.getTimescale());
            for (TrackBox track : moov.getBoxes(TrackBox.class)) {
                String handler = track.getMediaBox() == null || track.getMediaBox().getHandlerBox() == null ? null
                        : track.getMediaBox().getHandlerBox().getHandlerType();
                TrackHeaderBox tkhd = track.getTrackHeaderBox();
                if ("vide".equals(handler) && tkhd != null) {
                    return new VideoFacts(ftyp.getMajorBrand(), millis, (int) Math.round(tkhd.getWidth()),
                            (int) Math.round(tkhd.getHeight()));
                }
            }
            throw new IllegalStateException("no video track in the container");
        }
    }

    private static long through(InputStream in, OutputStream out, long length) throws IOException {
        byte[] buffer = new byte[CHUNK];
        long copied = 0;
        while (copied < length) {
            int n = in.read(buffer, 0, (int) Math.min(buffer.length, length - copied));
            if (n < 0) {
                break;
            }
            out.write(buffer, 0, n);
            copied += n;
        }
        return copied;
    }

    private static long u32(byte[] b, int at) {
        return ((long) (b[at] & 0xFF) << 24) | ((b[at + 1] & 0xFF) << 16) | ((b[at + 2] & 0xFF) << 8) | (b[at + 3] & 0xFF);
    }

    private static long u64(byte[] b, int at) {
        return (u32(b, at) << 32) | u32(b, at + 4);
    }

    private static String printable(String fourcc) {
        return fourcc.replaceAll("[^\\x20-\\x7E]", "?");
    }

    /** Counts what passes and stops at the cap. */
    private static final class Counter extends OutputStream {
        private final OutputStream out;
        private final long cap;
        long count;

        Counter(OutputStream out, long cap) {
            this.out = out;
            this.cap = cap;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (count + len > cap) {
                throw new TooLarge(cap);
            }
            out.write(b, off, len);
            count += len;
        }
    }
}
