package io.jobgate.adapter;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.time.format.SignStyle;
import java.time.chrono.IsoChronology;
import java.time.temporal.ChronoField;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The {@code Retry-After} header of RFC 9110 §10.2.3: delta-seconds, or an HTTP-date in any of
 * the three forms a recipient must accept (§5.6.7): IMF-fixdate, obsolete RFC 850, ANSI C asctime.
 * The answer is the earliest instant a new request may start; a missing or invalid header is empty
 * (the caller falls back to its backoff). A date in the past means "now".
 *
 * <p>Also the non-standard {@code retry-after-ms} header (milliseconds), which Azure OpenAI sends on a
 * 429 beside {@code Retry-After} and OpenAI's SDKs read first: {@link #fromReply} picks the value a reply's
 * wait is read from, and a value of that header is kept as {@code <milliseconds>ms} ({@code 1500ms}), a
 * form no {@code Retry-After} can take, so the attempt's {@code retry_after} still says what was obeyed.
 */
public final class RetryAfter {

    /**
     * Sun, 06 Nov 1994 08:49:37 GMT — and Sun, 6 Nov 1994 08:49:37 GMT: a one-digit day is what
     * Java's {@code RFC_1123_DATE_TIME} and other RFC 1123 formatters write, and what common HTTP
     * clients accept. Everything else stays strict (weekday checked against the date, GMT only).
     */
    private static final DateTimeFormatter IMF_FIXDATE = new DateTimeFormatterBuilder()
            .appendPattern("EEE, ")
            .appendValue(ChronoField.DAY_OF_MONTH, 1, 2, SignStyle.NOT_NEGATIVE)
            .appendPattern(" MMM uuuu HH:mm:ss 'GMT'")
            .toFormatter(Locale.US)
            .withResolverStyle(ResolverStyle.STRICT)
            .withChronology(IsoChronology.INSTANCE);
    /** Sunday, 06-Nov-94 08:49:37 GMT — a two-digit year is read within 1970–2069. */
    private static final DateTimeFormatter RFC_850 = new DateTimeFormatterBuilder()
            .appendPattern("EEEE, dd-MMM-")
            .appendValueReduced(ChronoField.YEAR, 2, 2, 1970)
            .appendPattern(" HH:mm:ss 'GMT'")
            .toFormatter(Locale.US)
            .withResolverStyle(ResolverStyle.STRICT)
            .withChronology(IsoChronology.INSTANCE);
    /** Sun Nov  6 08:49:37 1994 */
    private static final DateTimeFormatter ASCTIME = DateTimeFormatter.ofPattern("EEE MMM ppd HH:mm:ss uuuu", Locale.US)
            .withResolverStyle(ResolverStyle.STRICT);

    private static final List<DateTimeFormatter> DATE_FORMS = List.of(IMF_FIXDATE, RFC_850, ASCTIME);
    /** A provider asking for more than a day is treated as broken, not obeyed. */
    static final Duration MAX_DELAY = Duration.ofDays(1);

    /** The non-standard header of milliseconds (Azure OpenAI; read first by OpenAI's SDKs). */
    public static final String MILLIS_HEADER = "retry-after-ms";
    /** The suffix of a wait read from {@code retry-after-ms}: {@code 1500ms}. */
    public static final String MILLIS_SUFFIX = "ms";

    private RetryAfter() {
    }

    /**
     * The wait a reply asks for, from its headers: {@code retry-after-ms} when it holds a number of
     * milliseconds (as {@code <n>ms}), else {@code Retry-After} as sent; an unreadable {@code retry-after-ms}
     * without a {@code Retry-After} is kept as {@code <value>ms} (the provider asked for a pause whose
     * length cannot be read). Null when the reply has neither.
     */
    public static String fromReply(String retryAfterMs, String retryAfter) {
        String millis = retryAfterMs == null ? "" : retryAfterMs.trim();
        if (!millis.isEmpty() && millisOf(millis).isPresent()) {
            return millis + MILLIS_SUFFIX;
        }
        if (retryAfter != null && !retryAfter.isBlank()) {
            return retryAfter;
        }
        return millis.isEmpty() ? null : millis + MILLIS_SUFFIX;
    }

    /** Whole milliseconds (a fraction rounded up: never sooner than asked) of a {@code retry-after-ms} value. */
    private static Optional<Duration> millisOf(String value) {
        if (!value.matches("[0-9]{1,12}(\\.[0-9]{1,6})?")) {
            return Optional.empty();
        }
        long whole = new java.math.BigDecimal(value).setScale(0, java.math.RoundingMode.CEILING).longValueExact();
        return Optional.of(Duration.ofMillis(whole));
    }

    public static Optional<Instant> earliestRetry(String header, Instant now) {
        if (header == null || header.isBlank()) {
            return Optional.empty();
        }
        String value = header.trim();
        if (value.endsWith(MILLIS_SUFFIX)) {
            return millisOf(value.substring(0, value.length() - MILLIS_SUFFIX.length()))
                    .filter(delay -> delay.compareTo(MAX_DELAY) <= 0).map(now::plus);
        }
        if (value.chars().allMatch(Character::isDigit)) {
            if (value.length() > 9) {
                return Optional.empty();
            }
            Duration delay = Duration.ofSeconds(Long.parseLong(value));
            return delay.compareTo(MAX_DELAY) > 0 ? Optional.empty() : Optional.of(now.plus(delay));
        }
        for (DateTimeFormatter form : DATE_FORMS) {
            try {
                Instant at = LocalDateTime.parse(value, form).toInstant(ZoneOffset.UTC);
                if (at.isAfter(now.plus(MAX_DELAY))) {
                    return Optional.empty();
                }
                return Optional.of(at.isBefore(now) ? now : at);
            } catch (DateTimeParseException notThisForm) {
                // try the next form
            }
        }
        return Optional.empty();
    }
}
