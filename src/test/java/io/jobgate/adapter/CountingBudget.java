package io.jobgate.adapter;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** A budget of {@code max} bytes in memory that counts what it holds, what is on disk, and how often it was asked. */
final class CountingBudget implements OutputBytes.Budget {
    final long max;
    final Path dir;
    final AtomicLong held = new AtomicLong();
    final AtomicLong onDisk = new AtomicLong();
    final AtomicInteger reservations = new AtomicInteger();

    CountingBudget(long max, Path dir) {
        this.max = max;
        this.dir = dir;
    }

    @Override
    public boolean reserve(long bytes) {
        reservations.incrementAndGet();
        if (held.get() + bytes > max) {
            return false;
        }
        held.addAndGet(bytes);
        return true;
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
    }
}
