package io.jobgate.adapter;

import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.ref.Cleaner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An answer's output as bytes, decoded while its reply was read ({@link JsonParts#decoded}): held in memory
 * within a budget of bytes ({@link Budget}), or in a file once the budget had no room for it. The contract's
 * {@code JobgateOutputBytes}.
 *
 * <p>Why: a real image's reply is megabytes of base64. Read whole, then parsed, then decoded, each answer took
 * four copies of itself on the heap (the reply, its text, the text's bytes, the image), and a wave of 400 answers
 * arriving at once outgrew a 512 MiB heap or kept its collector busy with nothing else. Decoded as it streams in,
 * an answer holds only its image, counted against the budget from its first byte.
 */
public final class OutputBytes {

    /** Where outputs are counted while held in memory, and where those beyond it wait. */
    public interface Budget {
        /** Takes {@code bytes} of the budget, or nothing and false when it has no room for them. */
        boolean reserve(long bytes);

        /** Gives back {@code bytes} taken by {@link #reserve}. */
        void release(long bytes);

        /** A new file for an output beyond the budget (not created yet). */
        Path newFile();

        /** An output of {@code bytes} went to a file ({@code bytes} negative: a file deleted). */
        void onDisk(long bytes);
    }

    /** No limit, nothing counted: where no worker holds answers (tests, a helper used outside a call). */
    public static final Budget UNLIMITED = new Budget() {
        @Override
        public boolean reserve(long bytes) {
            return true;
        }

        @Override
        public void release(long bytes) {
        }

        @Override
        public Path newFile() {
            throw new IllegalStateException("an unlimited budget never spills");
        }

        @Override
        public void onDisk(long bytes) {
        }
    };

    /**
     * The backstop of {@link #discard}: an output nobody discarded (an answer dropped on a path that never reached
     * the worker's set-aside step) gives its bytes back once it is unreachable.
     */
    private static final Cleaner CLEANER = Cleaner.create();

    private final byte[] memory;
    private final Path file;
    private final long size;
    private final Discard discard;
    private final Cleaner.Cleanable cleanable;

    private OutputBytes(byte[] memory, Path file, long size, Budget budget) {
        this.memory = memory;
        this.file = file;
        this.size = size;
        this.discard = new Discard(budget, file, size);
        this.cleanable = budget == UNLIMITED ? null : CLEANER.register(this, discard);
    }

    /**
     * What discarding gives back (an output in memory is its {@code size} in bytes of the budget); holds nothing of
     * the {@link OutputBytes} itself (its cleaner's action).
     */
    private static final class Discard implements Runnable {
        private final Budget budget;
        private final Path file;
        private final long size;
        private final AtomicBoolean done = new AtomicBoolean();

        Discard(Budget budget, Path file, long size) {
            this.budget = budget;
            this.file = file;
            this.size = size;
        }

        @Override
        public void run() {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            if (file == null) {
                budget.release(size);
                return;
            }
            budget.onDisk(-size);
            deleteQuietly(file);
        }
    }

    /** Deletes a file an output waited in; one that will not go is left to the next start, which empties the directory. */
    public static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            org.slf4j.LoggerFactory.getLogger(OutputBytes.class).warn("could not delete {} ({}): the next start empties its directory",
                    file, e.toString());
        }
    }

    /** Bytes an adapter already holds (counted nowhere). */
    public static OutputBytes of(byte[] bytes) {
        return new OutputBytes(bytes, null, bytes.length, UNLIMITED);
    }

    public long size() {
        return size;
    }

    public boolean onDisk() {
        return file != null;
    }

    /** The whole output: the held array itself, or read from its file. */
    public byte[] bytes() throws IOException {
        if (memory != null) {
            return memory;
        }
        if (discard.done.get()) {
            throw new IOException("the output's file was discarded");
        }
        return Files.readAllBytes(file);
    }

    public InputStream open() throws IOException {
        return memory != null ? new ByteArrayInputStream(memory) : Files.newInputStream(file);
    }

    /** Its memory given back to the budget, or its file deleted; once (later calls do nothing). */
    public void discard() {
        if (cleanable != null) {
            cleanable.clean();
        } else {
            discard.run();
        }
    }

    /**
     * Writes an output in: into memory while the budget has room (the expected size taken at once, more as it
     * grows), then, from the first write the budget refuses, into a file (what was in memory moved there and
     * given back). {@link #close} makes the {@link OutputBytes}; an abandoned sink must be {@link #abandon}ed.
     */
    public static final class Sink extends OutputStream {
        private static final int SMALLEST = 8 * 1024;

        private final Budget budget;
        private byte[] buffer;
        private int count;
        private Path file;
        private OutputStream toFile;
        private long fileSize;
        private OutputBytes made;

        /** @param expected the size the output will likely have (0: unknown); reserved at once when it fits */
        public Sink(Budget budget, long expected) {
            this.budget = budget;
            int initial = (int) Math.min(Math.max(expected, SMALLEST), Integer.MAX_VALUE - 16);
            if (budget.reserve(initial)) {
                buffer = new byte[initial];
            } else if (budget.reserve(SMALLEST)) {
                buffer = new byte[SMALLEST];
            } else {
                buffer = new byte[0];
            }
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (toFile == null && count + len > buffer.length && !grow(count + len)) {
                spill();
            }
            if (toFile != null) {
                toFile.write(b, off, len);
                fileSize += len;
                return;
            }
            System.arraycopy(b, off, buffer, count, len);
            count += len;
        }

        /**
         * Doubles the buffer (at least to {@code needed}) if the budget has room for it; never by less: growing by
         * what each write needs, on a nearly full budget, copied the whole buffer once per write.
         */
        private boolean grow(long needed) {
            long capacity = Math.max(needed, Math.max((long) buffer.length * 2, SMALLEST));
            if (capacity > Integer.MAX_VALUE - 16 || !budget.reserve(capacity - buffer.length)) {
                return false;
            }
            buffer = Arrays.copyOf(buffer, (int) capacity);
            return true;
        }

        private void spill() throws IOException {
            file = budget.newFile();
            toFile = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16);
            toFile.write(buffer, 0, count);
            fileSize = count;
            budget.release(buffer.length);
            buffer = null;
            count = 0;
        }

        /** The output written: in memory (an array of its exact size, the rest of the reservation given back) or in its file. */
        @Override
        public void close() throws IOException {
            if (made != null) {
                return;
            }
            if (toFile != null) {
                try {
                    toFile.close();
                } catch (IOException e) {
                    abandon();
                    throw e;
                }
                budget.onDisk(fileSize);
                made = new OutputBytes(null, file, fileSize, budget);
                return;
            }
            byte[] exact = count == buffer.length ? buffer : Arrays.copyOf(buffer, count);
            budget.release(buffer.length - (long) exact.length);
            buffer = null;
            made = new OutputBytes(exact, null, exact.length, budget);
        }

        /** What {@link #close} made. */
        public OutputBytes output() {
            if (made == null) {
                throw new IllegalStateException("the sink is not closed");
            }
            return made;
        }

        /** A sink whose output will never be made (its reply failed): its memory given back, its file deleted. */
        public void abandon() {
            if (made != null) {
                made.discard();
                return;
            }
            if (buffer != null) {
                budget.release(buffer.length);
                buffer = null;
            }
            if (toFile != null) {
                try {
                    toFile.close();
                } catch (IOException ignored) {
                    // deleted next
                }
                deleteQuietly(file);
                toFile = null;
            }
        }
    }
}
