package io.jobgate.adapter;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BackoffTest {

    @Test
    void theJitterWindowDoublesPerRetryUpToTheCap() {
        Backoff b = Backoff.withRandomJitter(Duration.ofSeconds(1), Duration.ofSeconds(30));

        assertThat(b.ceiling(1)).isEqualTo(Duration.ofSeconds(1));
        assertThat(b.ceiling(2)).isEqualTo(Duration.ofSeconds(2));
        assertThat(b.ceiling(5)).isEqualTo(Duration.ofSeconds(16));
        assertThat(b.ceiling(6)).isEqualTo(Duration.ofSeconds(30));
        assertThat(b.ceiling(500)).isEqualTo(Duration.ofSeconds(30));
    }

    @Test
    void fullJitterSpansZeroToTheCeiling() {
        Backoff lowest = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30), bound -> 0);
        Backoff highest = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(30), bound -> bound - 1);

        assertThat(lowest.delay(4)).isZero();
        assertThat(highest.delay(4)).isEqualTo(Duration.ofSeconds(8));
        Backoff random = Backoff.withRandomJitter(Duration.ofMillis(100), Duration.ofSeconds(5));
        for (int i = 0; i < 1000; i++) {
            assertThat(random.delay(3)).isBetween(Duration.ZERO, Duration.ofMillis(400));
        }
    }

    @Test
    void badSettingsFailAtConstruction() {
        assertThatThrownBy(() -> Backoff.withRandomJitter(Duration.ZERO, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Backoff.withRandomJitter(Duration.ofSeconds(2), Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
