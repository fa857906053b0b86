package io.jobgate.evaluation;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.jobgate.common.Json;
import io.jobgate.output.Manifest;
import io.jobgate.simulator.InvoiceRenderer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shipped evaluator's reader (Tesseract OCR) on the simulator's invoices, scored against their
 * manifests' expected answers. The bars are measured (docs/evaluation.md) and kept with a margin:
 * clean invoices read near-perfectly, the scan variant lower, garbled totals never pass as right.
 * Required in CI ({@code JOBGATE_TEST_REQUIRE_TESSERACT=true}); skipped elsewhere without tesseract.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OcrAccuracyTest {

    /** Measured on 8 clean invoices here: see docs/evaluation.md; the bar keeps a margin below it. */
    static final double CLEAN_BAR = 0.95;
    static final int SAMPLES = 8;

    TesseractOcr ocr = new TesseractOcr("tesseract", Duration.ofSeconds(60));

    @BeforeAll
    void tesseract() {
        boolean available = ocr.available();
        if (Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_TESSERACT"))) {
            assertThat(available).as("tesseract is required here (JOBGATE_TEST_REQUIRE_TESSERACT)").isTrue();
        }
        Assumptions.assumeTrue(available, "tesseract is not installed");
    }

    static ObjectNode invoice(Random random, int n) {
        ObjectNode inputs = Json.MAPPER.createObjectNode();
        String[] suppliers = {"Acme Tools GmbH", "Globex Supplies Ltd", "Initech Office BV", "Umbrella Parts SA"};
        String[] things = {"Copper wire 2mm", "Steel bolts M8", "Packing tape", "Safety gloves", "Cable ties", "Drill bits set"};
        inputs.put("supplier_name", suppliers[n % suppliers.length]);
        inputs.put("supplier_address", (10 + random.nextInt(80)) + " Harbour Road, Rotterdam");
        inputs.put("customer_name", "Northwind Traders");
        inputs.put("invoice_id", "INV-" + (1000 + random.nextInt(9000)));
        inputs.put("invoice_date", "2026-0" + (1 + random.nextInt(9)) + "-1" + random.nextInt(10));
        inputs.put("currency", n % 2 == 0 ? "EUR" : "USD");
        inputs.put("tax_rate_percent", 21);
        ArrayNode items = inputs.putArray("line_items");
        for (int i = 0; i < 2 + random.nextInt(3); i++) {
            ObjectNode item = items.addObject();
            item.put("description", things[(n + i) % things.length]);
            item.put("quantity", 1 + random.nextInt(20));
            item.put("unit_price", new java.math.BigDecimal(100 + random.nextInt(9900)).movePointLeft(2));
        }
        return inputs;
    }

    record Measured(double accuracy, int totalsRight, int n) {
    }

    Measured measure(boolean scan, boolean garbled) throws Exception {
        Random random = new Random(14);
        int correct = 0;
        int total = 0;
        int totalsRight = 0;
        for (int n = 0; n < SAMPLES; n++) {
            ObjectNode inputs = invoice(random, n);
            byte[] image = InvoiceRenderer.render(inputs, 1024, 1536, scan ? "image/jpeg" : "image/png", scan, n, garbled);
            JsonNode expected = Json.MAPPER.valueToTree(Manifest.expected(inputs));
            InvoiceScorer.Score score = InvoiceScorer.score(expected, ocr.read(image));
            correct += score.correct();
            total += score.total();
            totalsRight += score.totalsCorrect() ? 1 : 0;
            if (!scan && !garbled && score.accuracy() < 1) {
                System.out.println("clean invoice " + n + " misread: " + score.fields().stream().filter(f -> !f.correct()).toList());
            }
        }
        Measured m = new Measured((double) correct / total, totalsRight, SAMPLES);
        System.out.println("OCR " + (scan ? "scan" : "clean") + (garbled ? " garbled" : "") + ": field accuracy "
                + m.accuracy() + ", totals right " + totalsRight + "/" + SAMPLES);
        return m;
    }

    @Test
    void cleanInvoicesReadNearPerfectlyScansLowerAndGarbledTotalsNeverPass() throws Exception {
        Measured clean = measure(false, false);
        assertThat(clean.accuracy()).as("clean field accuracy").isGreaterThanOrEqualTo(CLEAN_BAR);
        assertThat(clean.totalsRight()).as("clean totals").isGreaterThanOrEqualTo(SAMPLES - 1);

        Measured scan = measure(true, false);
        assertThat(scan.accuracy()).as("the scan variant reads lower").isLessThan(clean.accuracy());

        Measured garbled = measure(false, true);
        assertThat(garbled.totalsRight()).as("garbled totals are never read as right").isZero();
        assertThat(garbled.accuracy()).isLessThan(clean.accuracy());
    }
}
