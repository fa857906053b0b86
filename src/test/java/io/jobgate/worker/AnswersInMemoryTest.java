package io.jobgate.worker;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import io.jobgate.adapter.AdapterAnswer;
import io.jobgate.adapter.AdapterResult;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.Synchronization;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Answers' outputs between their call and their record ({@link AnswersInMemory}): within the budget they
 * stay in memory and count until their exchange is done; beyond it they wait in a file, the answer
 * without them, and come back whole when the answer is finished. Nothing is left on disk either way.
 */
class AnswersInMemoryTest {

    private static final int IMAGE = 300_000;

    private final CamelContext camel = new DefaultCamelContext();

    @TempDir
    Path dir;

    @Test
    void anOutputWithinTheBudgetStaysInMemoryUntilItsAnswerIsDone() throws Exception {
        AnswersInMemory answers = AnswersInMemory.open(dir, 2 * IMAGE);
        Exchange first = answered(base64(IMAGE, 'a'), null);
        answers.setAside(first);

        assertThat(answer(first).outputBase64()).isEqualTo(base64(IMAGE, 'a'));
        assertThat(answers.heldBytes()).isEqualTo(IMAGE);
        assertThat(files()).isEmpty();

        answers.takeBack(first); // nothing to take back
        assertThat(answer(first).outputBase64()).isEqualTo(base64(IMAGE, 'a'));
        done(first);
        assertThat(answers.heldBytes()).isZero();
        assertThat(answers.setAsideTotal()).isZero();
    }

    @Test
    void anOutputBeyondTheBudgetWaitsOnDiskAndComesBackWhole() throws Exception {
        AnswersInMemory answers = AnswersInMemory.open(dir, IMAGE + 10);
        Exchange inMemory = answered(base64(IMAGE, 'a'), null);
        answers.setAside(inMemory);
        String transcript = "{\"text\": \"" + "ü".repeat(IMAGE / 2) + "\"}";
        Exchange onDisk = answered(base64(IMAGE, 'b'), transcript);
        answers.setAside(onDisk);

        assertThat(answer(onDisk).outputBase64()).as("waiting without its output").isNull();
        assertThat(answer(onDisk).outputText()).isNull();
        assertThat(answer(onDisk).succeeded()).isTrue();
        assertThat(answers.heldBytes()).as("the budget holds only the first").isEqualTo(IMAGE);
        assertThat(answers.onDiskBytes()).isEqualTo(IMAGE + transcript.length());
        assertThat(files()).hasSize(1);
        assertThat(answers.setAsideTotal()).isEqualTo(1);

        answers.takeBack(onDisk);
        assertThat(answer(onDisk).outputBase64()).isEqualTo(base64(IMAGE, 'b'));
        assertThat(answer(onDisk).outputText()).isEqualTo(transcript);
        assertThat(answer(onDisk).providerRequestId()).isEqualTo("req-1");
        assertThat(files()).as("read back, the file is gone").isEmpty();
        assertThat(answers.onDiskBytes()).isZero();

        done(onDisk);
        done(inMemory);
        assertThat(answers.heldBytes()).isZero();
        assertThat(answers.onDiskBytes()).isZero();
    }

    @Test
    void smallOutputsStayInMemoryWhateverTheBudget() throws Exception {
        AnswersInMemory answers = AnswersInMemory.open(dir, 0);
        Exchange small = answered(base64(AnswersInMemory.SMALLEST_SET_ASIDE - 1, 'c'), null);
        answers.setAside(small);

        assertThat(answer(small).outputBase64()).hasSize(AnswersInMemory.SMALLEST_SET_ASIDE - 1);
        assertThat(files()).isEmpty();
        assertThat(answers.heldBytes()).isEqualTo(AnswersInMemory.SMALLEST_SET_ASIDE - 1);
        done(small);
        assertThat(answers.heldBytes()).isZero();
    }

