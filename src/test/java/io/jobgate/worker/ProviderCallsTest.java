package io.jobgate.worker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.spi.Synchronization;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The places where answers are finished ({@link ProviderCalls#enterFinish}): all of them while the worker's
 * starts do not queue up, an eighth (one) while half its consumers start attempts at once, so that a wave of answers
 * leaves the cores to the starts of the calls that follow it.
 */
class ProviderCallsTest {

    private final CamelContext camel = new DefaultCamelContext();
    private final ProviderCalls calls = ProviderCalls.create(8, 1000, 8, 0);

    @AfterEach
    void stop() {
        calls.shutdownNow();
    }

    @Test
    void everyPlaceFinishesAnAnswerWhileNoStartsQueueUp() throws Exception {
        List<Exchange> finishing = takeEveryPlace();
        assertThat(calls.mustWaitToFinish()).as("all eight places taken").isTrue();
        CompletableFuture<Exchange> ninth = finishLater();
        awaitWaiting(1);
        assertThat(ninth).isNotDone();

        done(finishing.get(0));
        assertThat(ninth.get(10, TimeUnit.SECONDS)).isNotNull();
    }

    @Test
    void answersTakeFreedPlacesInTheOrderTheyCame() throws Exception {
        List<Exchange> finishing = takeEveryPlace();
        CompletableFuture<Exchange> first = finishLater();
        awaitWaiting(1);
        CompletableFuture<Exchange> second = finishLater();
        awaitWaiting(2);

        done(finishing.get(0));
        assertThat(first.get(10, TimeUnit.SECONDS)).isNotNull();
        awaitWaiting(1);
        assertThat(second).isNotDone();
        done(finishing.get(1));
        assertThat(second.get(10, TimeUnit.SECONDS)).isNotNull();
    }

    @Test
    void whileHalfTheConsumersStartAttemptsAnswersAreFinishedInOnePlace() throws Exception {
        List<Exchange> starts = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            starts.add(start());
        }
        assertThat(calls.placesNow()).as("3 of 8 consumers starting: no queue").isEqualTo(8);
        starts.add(start());
        assertThat(calls.placesNow()).as("4 of 8 starting").isEqualTo(1);

        Exchange first = finishNow();
        assertThat(calls.mustWaitToFinish()).isTrue();
        CompletableFuture<Exchange> second = finishLater();
        CompletableFuture<Exchange> third = finishLater();
        awaitWaiting(2);
        assertThat(second).isNotDone();
        assertThat(third).isNotDone();

        // One start handed off: the starts no longer queue up, so the waiting answers take the places
        // given back without any answer being finished first.
        done(starts.remove(0));
        assertThat(second.get(10, TimeUnit.SECONDS)).isNotNull();
        assertThat(third.get(10, TimeUnit.SECONDS)).isNotNull();
        assertThat(calls.waitingToFinish()).isZero();
        assertThat(calls.starting()).isEqualTo(3);

        // Starts queue up again while three answers are being finished: the next one waits until none is left.
        starts.add(start());
        CompletableFuture<Exchange> fourth = finishLater();
        awaitWaiting(1);
        done(first);
        done(second.get());
        assertThat(calls.waitingToFinish()).as("one still finishing, one place").isEqualTo(1);
        assertThat(fourth).isNotDone();
        done(third.get());
        assertThat(fourth.get(10, TimeUnit.SECONDS)).isNotNull();
        done(fourth.get());
        starts.forEach(this::done);
        assertThat(calls.starting()).isZero();
        assertThat(calls.placesNow()).isEqualTo(8);
    }

    @Test
    void aStartBeyondTheInstancesMaxCallsWaitsUntilACallOrAStartEnds() throws Exception {
        ProviderCalls capped = ProviderCalls.create(8, 1000, 8, 2);
        try {
            // Two starts under way: the instance's two places taken.
            Exchange first = startOn(capped);
            Exchange second = startOn(capped);
            CompletableFuture<Exchange> third = CompletableFuture.supplyAsync(() -> startOn(capped));
            await().atMost(Duration.ofSeconds(10)).until(() -> capped.startsHeldAtCap() == 1);
            assertThat(third).as("held before its lease").isNotDone();

            // The first start hands its call off: start and call counted once the start's exchange is done.
            java.util.concurrent.CountDownLatch answer = new java.util.concurrent.CountDownLatch(1);
            capped.execute(() -> {
                try {
                    answer.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            done(first);
            assertThat(capped.inFlight()).isEqualTo(1);
            assertThat(third).as("one call and one start: still full").isNotDone();

            // The second start ends without a call (a duplicate dispatch): its place goes to the third.
            done(second);
            Exchange started = third.get(10, TimeUnit.SECONDS);
            assertThat(capped.starting()).isEqualTo(1);

            // Full again (one call, one start); the call's end lets the next start go.
            CompletableFuture<Exchange> fourth = CompletableFuture.supplyAsync(() -> startOn(capped));
            await().atMost(Duration.ofSeconds(10)).until(() -> capped.startsHeldAtCap() == 2);
            assertThat(fourth).isNotDone();
            answer.countDown();
            assertThat(fourth.get(10, TimeUnit.SECONDS)).isNotNull();
            assertThat(capped.inFlight()).isZero();
            done(started);
            done(fourth.get());
            assertThat(capped.starting()).isZero();
            assertThat(capped.maxCalls()).isEqualTo(2);
        } finally {
            capped.shutdownNow();
        }
    }

    @Test
    void withoutMaxCallsStartsNeverWait() {
        List<Exchange> starts = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            starts.add(start());
        }
        assertThat(calls.starting()).isEqualTo(50);
        assertThat(calls.startsHeldAtCap()).isZero();
        starts.forEach(this::done);
    }

    private Exchange startOn(ProviderCalls on) {
        Exchange exchange = exchange();
        try {
            on.startBegins(exchange);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
        return exchange;
    }

    /** Eight answers being finished: every place taken. */
    private List<Exchange> takeEveryPlace() throws Exception {
        List<Exchange> finishing = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            finishing.add(finishNow());
        }
        return finishing;
    }

    private Exchange start() {
        return startOn(calls);
    }

    private Exchange finishNow() throws Exception {
        Exchange exchange = exchange();
        CompletableFuture.runAsync(() -> enter(exchange)).get(10, TimeUnit.SECONDS);
        return exchange;
    }

    private CompletableFuture<Exchange> finishLater() {
        Exchange exchange = exchange();
        return CompletableFuture.supplyAsync(() -> {
            enter(exchange);
            return exchange;
        });
    }

    private void enter(Exchange exchange) {
        try {
            calls.enterFinish(exchange);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private void awaitWaiting(int answers) {
        await().atMost(Duration.ofSeconds(10)).until(() -> calls.waitingToFinish() == answers);
    }

    private Exchange exchange() {
        return new DefaultExchange(camel);
    }

    /** The exchange is done: what it holds (a start, a place) is given back. */
    private void done(Exchange exchange) {
        for (Synchronization s : exchange.getExchangeExtension().handoverCompletions()) {
            s.onComplete(exchange);
        }
    }
}
