package io.jobgate.simulator;

import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The simulator's recent clean renders: drawn once per key, the same bytes as a fresh render, each caller its own copy. */
class RecentRendersTest {

    @Test
    void aKeyIsRenderedOnceAndEachCallerGetsItsOwnCopyOfTheSameBytes() throws Exception {
        JsonNode inputs = Json.MAPPER.readTree("""
                {"supplier_name": "Kept GmbH", "invoice_id": "K-1", "currency": "EUR",
                 "line_items": [{"description": "Load", "quantity": 1, "unit_price": 10}]}""");
        RecentRenders renders = new RecentRenders(2);
        AtomicInteger drawn = new AtomicInteger();
        byte[] first = renders.get("k", () -> {
            drawn.incrementAndGet();
            return InvoiceRenderer.render(inputs, 256, 384, "image/png", false, 1);
        });
        byte[] again = renders.get("k", () -> {
            drawn.incrementAndGet();
            return new byte[0];
        });
        assertThat(drawn).hasValue(1);
        assertThat(again).isEqualTo(first).isNotSameAs(first);
        assertThat(first).as("a clean invoice's bytes depend on nothing else: a fresh render is the same")
                .isEqualTo(InvoiceRenderer.render(inputs, 256, 384, "image/png", false, 99));
        again[0] ^= 1;
        assertThat(renders.get("k", () -> new byte[0])).isEqualTo(first);
    }

    @Test
    void theLeastRecentlyUsedBeyondItsSizeIsDropped() {
        RecentRenders renders = new RecentRenders(2);
        renders.get("a", () -> new byte[] {1});
        renders.get("b", () -> new byte[] {2});
        renders.get("a", () -> new byte[] {9});
        renders.get("c", () -> new byte[] {3});
        assertThat(renders.size()).isEqualTo(2);
        assertThat(renders.get("a", () -> new byte[] {9})).containsExactly(1);
        assertThat(renders.get("b", () -> new byte[] {8})).as("b was the least recently used").containsExactly(8);
    }
}
