package io.jobgate.adapter;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link OutputBytes.Sink}: an output written in small pieces (as a JSON parser decodes base64, a couple of KiB at a
 * time) grows its buffer by doubling within the budget, and goes to its file the first time the budget refuses a
 * doubling; the memory it had is given back at once, and what it made reads back whole.
 */
class OutputBytesTest {

    @TempDir
    Path dir;

    @Test
    void piecesGrowTheBufferByDoublingAndAnExactSizeIsKept() throws Exception {
        CountingBudget budget = new CountingBudget(64L << 20, dir);
        byte[] output = bytes(1_000_000);
        OutputBytes.Sink sink = new OutputBytes.Sink(budget, 0);
        writeInPieces(sink, output);
        sink.close();

        assertThat(sink.output().bytes()).isEqualTo(output);
        assertThat(sink.output().onDisk()).isFalse();
        assertThat(budget.held).hasValue(output.length);
        assertThat(budget.reservations.get()).as("by doubling, not once per piece").isLessThan(12);
        sink.output().discard();
        assertThat(budget.held).hasValue(0);
    }

    @Test
    void aBudgetThatRefusesADoublingSendsTheRestToAFileAndNoMemoryStaysHeld() throws Exception {
        // Room for a little more than the buffer has, never for twice it: growing piece by piece would fit for a
        // while, and copy the whole buffer at every piece.
        CountingBudget budget = new CountingBudget(100_000, dir);
        byte[] output = bytes(300_000);
        OutputBytes.Sink sink = new OutputBytes.Sink(budget, 70_000);
        writeInPieces(sink, output);
        sink.close();

        assertThat(budget.reservations.get()).as("no reservation per piece once refused").isLessThan(4);
        assertThat(sink.output().onDisk()).isTrue();
        assertThat(budget.held).hasValue(0);
        assertThat(budget.onDisk).hasValue(output.length);
        assertThat(sink.output().bytes()).isEqualTo(output);
        sink.output().discard();
        assertThat(budget.onDisk).hasValue(0);
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left).isEmpty();
        }
    }

    @Test
    void anAbandonedSinkGivesBackItsMemoryAndDeletesItsFile() throws Exception {
        CountingBudget budget = new CountingBudget(50_000, dir);
        OutputBytes.Sink sink = new OutputBytes.Sink(budget, 40_000);
        writeInPieces(sink, bytes(200_000));
        sink.abandon();

        assertThat(budget.held).hasValue(0);
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left).isEmpty();
        }
    }

    private static void writeInPieces(OutputBytes.Sink sink, byte[] output) throws Exception {
        for (int at = 0; at < output.length; at += 2000) {
            sink.write(output, at, Math.min(2000, output.length - at));
        }
    }

    private static byte[] bytes(int size) {
        byte[] bytes = new byte[size];
        new Random(size).nextBytes(bytes);
        return bytes;
    }
}
