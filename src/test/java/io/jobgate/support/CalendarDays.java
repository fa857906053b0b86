package io.jobgate.support;

import java.time.Clock;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.stream.Stream;

/**
 * The days the date-sensitive tests run on: {@code -Djobgate.test.calendar=2027-01-01,2027-01-09,...}
 * (.ci/run sets the 1st, 9th, 10th and 31st of a month), otherwise today. Each is a fixed clock at a
 * time of that day, so a test reads its "now" from it and never from the machine's calendar.
 */
public final class CalendarDays {

    private CalendarDays() {
    }

    public static Stream<Clock> clocks() {
        String days = System.getProperty("jobgate.test.calendar", "").trim();
        Stream<LocalDate> dates = days.isEmpty() ? Stream.of(LocalDate.now(ZoneOffset.UTC))
                : Arrays.stream(days.split(",")).map(String::trim).map(LocalDate::parse);
        return dates.map(d -> Clock.fixed(d.atTime(3, 36, 31).toInstant(ZoneOffset.UTC), ZoneOffset.UTC));
    }
}
