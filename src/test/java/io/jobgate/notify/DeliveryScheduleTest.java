package io.jobgate.notify;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DeliveryScheduleTest {

    static final Instant NOW = Instant.parse("2026-12-04T10:00:00Z");

    @Test
    void theDefaultScheduleSpansMoreThanADayWithinItsJitter() {
        DeliverySchedule schedule = DeliverySchedule.parse("5s,5m,30m,2h,5h,10h,10h");
        assertThat(schedule.attempts()).isEqualTo(8);
        Duration total = Duration.ZERO;
        Duration[] expected = {Duration.ofSeconds(5), Duration.ofMinutes(5), Duration.ofMinutes(30), Duration.ofHours(2),
                Duration.ofHours(5), Duration.ofHours(10), Duration.ofHours(10)};
        for (int tried = 1; tried <= 7; tried++) {
            Duration wait = Duration.between(NOW, schedule.next(tried, NOW, null).orElseThrow());
            Duration nominal = expected[tried - 1];
            assertThat(wait).as("retry %d", tried).isBetween(nominal.minus(nominal.dividedBy(10)), nominal.plus(nominal.dividedBy(10)));
            total = total.plus(wait);
        }
        assertThat(total).isGreaterThan(Duration.ofHours(24));
        assertThat(schedule.next(8, NOW, null)).as("past the last: dead").isEmpty();
    }

    @Test
    void aRetryAfterLongerThanTheScheduleIsTheWait() {
        DeliverySchedule schedule = DeliverySchedule.parse("5s,1m");
        assertThat(schedule.next(1, NOW, Duration.ofMinutes(3))).contains(NOW.plus(Duration.ofMinutes(3)));
        assertThat(Duration.between(NOW, schedule.next(1, NOW, Duration.ofSeconds(1)).orElseThrow())).isGreaterThan(Duration.ofSeconds(4));
    }

    @Test
    void aScheduleThatCannotBeReadStopsTheStart() {
        assertThatThrownBy(() -> DeliverySchedule.parse("5s,soon")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> DeliverySchedule.parse("5x")).isInstanceOf(IllegalStateException.class);
    }
}
