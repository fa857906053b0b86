package io.jobgate.adapter;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

class RetryAfterTest {

    static final Instant NOW = Instant.parse("1994-11-06T08:49:00Z");
    /** IMF-fixdate as RFC 9110 writes it: always two digits for the day. */
    static final DateTimeFormatter TWO_DIGIT_DAY = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US);

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
    void aOneDigitDayIsReadAsJavaServersWriteIt() {
        Instant expected = Instant.parse("1994-11-06T08:49:37Z");
        assertThat(RetryAfter.earliestRetry("Sun, 6 Nov 1994 08:49:37 GMT", NOW)).contains(expected);
        assertThat(DateTimeFormatter.RFC_1123_DATE_TIME.format(expected.atOffset(ZoneOffset.UTC)))
                .isEqualTo("Sun, 6 Nov 1994 08:49:37 GMT");
    }

    static Stream<Integer> everyDayOfAMonth() {
        return IntStream.rangeClosed(1, 31).boxed();
    }

    /** Both spellings on each day 1–31 (December has them all). */
    @ParameterizedTest(name = "day {0}")
    @MethodSource("everyDayOfAMonth")
    void eachDayOfTheMonthIsReadInBothSpellings(int day) {
        Instant at = LocalDate.of(2026, 12, day).atTime(3, 36, 34).toInstant(ZoneOffset.UTC);
        Instant now = at.minusSeconds(3);
        String twoDigits = TWO_DIGIT_DAY.format(at.atOffset(ZoneOffset.UTC));
        String rfc1123 = DateTimeFormatter.RFC_1123_DATE_TIME.format(at.atOffset(ZoneOffset.UTC));
        assertThat(RetryAfter.earliestRetry(twoDigits, now)).as(twoDigits).contains(at);
        assertThat(RetryAfter.earliestRetry(rfc1123, now)).as(rfc1123).contains(at);
        if (day < 10) {
            assertThat(rfc1123).as("the one-digit spelling is really exercised").doesNotContain(", 0");
            assertThat(RetryAfter.earliestRetry(twoDigits.replace(", 0", ", "), now)).contains(at);
        }
    }

    /** Strict about everything but the day's digits. */
    @Test
    void otherwiseTheDateFormsStayStrict() {
        assertThat(RetryAfter.earliestRetry("Mon, 6 Nov 1994 08:49:37 GMT", NOW)).as("weekday of another date").isEmpty();
        assertThat(RetryAfter.earliestRetry("Tue, 31 Feb 1995 08:49:37 GMT", NOW)).as("no such date").isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun, 006 Nov 1994 08:49:37 GMT", NOW)).as("three digits").isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun,  6 Nov 1994 08:49:37 GMT", NOW)).as("padded with a space").isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun, 6 Nov 94 08:49:37 GMT", NOW)).as("two-digit year").isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun, 6 Nov 1994 8:49:37 GMT", NOW)).as("one-digit hour").isEmpty();
        assertThat(RetryAfter.earliestRetry("Sun, 6 Nov 1994 08:49:37 +0000", NOW)).as("offset instead of GMT").isEmpty();
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

    /** retry-after-ms (Azure OpenAI's 429s, OpenAI's SDKs): milliseconds, read before Retry-After. */
    @Test
    void retryAfterMsIsReadFirstAndKeptAsMilliseconds() {
        assertThat(RetryAfter.fromReply("1500", "2")).isEqualTo("1500ms");
        assertThat(RetryAfter.fromReply(" 250 ", null)).isEqualTo("250ms");
        assertThat(RetryAfter.fromReply(null, "2")).isEqualTo("2");
        assertThat(RetryAfter.fromReply("", "Sun, 06 Nov 1994 08:49:37 GMT")).isEqualTo("Sun, 06 Nov 1994 08:49:37 GMT");
        assertThat(RetryAfter.fromReply(null, null)).isNull();
        assertThat(RetryAfter.fromReply(" ", " ")).isNull();
        // An unreadable retry-after-ms gives way to a Retry-After; alone, it is kept (a pause of unknown length).
        assertThat(RetryAfter.fromReply("soon", "3")).isEqualTo("3");
        assertThat(RetryAfter.fromReply("soon", null)).isEqualTo("soonms");

        assertThat(RetryAfter.earliestRetry("1500ms", NOW)).contains(NOW.plusMillis(1500));
        assertThat(RetryAfter.earliestRetry("0ms", NOW)).contains(NOW);
        assertThat(RetryAfter.earliestRetry("12.3ms", NOW)).as("a fraction rounds up: never sooner").contains(NOW.plusMillis(13));
        assertThat(RetryAfter.earliestRetry("soonms", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("-5ms", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry("ms", NOW)).isEmpty();
        assertThat(RetryAfter.earliestRetry(Duration.ofDays(2).toMillis() + "ms", NOW)).as("more than a day").isEmpty();
    }
}
