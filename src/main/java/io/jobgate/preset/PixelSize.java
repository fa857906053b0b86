package io.jobgate.preset;

/** An exact image size in pixels, written {@code <width>x<height>} in settings (e.g. {@code 1024x1536}). */
public record PixelSize(int width, int height) {

    public PixelSize {
        if (width <= 0 || height <= 0) {
            throw new IllegalArgumentException("a pixel size is positive, was " + width + "x" + height);
        }
    }

    /** Parses {@code 1024x1536}. */
    public static PixelSize parse(String text) {
        String[] parts = text.trim().toLowerCase().split("x");
        if (parts.length != 2) {
            throw new IllegalArgumentException("a pixel size is written <width>x<height>, was '" + text + "'");
        }
        try {
            return new PixelSize(Integer.parseInt(parts[0].trim()), Integer.parseInt(parts[1].trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("a pixel size is written <width>x<height>, was '" + text + "'");
        }
    }

    @Override
    public String toString() {
        return width + "x" + height;
    }
}
