package io.jobgate.worker;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class RetryAfterTest {

    static final Instant NOW = Instant.parse("1994-11-06T08:49:00Z");

    @Test
    void deltaSecondsIsAMinimumDelayFromNow() {
        assertThat(RetryAfter.earliestRetry("120", NOW)).contains(NOW.plusSeconds(120));
        assertThat(RetryAfter.earliestRetry(" 0 ", NOW)).contains(NOW);
    }

    @Test
    void allThreeHttpDateFormsMeanTheSameInstant() {
        Instant expected = Instant.parse("1994-11-06T08:49:37Z");
        assertThat(RetryAfter.earliestRetry("Sun, 06 Nov 1994 08:49:37 GMT", NOW)).contains(expected);
        assertThat(RetryAfter.earliestRetry("Sunday, 06-Nov-94 08:49:37 GMT", NOW)).contains(expected);
        assertThat(RetryAfter.earliestRetry("Sun Nov  6 08:49:37 1994", NOW)).contains(expected);
    }

    @Test
    void aDateInThePastMeansNow() {
        assertThat(RetryAfter.earliestRetry("Sun, 06 Nov 1994 08:00:00 GMT", NOW)).contains(NOW);
    }

    @Test
    void missingOrInvalidHeadersFallBackToTheBackoff() {
        assertThat(RetryAfter.earliestRetry(null, NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("-5", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("1.5", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("soon", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun, 06 Nov 1994 08:49:37 CET", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("99999999999999999999", NOW)).isEmpty();
        // more than a day ahead is a broken provider, not an instruction
        assertThat(RetryAfter.earliestRetry(Long.toString(Duration.ofDays(2).toSeconds()), NOW)).isEmpty();
    }
}
