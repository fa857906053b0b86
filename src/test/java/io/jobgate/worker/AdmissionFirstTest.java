package io.jobgate.worker;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The admission-first rule on its own, with a monotonic clock the test moves: when admission counts as
 * busy, the hysteresis on the way back, the off switch, and the places of the worker route's first step.
 * (AdmissionFirstRouteTest: the same rule in the running gateway.)
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdmissionFirstTest {

    /** 8 workers, 2 while at least 100 jobs a second over 500 ms (50 in the window), quiet after 500 ms below 50/s. */
    static final AdmissionFirst.Settings ON = new AdmissionFirst.Settings(true, 8, 2, 100, Duration.ofMillis(500),
            Duration.ofMillis(500), Duration.ZERO);

    final AtomicLong nanos = new AtomicLong(1_000_000_000_000L);
    CamelContext camel;

    @BeforeAll
    void camel() {
        camel = new DefaultCamelContext();
    }

    @AfterAll
    void stop() throws Exception {
        camel.close();
    }

    void advance(long millis) {
        nanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    /** {@code jobs} admissions spread evenly over {@code millis}. */
    void admit(AdmissionFirst rule, int jobs, long millis) {
        for (int i = 0; i < jobs; i++) {
            rule.admitted();
            advance(millis / jobs);
        }
    }

    @Test
    void quietAdmissionLeavesFullConcurrency() {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        assertThat(rule.limit()).isEqualTo(8);
        admit(rule, 40, 1000); // 40 a second: below 100
        assertThat(rule.limit()).isEqualTo(8);
        assertThat(rule.yields()).isZero();
    }

    /**
     * Busy admission yields only while accepting and processing compete for the CPU: with CPU to spare (a
     * big machine, or attempts that wait on their provider) nothing slows down; once the CPUs are busy the
     * workers yield, and go on yielding while admission stays busy even as the CPU they freed goes idle.
     * An unknown load leaves the rate alone to decide.
     */
    @Test
    void busyAdmissionYieldsOnlyWhileTheCpusAreBusy() {
        AdmissionFirst.Settings cpuGated = new AdmissionFirst.Settings(true, 8, 2, 100, Duration.ofMillis(500),
                Duration.ofMillis(500), Duration.ZERO, 0.85);
        java.util.concurrent.atomic.AtomicReference<Double> cpu = new java.util.concurrent.atomic.AtomicReference<>(0.40);
        AdmissionFirst rule = new AdmissionFirst(cpuGated, nanos::get, cpu::get);

        admit(rule, 60, 400); // 150 a second
        assertThat(rule.limit()).as("CPU to spare").isEqualTo(8);
        cpu.set(0.97);
        admit(rule, 10, 50);
        assertThat(rule.limit()).as("accepting and processing compete for the CPU").isEqualTo(2);
        cpu.set(0.30);
        admit(rule, 10, 50);
        assertThat(rule.limit()).as("still busy admitting: the CPU freed by yielding does not end it").isEqualTo(2);
        advance(1_000);
        assertThat(rule.limit()).as("admission quiet").isEqualTo(8);

        AdmissionFirst unknown = new AdmissionFirst(cpuGated, nanos::get, () -> -1);
        admit(unknown, 60, 400);
        assertThat(unknown.limit()).as("the load unknown: the rate alone").isEqualTo(2);
    }

    @Test
    void busyAdmissionLimitsThenTheLimitRisesOnlyAfterTheQuietTime() {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        admit(rule, 60, 400); // 150 a second
        assertThat(rule.limit()).isEqualTo(2);
        assertThat(rule.yielding()).isTrue();
        assertThat(rule.yields()).isEqualTo(1);

        // Admission stops: limited while the window holds at least half the busy rate, and for 500 ms after
        // the last admission that saw it so.
        advance(300);
        assertThat(rule.limit()).as("the window still holds half the busy rate").isEqualTo(2);
        advance(140);
        assertThat(rule.limit()).as("below half the busy rate, but only 446 ms since the last loud admission").isEqualTo(2);
        advance(60);
        assertThat(rule.limit()).as("below half the busy rate, 506 ms since the last loud admission").isEqualTo(8);
        assertThat(rule.yields()).isEqualTo(1);
    }

    @Test
    void betweenHalfAndTheBusyRateTheLimitDoesNotFlap() {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        admit(rule, 60, 400);
        assertThat(rule.limit()).isEqualTo(2);
        // 70 a second for 3 s: below the busy rate (100), above half of it (50): stays limited.
        for (int i = 0; i < 30; i++) {
            admit(rule, 7, 100);
            assertThat(rule.limit()).isEqualTo(2);
        }
        // 30 a second: below half; limited until the quiet time passed, then full, and 70 a second does not
        // make it busy again (hysteresis both ways).
        admit(rule, 3, 100);
        admit(rule, 3, 100);
        admit(rule, 3, 100);
        assertThat(rule.limit()).as("quiet for less than 500 ms").isEqualTo(2);
        for (int i = 0; i < 7; i++) {
            admit(rule, 3, 100);
        }
        assertThat(rule.limit()).isEqualTo(8);
        for (int i = 0; i < 30; i++) {
            admit(rule, 7, 100);
            assertThat(rule.limit()).isEqualTo(8);
        }
        assertThat(rule.yields()).isEqualTo(1);
    }

    @Test
    void aLongQuietIsNotMistakenForBusyWhenNobodyAskedMeanwhile() {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        admit(rule, 60, 400);
        assertThat(rule.limit()).isEqualTo(2);
        advance(10_000);
        assertThat(rule.limit()).isEqualTo(8);
    }

    @Test
    void offTheLimitIsAlwaysTheFullConcurrency() {
        AdmissionFirst rule = new AdmissionFirst(new AdmissionFirst.Settings(false, 8, 2, 100, Duration.ofMillis(500),
                Duration.ofMillis(500), Duration.ofMillis(100)), nanos::get);
        admit(rule, 500, 400);
        assertThat(rule.limit()).isEqualTo(8);
        assertThat(rule.yields()).isZero();
        assertThat(rule.admissions()).isEqualTo(500);
    }

    @Test
    void badSettingsFailAtStart() {
        assertThatThrownBy(() -> new AdmissionFirst.Settings(true, 4, 5, 100, Duration.ofMillis(500), Duration.ofMillis(500), Duration.ZERO))
                .hasMessageContaining("busy-concurrency (5) must not be above jobgate.worker.concurrency (4)");
        assertThatThrownBy(() -> new AdmissionFirst.Settings(true, 4, 0, 100, Duration.ofMillis(500), Duration.ofMillis(500), Duration.ZERO))
                .hasMessageContaining("at least 1");
    }

    Exchange exchange() {
        return new DefaultExchange(camel);
    }

    /** Ends an exchange the way its unit of work does: its completions run, as a success or a failure. */
    static java.util.List<org.apache.camel.spi.Synchronization> complete(Exchange exchange, boolean failed) {
        java.util.List<org.apache.camel.spi.Synchronization> completions = exchange.getExchangeExtension().handoverCompletions();
        for (org.apache.camel.spi.Synchronization s : completions) {
            if (failed) {
                s.onFailure(exchange);
            } else {
                s.onComplete(exchange);
            }
        }
        return completions;
    }

    @Test
    void whileBusyWorkersBeyondTheLimitWaitInOrderAndGoOnWhenPlacesFreeOrAdmissionGoesQuiet() throws Exception {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        admit(rule, 60, 400);
        Exchange first = exchange();
        Exchange second = exchange();
        rule.enter(first);
        rule.enter(second);
        assertThat(rule.running()).isEqualTo(2);

        Exchange third = exchange();
        Exchange fourth = exchange();
        CompletableFuture<Void> thirdIn = CompletableFuture.runAsync(() -> enter(rule, third));
        await().atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() == 1);
        CompletableFuture<Void> fourthIn = CompletableFuture.runAsync(() -> enter(rule, fourth));
        await().atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() == 2);
        assertThat(rule.running()).isEqualTo(2);

        // A failed attempt gives its place back too, and the first in line takes it.
        java.util.List<org.apache.camel.spi.Synchronization> firstCompletions = complete(first, true);
        thirdIn.get(5, TimeUnit.SECONDS);
        assertThat(rule.running()).isEqualTo(2);
        assertThat(rule.waiting()).isEqualTo(1);
        assertThat(fourthIn).isNotDone();
        // A completion runs once per exchange: a second call frees nothing more.
        firstCompletions.forEach(c -> c.onComplete(first));
        assertThat(rule.running()).isEqualTo(2);

        // Admission goes quiet: the waiting worker goes on without any place freeing (it checks again by itself).
        advance(1000);
        fourthIn.get(5, TimeUnit.SECONDS);
        assertThat(rule.running()).isEqualTo(3);
        assertThat(rule.waiting()).isZero();
        for (Exchange e : new Exchange[] {second, third, fourth}) {
            complete(e, false);
        }
        assertThat(rule.running()).isZero();
    }

    @Test
    void aLowerLimitLetsRunningAttemptsFinish() throws Exception {
        AdmissionFirst rule = new AdmissionFirst(ON, nanos::get);
        Exchange[] running = new Exchange[5];
        for (int i = 0; i < running.length; i++) {
            running[i] = exchange();
            rule.enter(running[i]);
        }
        admit(rule, 60, 400); // busy now: limit 2, 5 run on
        assertThat(rule.running()).isEqualTo(5);
        Exchange next = exchange();
        CompletableFuture<Void> nextIn = CompletableFuture.runAsync(() -> enter(rule, next));
        await().atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() == 1);
        for (int i = 0; i < 3; i++) {
            complete(running[i], false);
        }
        assertThat(rule.running()).isEqualTo(2);
        assertThat(nextIn).as("2 run: the limit").isNotDone();
        complete(running[3], false);
        nextIn.get(5, TimeUnit.SECONDS);
        assertThat(rule.running()).isEqualTo(2);
    }

    @Test
    void whileBusyAttemptsStartAtLeastTheIntervalApartAndWithoutItOnceQuiet() throws Exception {
        AdmissionFirst rule = new AdmissionFirst(new AdmissionFirst.Settings(true, 8, 2, 100, Duration.ofMillis(500),
                Duration.ofMillis(500), Duration.ofMillis(100)), nanos::get);
        Exchange first = exchange();
        rule.enter(first);
        Exchange second = exchange();
        rule.enter(second); // quiet: no interval
        complete(first, false);
        complete(second, false);
        admit(rule, 60, 400); // busy: 2 at once, 100 ms apart
        Exchange third = exchange();
        rule.enter(third);
        Exchange fourth = exchange();
        CompletableFuture<Void> fourthIn = CompletableFuture.runAsync(() -> enter(rule, fourth));
        await().atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() == 1);
        assertThat(rule.running()).as("a place is free, the interval is not over").isEqualTo(1);
        advance(60);
        await().pollDelay(Duration.ofMillis(250)).atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() == 1);
        assertThat(fourthIn).isNotDone();
        advance(40);
        fourthIn.get(5, TimeUnit.SECONDS);
        assertThat(rule.running()).isEqualTo(2);
        complete(third, false);
        complete(fourth, false);
    }

    static void enter(AdmissionFirst rule, Exchange exchange) {
        try {
            rule.enter(exchange);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
