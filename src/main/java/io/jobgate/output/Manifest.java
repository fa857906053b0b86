package io.jobgate.output;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.math.RoundingMode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;

/**
 * The evaluation manifest stored beside a promoted output: what was asked (preset, aspect class,
 * source digest, adapter and revision) and the answers an extraction of the artifact must give —
 * taken from the job's inputs as they were before generation, never read back from the output.
 */
public final class Manifest {

    private Manifest() {
    }

    public static Map<String, Object> of(OutputSubject job, OutputCheck.Checked checked, String sha256, String outputKey) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("job_id", job.jobId().toString());
        m.put("preset", Map.of("id", job.presetId(), "version", job.presetVersion()));
        m.put("aspect_class", job.aspectClass());
        Map<String, Object> output = ordered("key", outputKey, "media_type", checked.mediaType(), "width", checked.width(),
                "height", checked.height(), "sha256", sha256);
        if (checked.durationMillis() != null) {
            output.put("duration_ms", checked.durationMillis()); // read from the container, not the order
        }
        m.put("output", output);
        m.put("source_sha256", job.sourceSha256());
        m.put("adapter", Map.of("name", job.adapter(), "revision", job.revision()));
        m.put("attempt", job.attempt());
        m.put("expected", expected(Json.parseObject(job.inputsJson().getBytes(StandardCharsets.UTF_8))));
        return m;
    }

    /** The inputs as given, plus line amounts and totals for invoices (2 decimals, half up). */
    public static Map<String, Object> expected(JsonNode inputs) {
        Map<String, Object> e = new LinkedHashMap<>();
        inputs.fields().forEachRemaining(f -> {
            if (!f.getKey().equals("line_items")) {
                e.put(f.getKey(), f.getValue());
            }
        });
        JsonNode items = inputs.path("line_items");
        if (items.isArray()) {
            List<Map<String, Object>> rows = new ArrayList<>();
            BigDecimal subtotal = BigDecimal.ZERO;
            for (JsonNode item : items) {
                BigDecimal quantity = item.path("quantity").decimalValue();
                BigDecimal unitPrice = item.path("unit_price").decimalValue();
                BigDecimal amount = money(quantity.multiply(unitPrice));
                subtotal = subtotal.add(amount);
                rows.add(ordered("description", item.path("description").asText(), "quantity", quantity,
                        "unit_price", unitPrice, "amount", amount));
            }
            e.put("line_items", rows);
            BigDecimal rate = inputs.has("tax_rate_percent") ? inputs.path("tax_rate_percent").decimalValue() : BigDecimal.ZERO;
            BigDecimal tax = money(subtotal.multiply(rate).movePointLeft(2));
            e.put("subtotal", money(subtotal));
            e.put("tax", tax);
            e.put("total", money(subtotal.add(tax)));
        }
        return e;
    }

    private static BigDecimal money(BigDecimal value) {
        return value.setScale(2, RoundingMode.HALF_UP);
    }

    private static Map<String, Object> ordered(Object... kv) {
        Map<String, Object> map = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            map.put((String) kv[i], kv[i + 1]);
        }
        return map;
    }
}
