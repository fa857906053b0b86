package io.jobgate.simulator;

import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

import com.fasterxml.jackson.databind.JsonNode;
import org.jcodec.api.awt.AWTSequenceEncoder;
import org.jcodec.common.io.NIOUtils;
import org.jcodec.common.io.SeekableByteChannel;
import org.jcodec.common.model.Rational;

/**
 * Renders a real, playable H.264 MP4 presenting an invoice (jcodec, pure Java): the invoice's fields
 * on screen, a progress bar across the clip, at the frame size and whole-second duration asked for.
 * A frame every two seconds keeps pure-Java encoding cheap (a few seconds for a 1080p clip); the
 * container says the exact duration.
 */
public final class VideoRenderer {

    /** Seconds each frame of the simulator's clips lasts (one second for an odd duration). */
    static final int SECONDS_PER_FRAME = 2;

    private VideoRenderer() {
    }

    public static byte[] render(JsonNode inputs, int width, int height, int seconds) {
        try {
            File file = File.createTempFile("jobgate-clip", ".mp4");
            try {
                SeekableByteChannel out = NIOUtils.writableChannel(file);
                try {
                    int step = seconds % SECONDS_PER_FRAME == 0 ? SECONDS_PER_FRAME : 1;
                    AWTSequenceEncoder encoder = new AWTSequenceEncoder(out, Rational.R(1, step));
                    int frames = seconds / step;
                    for (int i = 0; i < frames; i++) {
                        encoder.encodeImage(frame(inputs, width, height, i, frames));
                    }
                    encoder.finish();
                } finally {
                    NIOUtils.closeQuietly(out);
                }
                return Files.readAllBytes(file.toPath());
            } finally {
                Files.deleteIfExists(file.toPath());
            }
        } catch (IOException e) {
            throw new IllegalStateException("could not render the clip: " + e.getMessage(), e);
        }
    }

    private static BufferedImage frame(JsonNode inputs, int width, int height, int index, int frames) {
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_3BYTE_BGR);
        Graphics2D g = image.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(new Color(236, 239, 244));
        g.fillRect(0, 0, width, height);
        int shortSide = Math.min(width, height);
        int margin = shortSide / 12;
        int line = Math.max(16, shortSide / 18);
        g.setColor(Color.WHITE);
        g.fillRect(margin, margin, width - 2 * margin, height - 2 * margin);
        g.setColor(new Color(25, 25, 35));
        int y = margin + line * 2;
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, line * 2));
        g.drawString("INVOICE " + text(inputs, "invoice_id"), margin * 2, y);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, line));
        for (String[] row : new String[][] {{"From", "supplier_name"}, {"To", "customer_name"}, {"Date", "invoice_date"}}) {
            y += line * 2;
            g.drawString(row[0] + ": " + text(inputs, row[1]), margin * 2, y);
        }
        y += line * 2;
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, (int) (line * 1.4)));
        g.drawString("Total: " + text(inputs, "total") + " " + text(inputs, "currency"), margin * 2, y);
        // The clip's progress: a bar that fills frame by frame.
        int barWidth = (width - 4 * margin) * (index + 1) / frames;
        g.setColor(new Color(46, 112, 220));
        g.fillRect(margin * 2, height - margin * 2, barWidth, Math.max(4, line / 3));
        g.dispose();
        return image;
    }

    private static String text(JsonNode inputs, String field) {
        JsonNode value = inputs.path(field);
        return value.isMissingNode() || value.isNull() ? "" : value.asText();
    }
}
