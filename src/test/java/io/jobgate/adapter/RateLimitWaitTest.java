package io.jobgate.adapter;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.stream.Stream;

import io.jobgate.support.CalendarDays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

/** How long a 429 keeps a provider waiting, on the days .ci/run picks (see {@link CalendarDays}). */
@Tag("calendar")
class RateLimitWaitTest {

    static final Duration BACKOFF = Duration.ofMillis(200);
    static final Duration RATE_LIMIT_BACKOFF = Duration.ofSeconds(60);

    static Stream<Clock> days() {
        return CalendarDays.clocks();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("days")
    void anHttpDateAsJavaServersWriteItIsTheMinimumWait(Clock clock) {
        Instant now = clock.instant();
        Instant date = now.plusSeconds(3);
        String header = DateTimeFormatter.RFC_1123_DATE_TIME.format(date.atOffset(ZoneOffset.UTC));

        RateLimitWait wait = RateLimitWait.after(header, now, BACKOFF, RATE_LIMIT_BACKOFF);

        assertThat(wait.until()).as(header).isEqualTo(date);
        assertThat(wait.headerUnderstood()).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("days")
    void anUnreadableHeaderWaitsTheProvidersRateLimitBackoffNotTheShortOne(Clock clock) {
        Instant now = clock.instant();

        RateLimitWait wait = RateLimitWait.after("in a little while", now, BACKOFF, RATE_LIMIT_BACKOFF);

        assertThat(wait.until()).isEqualTo(now.plus(RATE_LIMIT_BACKOFF));
        assertThat(wait.headerUnderstood()).isFalse();
    }

    @Test
    void withoutAHeaderTheUsualBackoffApplies() {
        Instant now = Instant.parse("2026-12-01T03:36:31Z");
        RateLimitWait wait = RateLimitWait.after(null, now, BACKOFF, RATE_LIMIT_BACKOFF);
        assertThat(wait.until()).isEqualTo(now.plus(BACKOFF));
        assertThat(wait.headerUnderstood()).isNull();
    }
}
