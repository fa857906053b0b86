package io.jobgate.job;

import java.security.SecureRandom;
import java.time.Clock;
import java.util.UUID;

/**
 * UUID version 7 (RFC 9562): a millisecond timestamp then random bits, so ids sort by creation
 * time and new rows land at the right edge of the primary key index.
 */
public final class JobIds {

    private static final SecureRandom RANDOM = new SecureRandom();

    private JobIds() {
    }

    public static UUID next(Clock clock) {
        long millis = clock.millis();
        long randA = RANDOM.nextInt(1 << 12);
        long msb = (millis << 16) | 0x7000L | randA;
        long lsb = (RANDOM.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
        return new UUID(msb, lsb);
    }
}
