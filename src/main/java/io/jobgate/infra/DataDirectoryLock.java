package io.jobgate.infra;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * One gateway per data directory. A second gateway started on a directory whose embedded parts
 * another one runs would otherwise wait for ever, silently: Artemis waits for the journal's live
 * lock as a shared-store backup would. The OS lock taken here is held for the life of the process
 * and vanishes with it (a SIGKILL included), so it never goes stale; the pid written beside it is
 * only for the message.
 */
public final class DataDirectoryLock implements AutoCloseable {

    static final String FILE = "gateway.lock";

    private final FileChannel channel;
    private final FileLock lock;

    private DataDirectoryLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /** @throws IllegalStateException when a running gateway holds {@code dataDir} (in this JVM or another) */
    public static DataDirectoryLock acquire(Path dataDir) throws IOException {
        Files.createDirectories(dataDir);
        Path file = dataDir.resolve(FILE);
        FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        FileLock lock = tryLock(channel);
        if (lock == null) {
            String holder = new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
            channel.close();
            throw new IllegalStateException("The data directory " + dataDir.toAbsolutePath() + " is in use by another running gateway"
                    + (holder.isEmpty() ? "" : " (pid " + holder + ")")
                    + ": stop it, or give this one a directory of its own (jobgate.data-dir, JOBGATE_DATA_DIR)");
        }
        channel.truncate(0);
        channel.write(java.nio.ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.UTF_8)), 0);
        return new DataDirectoryLock(channel, lock);
    }

    /** The lock, or null when a process holds it: another one, or this JVM (Java then throws instead of answering). */
    static FileLock tryLock(FileChannel channel) throws IOException {
        try {
            return channel.tryLock();
        } catch (OverlappingFileLockException heldInThisJvm) {
            return null;
        }
    }

    @Override
    public synchronized void close() throws IOException {
        if (!channel.isOpen()) {
            return;
        }
        try {
            lock.release();
        } finally {
            channel.close();
        }
    }
}
