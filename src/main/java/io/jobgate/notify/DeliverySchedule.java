package io.jobgate.notify;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;

/**
 * When a failed delivery is tried again: the n-th retry waits the n-th delay of the schedule
 * (by default 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: a receiver down for a day still gets it),
 * give or take a tenth (jitter, so a receiver back up is not met by every delivery at once), and
 * never less than a {@code Retry-After} the receiver gave. Past the schedule, the delivery is dead.
 */
public final class DeliverySchedule {

    private final List<Duration> delays;

    public DeliverySchedule(List<Duration> delays) {
        if (delays.isEmpty()) {
            throw new IllegalArgumentException("a delivery schedule needs at least one delay");
        }
        this.delays = List.copyOf(delays);
    }

    /** Parses {@code 5s,5m,30m,2h,5h,10h,10h} (s, m, h, d). */
    public static DeliverySchedule parse(String text) {
        List<Duration> delays = new ArrayList<>();
        for (String part : text.split(",")) {
            String p = part.trim();
            if (p.length() < 2) {
                throw new IllegalStateException("setting jobgate.tenant-webhooks.retry-schedule: '" + p + "' is not a delay like 5s, 30m, 2h");
            }
            long n;
            try {
                n = Long.parseLong(p.substring(0, p.length() - 1));
            } catch (NumberFormatException e) {
                throw new IllegalStateException("setting jobgate.tenant-webhooks.retry-schedule: '" + p + "' is not a delay like 5s, 30m, 2h", e);
            }
            delays.add(switch (p.charAt(p.length() - 1)) {
                case 's' -> Duration.ofSeconds(n);
                case 'm' -> Duration.ofMinutes(n);
                case 'h' -> Duration.ofHours(n);
                case 'd' -> Duration.ofDays(n);
                default -> throw new IllegalStateException("setting jobgate.tenant-webhooks.retry-schedule: '" + p + "' has no unit s, m, h or d");
            });
        }
        return new DeliverySchedule(delays);
    }

    /** How many attempts a delivery gets in all: the first and one per delay. */
    public int attempts() {
        return delays.size() + 1;
    }

    /**
     * When the next attempt is due after failed attempt {@code tried} (1-based, counted from its last
     * replay), or empty when that was its last.
     */
    public Optional<Instant> next(int tried, Instant now, Duration retryAfter) {
        if (tried >= attempts()) {
            return Optional.empty();
        }
        long millis = delays.get(tried - 1).toMillis();
        long jitter = millis / 10;
        long delay = millis - jitter + ThreadLocalRandom.current().nextLong(2 * jitter + 1);
        if (retryAfter != null && retryAfter.toMillis() > delay) {
            delay = retryAfter.toMillis();
        }
        return Optional.of(now.plusMillis(delay));
    }
}
