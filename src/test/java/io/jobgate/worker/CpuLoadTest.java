package io.jobgate.worker;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CpuLoadTest {

    @Test
    void theLoadIsReadAtMostOncePerIntervalAndItsLastReadingServesMeanwhile() {
        AtomicLong nanos = new AtomicLong(-5_000_000_000L); // nanoTime may be negative
        AtomicInteger reads = new AtomicInteger();
        CpuLoad load = new CpuLoad(() -> reads.incrementAndGet() / 10.0, nanos::get, 100);

        assertThat(load.now()).isEqualTo(0.1);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(99));
        assertThat(load.now()).isEqualTo(0.1);
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(1));
        assertThat(load.now()).isEqualTo(0.2);
        assertThat(reads).hasValue(2);
    }

    @Test
    void thisMachinesLoadIsKnownHere() {
        // Linux, JDK 17: the JDK reads the kernel's counters (or the container's); never above all CPUs.
        double reading = CpuLoad.ofMachine(0).now();
        assertThat(reading).isBetween(0.0, 1.0);
    }
}
