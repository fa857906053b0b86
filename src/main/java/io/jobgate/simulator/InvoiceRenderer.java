package io.jobgate.simulator;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.AffineTransform;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.Random;

import javax.imageio.IIOImage;
import javax.imageio.ImageIO;
import javax.imageio.ImageWriteParam;
import javax.imageio.ImageWriter;
import javax.imageio.stream.MemoryCacheImageOutputStream;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.output.Manifest;

/**
 * Draws a synthetic invoice (Java 2D) from a job's inputs at the requested pixel size: supplier,
 * customer, invoice id, date, currency, line rows and the totals the evaluation manifest expects.
 * {@code scan} adds a slight rotation, paper noise and JPEG artefacts, like a phone scan.
 */
public final class InvoiceRenderer {

    private InvoiceRenderer() {
    }

    public static byte[] render(JsonNode inputs, int width, int height, String mediaType, boolean scan, long seed) {
        return render(inputs, width, height, mediaType, scan, seed, false);
    }

    /**
     * @param garbleTotals the fault knob {@code garbled_totals}: subtotal, tax and total are printed wrong
     *                     (off by 10.07 each), as a model that cannot add would — the output passes every
     *                     check but its evaluation
     */
    public static byte[] render(JsonNode inputs, int width, int height, String mediaType, boolean scan, long seed,
                                boolean garbleTotals) {
        BufferedImage page = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = page.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(scan ? new Color(246, 243, 236) : Color.WHITE);
        g.fillRect(0, 0, width, height);
        Random random = new Random(seed);
        if (scan) {
            AffineTransform tilt = AffineTransform.getRotateInstance(Math.toRadians(random.nextDouble() * 3 - 1.5),
                    width / 2.0, height / 2.0);
            g.transform(tilt);
        }
        int margin = width / 14;
        int line = Math.max(18, height / 48);
        Font title = new Font(Font.SANS_SERIF, Font.BOLD, line * 2);
        Font body = new Font(Font.SANS_SERIF, Font.PLAIN, (int) (line * 0.8));
        Font bold = body.deriveFont(Font.BOLD);
        g.setColor(new Color(25, 25, 35));
        int y = margin + line * 2;
        g.setFont(title);
        g.drawString("INVOICE", margin, y);
        g.setFont(bold);
        y += line * 2;
        g.drawString(text(inputs, "supplier_name"), margin, y);
        g.setFont(body);
        y += line;
        g.drawString(text(inputs, "supplier_address"), margin, y);
        y += line * 2;
        g.drawString("Invoice no. " + text(inputs, "invoice_id"), margin, y);
        g.drawString("Date " + text(inputs, "invoice_date"), width / 2, y);
        y += line;
        g.drawString("Bill to: " + text(inputs, "customer_name"), margin, y);
        g.drawString("Currency " + text(inputs, "currency"), width / 2, y);
        y += line * 2;
        Map<String, Object> expected = Manifest.expected(inputs);
        int[] cols = {margin, (int) (width * 0.50), (int) (width * 0.62), (int) (width * 0.74)};
        g.setFont(bold);
        g.drawString("Description", cols[0], y);
        g.drawString("Qty", cols[1], y);
        g.drawString("Unit", cols[2], y);
        g.drawString("Amount", cols[3], y);
        g.setStroke(new BasicStroke(2));
        g.drawLine(margin, y + line / 3, width - margin, y + line / 3);
        g.setFont(body);
        Object rows = expected.get("line_items");
        if (rows instanceof Iterable<?> items) {
            for (Object item : items) {
                Map<?, ?> row = (Map<?, ?>) item;
                y += (int) (line * 1.3);
                g.drawString(String.valueOf(row.get("description")), cols[0], y);
                g.drawString(plain(row.get("quantity")), cols[1], y);
                g.drawString(plain(row.get("unit_price")), cols[2], y);
                g.drawString(plain(row.get("amount")), cols[3], y);
            }
        }
        y += line;
        g.drawLine(cols[2], y, width - margin, y);
        String currency = text(inputs, "currency");
        for (String total : new String[] {"subtotal", "tax", "total"}) {
            if (expected.containsKey(total)) {
                y += (int) (line * 1.3);
                g.setFont(total.equals("total") ? bold : body);
                g.drawString(total.substring(0, 1).toUpperCase() + total.substring(1), cols[2], y);
                Object amount = expected.get(total);
                if (garbleTotals && amount instanceof java.math.BigDecimal d) {
                    amount = d.add(new java.math.BigDecimal("10.07"));
                }
                g.drawString(plain(amount) + " " + currency, cols[3], y);
            }
        }
        if (inputs.hasNonNull("notes")) {
            g.setFont(body);
            g.drawString(text(inputs, "notes"), margin, height - margin);
        }
        g.dispose();
        if (scan) {
            for (int i = 0; i < width * height / 40; i++) {
                int x = random.nextInt(width);
                int yy = random.nextInt(height);
                int grey = 150 + random.nextInt(90);
                page.setRGB(x, yy, new Color(grey, grey, grey).getRGB());
            }
        }
        return encode(page, mediaType, scan ? 0.55f : 0.9f);
    }

    static byte[] encode(BufferedImage image, String mediaType, float jpegQuality) {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            if ("image/jpeg".equals(mediaType)) {
                ImageWriter writer = ImageIO.getImageWritersByFormatName("jpeg").next();
                ImageWriteParam params = writer.getDefaultWriteParam();
                params.setCompressionMode(ImageWriteParam.MODE_EXPLICIT);
                params.setCompressionQuality(jpegQuality);
                try (MemoryCacheImageOutputStream stream = new MemoryCacheImageOutputStream(out)) {
                    writer.setOutput(stream);
                    writer.write(null, new IIOImage(image, null, null), params);
                } finally {
                    writer.dispose();
                }
            } else {
                ImageIO.write(image, "png", out);
            }
            return out.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException("image encoding failed", e);
        }
    }

    private static String text(JsonNode inputs, String field) {
        return inputs.hasNonNull(field) ? inputs.get(field).asText() : "";
    }

    private static String plain(Object value) {
        return value instanceof java.math.BigDecimal d ? d.toPlainString() : String.valueOf(value);
    }
}
