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

    private RetryAfter() {
    }

    public static Optional<Instant> earliestRetry(String header, Instant now) {
        if (header == null || header.isBlank()) {
            return Optional.empty();
        }
        String value = header.trim();
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
