package io.jobgate.preset;

/**
 * What a preset asks of one aspect class: an exact ratio and, where the evaluation needs legible
 * detail, a minimum size. The pixel size itself is each adapter's (its settings' size table): the
 * product's choice stays independent of any provider's size syntax.
 *
 * @param ratioWidth  the ratio's width term, reduced (2 in 2:3)
 * @param ratioHeight the ratio's height term, reduced (3 in 2:3)
 * @param minWidth    the smallest width that serves (0: any)
 * @param minHeight   the smallest height that serves (0: any)
 */
public record AspectClass(int ratioWidth, int ratioHeight, int minWidth, int minHeight) {

    public AspectClass {
        if (ratioWidth <= 0 || ratioHeight <= 0 || minWidth < 0 || minHeight < 0) {
            throw new IllegalArgumentException("an aspect ratio is positive and minimums are not negative");
        }
        int gcd = gcd(ratioWidth, ratioHeight);
        ratioWidth /= gcd;
        ratioHeight /= gcd;
    }

    /** Parses {@code 2:3}. */
    public static AspectClass ofRatio(String ratio, int minWidth, int minHeight) {
        String[] parts = ratio.trim().split(":");
        if (parts.length != 2) {
            throw new IllegalArgumentException("a ratio is written <width>:<height>, was '" + ratio + "'");
        }
        try {
            return new AspectClass(Integer.parseInt(parts[0].trim()), Integer.parseInt(parts[1].trim()), minWidth, minHeight);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a ratio is written <width>:<height>, was '" + ratio + "'");
        }
    }

    /** Why {@code size} does not serve this class, or null when it does (exact ratio, minimum met). */
    public String misfit(PixelSize size) {
        if ((long) size.width() * ratioHeight != (long) size.height() * ratioWidth) {
            return size + " is not exactly " + ratio();
        }
        if (size.width() < minWidth || size.height() < minHeight) {
            return size + " is below the minimum " + minWidth + "x" + minHeight;
        }
        return null;
    }

    public String ratio() {
        return ratioWidth + ":" + ratioHeight;
    }

    private static int gcd(int a, int b) {
        return b == 0 ? a : gcd(b, a % b);
    }
}