    @Test
    void anAnswerEndedBeforeItsTurnLeavesNoFileAndAStartEmptiesWhatAStoppedProcessLeft() throws Exception {
        AnswersInMemory answers = AnswersInMemory.open(dir, 0);
        Exchange stopped = answered(base64(IMAGE, 'd'), null);
        answers.setAside(stopped);
        assertThat(files()).hasSize(1);

        done(stopped);
        assertThat(files()).isEmpty();
        assertThat(answers.onDiskBytes()).isZero();

        answers.setAside(answered(base64(IMAGE, 'e'), null)); // a process that stops here leaves its file
        assertThat(files()).hasSize(1);
        AnswersInMemory.open(dir, 0);
        assertThat(files()).isEmpty();
    }

    @Test
    void outputsDecodedFromRepliesCountAgainstTheSameBudgetUntilTheirAnswerIsDone() throws Exception {
        AnswersInMemory answers = AnswersInMemory.open(dir, IMAGE + 1000); // the reply's size says a little more than the image
        io.jobgate.adapter.JsonParts parts = new io.jobgate.adapter.JsonParts(answers);
        byte[] image = new byte[IMAGE];
        new java.util.Random(7).nextBytes(image);
        Exchange inMemory = decodedReply(parts, image);
        Exchange onDisk = decodedReply(parts, image);

        assertThat(answers.heldBytes()).isEqualTo(IMAGE);
        assertThat(answers.onDiskBytes()).isEqualTo(IMAGE);
        assertThat(answers.setAsideTotal()).isOne();
        assertThat(files()).hasSize(1);
        answers.setAside(inMemory);
        answers.setAside(onDisk);
        answers.takeBack(onDisk);
        assertThat(files()).as("set aside already: no second file").hasSize(1);
        assertThat(answers.heldBytes()).isEqualTo(IMAGE);
        assertThat(answer(onDisk).outputBytes().bytes()).isEqualTo(image);
        assertThat(answer(inMemory).outputBytes().bytes()).isEqualTo(image);

        done(inMemory);
        done(onDisk);
        assertThat(answers.heldBytes()).isZero();
        assertThat(answers.onDiskBytes()).isZero();
        assertThat(files()).isEmpty();
    }

    /** An OpenAI image reply decoded by jsonParts, its answer read as the worker's enrich leaves it. */
    private Exchange decodedReply(io.jobgate.adapter.JsonParts parts, byte[] image) throws Exception {
        Exchange exchange = new DefaultExchange(camel);
        byte[] reply = ("{\"data\": [{\"b64_json\": \"" + java.util.Base64.getEncoder().encodeToString(image) + "\"}]}")
                .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        exchange.getMessage().setBody(new java.io.ByteArrayInputStream(reply));
        exchange.getMessage().setHeader("Content-Length", reply.length); // its size taken from the budget at once
        exchange.getMessage().setHeader(Exchange.HTTP_RESPONSE_CODE, 200);
        exchange.setProperty("decoded.JobgateOutputBytes", "/data/0/b64_json");
        parts.decoded(exchange);
        exchange.setProperty("JobgateOutcome", "succeeded");
        exchange.setProperty(AdapterAnswer.ANSWER, AdapterResult.of(exchange));
        return exchange;
    }

    private Exchange answered(String base64, String text) {
        Exchange exchange = new DefaultExchange(camel);
        exchange.setProperty(AdapterAnswer.ANSWER, new AdapterResult("succeeded", null, 200, null, "req-1", null, null, base64,
                null, text, "image/png", null, null, null, null, true, null));
        return exchange;
    }

    private static AdapterResult answer(Exchange exchange) {
        return exchange.getProperty(AdapterAnswer.ANSWER, AdapterResult.class);
    }

    private static String base64(int length, char c) {
        return String.valueOf(c).repeat(length);
    }

    private java.util.List<Path> files() throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            return files.toList();
        }
    }

    /** The exchange is done: what it holds is given back. */
    private static void done(Exchange exchange) {
        for (Synchronization s : exchange.getExchangeExtension().handoverCompletions()) {
            s.onComplete(exchange);
        }
    }
}
