package io.jobgate.worker;

import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;

/**
 * How busy this machine's CPUs are (0..1 of all of them; a container's own share where the JVM
 * sees one), read at most once per {@code every}: the reading covers the time since the one before
 * (the JDK computes it from the counters it kept last time) and costs a read of the kernel's
 * counters. Negative when the platform cannot tell.
 */
final class CpuLoad {

    private final DoubleSupplier reading;
    private final LongSupplier nanoTime;
    private final long everyNanos;
    private long readAt;
    private boolean read;
    private double last = -1;

    /** @param reading the machine's recent CPU load, 0..1 (negative: unknown) */
    CpuLoad(DoubleSupplier reading, LongSupplier nanoTime, long everyMillis) {
        this.reading = reading;
        this.nanoTime = nanoTime;
        this.everyNanos = TimeUnit.MILLISECONDS.toNanos(everyMillis);
    }

    /** This machine's CPU load through the JDK, read at most every {@code everyMillis}. */
    static CpuLoad ofMachine(long everyMillis) {
        java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        DoubleSupplier reading = os instanceof com.sun.management.OperatingSystemMXBean sun ? sun::getCpuLoad : () -> -1;
        return new CpuLoad(reading, System::nanoTime, everyMillis);
    }

    /** The latest reading, taken anew when the last one is older than the interval. */
    synchronized double now() {
        long t = nanoTime.getAsLong();
        if (!read || t - readAt >= everyNanos) {
            last = reading.getAsDouble();
            readAt = t;
            read = true;
        }
        return last;
    }
}
