package io.jobgate.evaluation;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Scores what an evaluator read from an invoice against the evaluation manifest's expected answers
 * ({@code expected}: computed from the job's inputs before generation), field by field. A text field is
 * right when the text holds it (case and spacing aside); a line item's amount and each total when the
 * line that names it (its description, {@code Subtotal}, {@code Tax}, {@code Total}) holds the amount.
 */
public final class InvoiceScorer {

    private InvoiceScorer() {
    }

    /** Text fields scored when the manifest has them (in this order). */
    static final List<String> TEXT_FIELDS = List.of("supplier_name", "supplier_address", "invoice_id", "invoice_date",
            "customer_name", "currency");
    static final List<String> TOTALS = List.of("subtotal", "tax", "total");

    public record Field(String name, String expected, boolean correct) {
    }

    /** @param totalsCorrect subtotal, tax and total all read right */
    public record Score(List<Field> fields, int correct, int total, boolean totalsCorrect) {
        public double accuracy() {
            return total == 0 ? 0 : (double) correct / total;
        }

        public Map<String, Object> view() {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("fields_correct", correct);
            v.put("fields_total", total);
            v.put("field_accuracy", accuracy());
            v.put("totals_correct", totalsCorrect);
            List<Map<String, Object>> fs = new ArrayList<>();
            for (Field f : fields) {
                fs.add(Map.of("field", f.name(), "correct", f.correct()));
            }
            v.put("fields", fs);
            return v;
        }
    }

    /** Is this manifest an invoice's (it has line items to score)? */
    public static boolean scores(JsonNode expected) {
        return expected != null && expected.path("line_items").isArray() && expected.has("total");
    }

    public static Score score(JsonNode expected, String text) {
        String[] lines = text.split("\\R");
        String all = normal(text);
        List<Field> fields = new ArrayList<>();
        for (String name : TEXT_FIELDS) {
            if (expected.hasNonNull(name) && !expected.get(name).asText().isBlank()) {
                String want = expected.get(name).asText();
                fields.add(new Field(name, want, all.contains(normal(want))));
            }
        }
        int i = 0;
        for (JsonNode item : expected.path("line_items")) {
            String description = item.path("description").asText();
            String amount = plain(item.path("amount"));
            fields.add(new Field("line_items[" + i + "].description", description, all.contains(normal(description))));
            fields.add(new Field("line_items[" + i + "].amount", amount, onLine(lines, description, amount)));
            i++;
        }
        boolean totalsCorrect = true;
        for (String name : TOTALS) {
            if (expected.has(name)) {
                String amount = plain(expected.get(name));
                boolean right = onLine(lines, name, amount);
                totalsCorrect &= right;
                fields.add(new Field(name, amount, right));
            }
        }
        int correct = (int) fields.stream().filter(Field::correct).count();
        return new Score(List.copyOf(fields), correct, fields.size(), totalsCorrect);
    }

    /** A line that starts with (or holds) {@code label} also holds {@code amount} as a number of its own. */
    static boolean onLine(String[] lines, String label, String amount) {
        String l = normal(label);
        for (String line : lines) {
            String n = normal(line);
            boolean labelled = label.length() <= 8 ? n.startsWith(l + " ") : n.contains(l);
            if (labelled && (" " + n.replace(",", "") + " ").contains(" " + amount + " ")) {
                return true;
            }
        }
        return false;
    }

    /** An amount as the invoice prints it: money, two decimals (a manifest read back as JSON may have lost a trailing zero). */
    static String plain(JsonNode number) {
        BigDecimal value = number.isNumber() ? number.decimalValue() : new BigDecimal(number.asText());
        return value.setScale(2, java.math.RoundingMode.HALF_UP).toPlainString();
    }

    static String normal(String s) {
        return s.toLowerCase(Locale.ROOT).replaceAll("\\s+", " ").trim();
    }
}
