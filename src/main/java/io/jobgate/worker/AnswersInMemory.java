package io.jobgate.worker;

import io.jobgate.adapter.AdapterAnswer;
import io.jobgate.adapter.AdapterResult;
import io.jobgate.adapter.OutputBytes;
import org.apache.camel.Exchange;
import org.apache.camel.support.SynchronizationAdapter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The outputs answers carry from their call to their record (an image's base64, a transcript), held in
 * memory up to a budget of bytes; beyond it an answer's output waits in a file of the instance's data
 * directory and is read back when the answer is finished (routes/worker.camel.yaml, steps
 * {@code set-aside} and {@code take-back}).
 *
 * <p>Why: answers arrive in waves (calls started together end together) faster than they can be checked,
 * stored and recorded ({@code jobgate.worker.finish-concurrency} at once), so hundreds wait. A real image
 * is 1-3 MiB of base64: 400 of them waiting outgrew a 512 MiB heap and the gateway failed with
 * OutOfMemoryError, losing every answer it held. On disk, waiting costs their bytes of disk instead.
 * Outputs under {@link #SMALLEST_SET_ASIDE} always stay in memory (counted): a file for a few KiB
 * costs more than it saves.
 *
 * <p>It is also the {@link OutputBytes.Budget} of outputs an adapter decodes as its reply streams in
 * ({@code jsonParts.decoded}, OpenAI's images): those count from their first byte and go to their file the
 * moment the budget has no room, so the set-aside step finds them settled already.
 */
public final class AnswersInMemory implements OutputBytes.Budget {

    private static final Logger LOG = LoggerFactory.getLogger(AnswersInMemory.class);

    /** The worker exchange's property naming the file its answer's output waits in, and that output's size. */
    static final String SET_ASIDE = "jobgateAnswerSetAside";

    private record SetAside(Path file, long size) {
    }

    static final int SMALLEST_SET_ASIDE = 64 * 1024;

    private final Path dir;
    private final long maxBytes;
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong onDisk = new AtomicLong();
    private final AtomicLong setAside = new AtomicLong();

    private AnswersInMemory(Path dir, long maxBytes) {
        this.dir = dir;
        this.maxBytes = maxBytes;
    }

    /**
     * @param dir      where outputs beyond the budget wait; emptied here (what a stopped process left
     *                 belonged to answers it never recorded: their leases run out, as their answers in
     *                 memory would have)
     * @param maxBytes the budget of outputs' bytes held in memory
     */
    public static AnswersInMemory open(Path dir, long maxBytes) {
        try {
            Files.createDirectories(dir);
            try (DirectoryStream<Path> left = Files.newDirectoryStream(dir, "*.answer")) {
                for (Path file : left) {
                    Files.deleteIfExists(file);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + dir + " for answers waiting to be finished", e);
        }
        return new AnswersInMemory(dir, maxBytes);
    }

    /** The default budget: an eighth of the heap (64 MiB of the README's 512). */
    public static long defaultBudget() {
        return Runtime.getRuntime().maxMemory() / 8;
    }

    /**
     * Route step (set-aside, right after the call): the answer's output counts against the budget until its
     * exchange is done; one that does not fit goes to its file and the answer waits without it.
     */
    public void setAside(Exchange exchange) {
        AdapterResult answer = exchange.getProperty(AdapterAnswer.ANSWER, AdapterResult.class);
        if (answer != null && answer.outputBytes() != null) {
            // Counted (or in its file) since its first byte; from here it is this exchange's until done.
            OutputBytes output = answer.outputBytes();
            exchange.getExchangeExtension().addOnCompletion(new SynchronizationAdapter() {
                @Override
                public void onDone(Exchange done) {
                    output.discard();
                }
            });
        }
        long size = sizeOf(answer);
        if (size == 0) {
            return;
        }
        if (size < SMALLEST_SET_ASIDE) {
            held.addAndGet(size);
            heldUntilDone(exchange, size);
            return;
        }
        if (reserve(size)) {
            heldUntilDone(exchange, size);
            return;
        }
        Path file = dir.resolve(exchange.getExchangeId() + ".answer");
        try {
            write(file, answer.outputBase64(), answer.outputText());
        } catch (IOException e) {
            // The disk refused: the answer waits in memory rather than being lost.
            LOG.warn("an answer's output of {} bytes could not wait on disk ({}): it waits in memory", size, e.toString());
            held.addAndGet(size);
            heldUntilDone(exchange, size);
            return;
        }
        onDisk.addAndGet(size);
        setAside.incrementAndGet();
        exchange.setProperty(AdapterAnswer.ANSWER, answer.withOutputs(null, null));
        exchange.setProperty(SET_ASIDE, new SetAside(file, size));
        exchange.getExchangeExtension().addOnCompletion(new SynchronizationAdapter() {
            @Override
            public void onDone(Exchange done) {
                discard(done); // the exchange ended before its turn (a stop); nothing left if it was taken back
            }
        });
    }

    /** Counted in memory (already) until the exchange is done. */
    private void heldUntilDone(Exchange exchange, long size) {
        exchange.getExchangeExtension().addOnCompletion(new SynchronizationAdapter() {
            @Override
            public void onDone(Exchange done) {
                held.addAndGet(-size);
            }
        });
    }

    /** Route step (take-back, once the answer has its place to be finished): its output back from its file. */
    public void takeBack(Exchange exchange) throws IOException {
        SetAside setAside = exchange.getProperty(SET_ASIDE, SetAside.class);
        if (setAside == null) {
            return;
        }
        String[] outputs = read(setAside.file());
        AdapterResult answer = exchange.getProperty(AdapterAnswer.ANSWER, AdapterResult.class);
        exchange.setProperty(AdapterAnswer.ANSWER, answer.withOutputs(outputs[0], outputs[1]));
        discard(exchange);
    }

    /** The exchange's output file, if it still has one: deleted, and no longer counted on disk. */
    private void discard(Exchange exchange) {
        SetAside setAside = (SetAside) exchange.removeProperty(SET_ASIDE);
        if (setAside != null) {
            onDisk.addAndGet(-setAside.size());
            OutputBytes.deleteQuietly(setAside.file());
        }
    }

    /** Bytes of outputs held in memory now by answers between their call and their record. */
    public long heldBytes() {
        return held.get();
    }

    /** Bytes of outputs waiting on disk now. */
    public long onDiskBytes() {
        return onDisk.get();
    }

    /** Answers whose output waited on disk, since the start. */
    public long setAsideTotal() {
        return setAside.get();
    }

    @Override
    public void release(long bytes) {
        held.addAndGet(-bytes);
    }

    @Override
    public Path newFile() {
        return dir.resolve(java.util.UUID.randomUUID() + ".answer");
    }

    @Override
    public void onDisk(long bytes) {
        onDisk.addAndGet(bytes);
        if (bytes > 0) {
            setAside.incrementAndGet();
        }
    }

    @Override
    public boolean reserve(long size) {
        while (true) {
            long now = held.get();
            if (now + size > maxBytes) {
                return false;
            }
            if (held.compareAndSet(now, now + size)) {
                return true;
            }
        }
    }

    private static long sizeOf(AdapterResult answer) {
        return answer == null ? 0 : sizeOf(answer.outputBase64(), answer.outputText());
    }

    /** Characters, as memory holds them: base64 and most text take a byte each. */
    private static long sizeOf(String base64, String text) {
        return (base64 == null ? 0 : base64.length()) + (text == null ? 0 : text.length());
    }

    private static void write(Path file, String base64, String text) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16))) {
            writeNullable(out, base64);
            writeNullable(out, text);
        } catch (IOException e) {
            OutputBytes.deleteQuietly(file);
            throw e;
        }
    }

    private static String[] read(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
            return new String[] {readNullable(in), readNullable(in)};
        }
    }

    private static void writeNullable(DataOutputStream out, String value) throws IOException {
        out.writeBoolean(value != null);
        if (value != null) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            out.writeInt(bytes.length);
            out.write(bytes);
        }
    }

    private static String readNullable(DataInputStream in) throws IOException {
        if (!in.readBoolean()) {
            return null;
        }
        byte[] bytes = new byte[in.readInt()];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
