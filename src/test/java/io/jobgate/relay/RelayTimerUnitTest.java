package io.jobgate.relay;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class RelayTimerUnitTest {

    @Test
    void wakesOncePerSlotAndNeverBeforeTheDueTime() {
        List<Instant> wakes = new CopyOnWriteArrayList<>();
        RelayTimer timer = new RelayTimer(Clock.systemUTC(), () -> wakes.add(Instant.now()));
        timer.start();
        try {
            Instant due = Instant.now().plusMillis(300);
            for (int i = 0; i < 50; i++) {
                timer.wakeAt(due); // a burst of retries due together
            }
            Instant later = due.plusMillis(200);
            timer.wakeAt(later);
            await().atMost(Duration.ofSeconds(5)).until(() -> wakes.size() >= 2);
            await().pollDelay(Duration.ofMillis(200)).atMost(Duration.ofSeconds(1)).until(() -> true);
            assertThat(wakes).hasSize(2);
            assertThat(wakes.get(0)).isAfterOrEqualTo(due);
            assertThat(wakes.get(1)).isAfterOrEqualTo(later);
        } finally {
            timer.stop();
        }
    }

    @Test
    void aStoppedTimerIgnoresWakes() {
        List<Instant> wakes = new CopyOnWriteArrayList<>();
        RelayTimer timer = new RelayTimer(Clock.systemUTC(), () -> wakes.add(Instant.now()));
        timer.start();
        timer.stop();
        timer.wakeAt(Instant.now());
        await().pollDelay(Duration.ofMillis(100)).atMost(Duration.ofSeconds(1)).until(() -> true);
        assertThat(wakes).isEmpty();
    }
}
