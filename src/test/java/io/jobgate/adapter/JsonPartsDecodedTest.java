package io.jobgate.adapter;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.Random;
import java.util.stream.Stream;

import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link JsonParts#decoded}: a reply's base64 decoded as it streams in, into {@link OutputBytes} counted against a budget
 * from the first byte; beyond the budget the output goes on in a file; nothing stays counted or on disk once the output
 * is discarded, or, if nobody discarded it, once it is unreachable.
 */
class JsonPartsDecodedTest {

    private static final int IMAGE = 300_000;

    @TempDir
    Path dir;

    private final DefaultCamelContext camel = new DefaultCamelContext();

    @Test
    void aRepliesBase64IsDecodedIntoBytesCountedUntilDiscarded() throws Exception {
        CountingBudget budget = new CountingBudget(10 * IMAGE, dir);
        byte[] image = image(IMAGE);
        ClosingBody body = reply(image);
        Exchange exchange = exchange(body);

        new JsonParts(budget).decoded(exchange);

        OutputBytes output = exchange.getProperty(AdapterContract.OUTPUT_BYTES, OutputBytes.class);
        assertThat(output.onDisk()).isFalse();
        assertThat(output.bytes()).isEqualTo(image);
        assertThat(budget.held).as("counted at its exact size, the rest of the expected size given back").hasValue(IMAGE);
        assertThat(body.closed).as("the reply closed (its connection back to the pool)").isTrue();
        assertThat(exchange.getMessage().getBody(byte[].class)).isEmpty();
        assertThat(AdapterResult.of(answered(exchange)).outputBytes()).isSameAs(output);

        output.discard();
        assertThat(budget.held).hasValue(0);
    }

    @Test
    void beyondTheBudgetTheOutputGoesOnInAFileAndTheMemoryItHadIsGivenBack() throws Exception {
        CountingBudget budget = new CountingBudget(IMAGE / 3, dir);
        byte[] image = image(IMAGE);
        Exchange exchange = exchange(reply(image));

        new JsonParts(budget).decoded(exchange);

        OutputBytes output = exchange.getProperty(AdapterContract.OUTPUT_BYTES, OutputBytes.class);
        assertThat(output.onDisk()).isTrue();
        assertThat(budget.held).hasValue(0);
        assertThat(budget.onDisk).hasValue(IMAGE);
        assertThat(files()).hasSize(1);
        assertThat(output.bytes()).isEqualTo(image);
        try (var in = output.open()) {
            assertThat(in.readAllBytes()).isEqualTo(image);
        }

        output.discard();
        assertThat(files()).isEmpty();
        assertThat(budget.onDisk).hasValue(0);
        output.discard(); // once only
        assertThat(budget.onDisk).hasValue(0);
    }

    @Test
    void anOutputNobodyDiscardedIsGivenBackOnceUnreachable() throws Exception {
        CountingBudget budget = new CountingBudget(IMAGE / 3, dir);
        Exchange inMemory = exchange(reply(image(IMAGE / 10)));
        Exchange onDisk = exchange(reply(image(IMAGE)));
        new JsonParts(budget).decoded(inMemory);
        new JsonParts(budget).decoded(onDisk);
        assertThat(budget.held).hasValue(IMAGE / 10);
        assertThat(files()).hasSize(1);

        inMemory.removeProperty(AdapterContract.OUTPUT_BYTES); // dropped without a discard
        onDisk.removeProperty(AdapterContract.OUTPUT_BYTES);
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
        while ((budget.held.get() != 0 || !files().isEmpty()) && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertThat(budget.held).hasValue(0);
        assertThat(budget.onDisk).hasValue(0);
        assertThat(files()).isEmpty();
    }

    @Test
    void aMissingOrNullValueSetsNothing() throws Exception {
        CountingBudget budget = new CountingBudget(IMAGE, dir);
        for (String json : new String[] {"{\"data\": []}", "{\"data\": [{\"b64_json\": null}]}", "{\"error\": {\"code\": 1}}"}) {
            Exchange exchange = exchange(new ClosingBody(json.getBytes(StandardCharsets.UTF_8)));
            new JsonParts(budget).decoded(exchange);
            assertThat(exchange.getProperties()).as(json).doesNotContainKey(AdapterContract.OUTPUT_BYTES);
            assertThat(AdapterResult.of(answered(exchange)).category()).as("success without an output: unreadable")
                    .isEqualTo(io.jobgate.job.ErrorCategory.UNPARSEABLE_RESPONSE);
        }
        assertThat(budget.held).hasValue(0);
    }

    @Test
    void aValueThatIsNotBase64FailsTheReplyAndLeavesNothingHeldOrOnDisk() throws Exception {
        CountingBudget budget = new CountingBudget(IMAGE / 3, dir);
        String valid = Base64.getEncoder().encodeToString(image(IMAGE));
        byte[] json = ("{\"data\": [{\"b64_json\": \"" + valid.substring(0, valid.length() - 8) + "*not*base64*\"}]}")
                .getBytes(StandardCharsets.US_ASCII);
        Exchange exchange = exchange(new ClosingBody(json));

        assertThatThrownBy(() -> new JsonParts(budget).decoded(exchange)).isInstanceOf(IOException.class);
        assertThat(exchange.getProperties()).doesNotContainKey(AdapterContract.OUTPUT_BYTES);
        assertThat(budget.held).hasValue(0);
        assertThat(files()).as("the part written beyond the budget was deleted").isEmpty();

        Exchange notJson = exchange(new ClosingBody("<html>bad gateway</html>".getBytes(StandardCharsets.UTF_8)));
        assertThatThrownBy(() -> new JsonParts(budget).decoded(notJson)).isInstanceOf(IOException.class);
        assertThat(notJson.getMessage().getBody(String.class)).as("its start kept for the operator's excerpt")
                .isEqualTo("<html>bad gateway</html>");
    }

    @Test
    void oneDecodedValuePerReply() {
        Exchange exchange = exchange(reply(image(10)));
        exchange.setProperty("decoded.other", "/data/1/b64_json");
        assertThatThrownBy(() -> new JsonParts().decoded(exchange)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("one decoded.<name> per reply");
    }

    private Exchange exchange(ClosingBody body) {
        Exchange exchange = new DefaultExchange(camel);
        exchange.getMessage().setBody(body);
        exchange.getMessage().setHeader("Content-Length", String.valueOf(body.length));
        exchange.setProperty("decoded." + AdapterContract.OUTPUT_BYTES, "/data/0/b64_json");
        return exchange;
    }

    private static Exchange answered(Exchange exchange) {
        exchange.setProperty(AdapterContract.OUTCOME, AdapterContract.SUCCEEDED);
        exchange.getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, 200);
        return exchange;
    }

    private static ClosingBody reply(byte[] image) {
        return new ClosingBody(("{\"created\": 1713833628, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(image)
                + "\"}], \"usage\": {\"total_tokens\": 100}}").getBytes(StandardCharsets.US_ASCII));
    }

    private static byte[] image(int size) {
        byte[] bytes = new byte[size];
        new Random(size).nextBytes(bytes);
        return bytes;
    }

    private java.util.List<Path> files() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.toList();
        }
    }

    /** A reply body that says whether it was closed. */
    private static final class ClosingBody extends ByteArrayInputStream {
        final int length;
        boolean closed;

        ClosingBody(byte[] bytes) {
            super(bytes);
            this.length = bytes.length;
        }

        @Override
        public void close() {
            closed = true;
        }
    }
}
