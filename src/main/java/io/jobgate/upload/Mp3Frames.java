package io.jobgate.upload;

/** Just enough of the MPEG audio frame header to recognise MP3 and estimate its duration. */
final class Mp3Frames {

    /** Bit rates in kbit/s of MPEG-1 Layer III, by the 4-bit index. */
    private static final int[] MPEG1_L3_KBPS = {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0};
    /** Bit rates in kbit/s of MPEG-2/2.5 Layer III. */
    private static final int[] MPEG2_L3_KBPS = {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0};

    private Mp3Frames() {
    }

    /** A Layer III frame sync with a valid bit rate and sample rate index at {@code offset}. */
    static boolean isFrameHeader(byte[] b, int offset) {
        if (b.length < offset + 4) {
            return false;
        }
        int b1 = b[offset] & 0xFF;
        int b2 = b[offset + 1] & 0xFF;
        int b3 = b[offset + 2] & 0xFF;
        boolean sync = b1 == 0xFF && (b2 & 0xE0) == 0xE0;
        boolean layer3 = (b2 & 0x06) == 0x02;
        boolean versionKnown = (b2 & 0x18) != 0x08;
        int bitrateIndex = b3 >> 4;
        int sampleIndex = (b3 >> 2) & 0x03;
        return sync && layer3 && versionKnown && bitrateIndex != 0 && bitrateIndex != 15 && sampleIndex != 3;
    }

    /** Duration estimate from the first frame's bit rate (exact for constant bit rate files). */
    static Long durationMillis(byte[] b) {
        int offset = 0;
        if (b.length >= 10 && b[0] == 'I' && b[1] == 'D' && b[2] == '3') {
            int size = (b[6] & 0x7F) << 21 | (b[7] & 0x7F) << 14 | (b[8] & 0x7F) << 7 | (b[9] & 0x7F);
            offset = 10 + size;
        }
        while (offset + 4 <= b.length && !isFrameHeader(b, offset)) {
            offset++;
        }
        if (!isFrameHeader(b, offset)) {
            return null;
        }
        boolean mpeg1 = (b[offset + 1] & 0x18) == 0x18;
        int kbps = (mpeg1 ? MPEG1_L3_KBPS : MPEG2_L3_KBPS)[(b[offset + 2] & 0xFF) >> 4];
        long audioBytes = b.length - offset;
        return audioBytes * 8 / kbps; // bits / (kbit/s) = ms
    }
}
