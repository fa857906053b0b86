package io.jobgate.job;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class JobIdsTest {

    @Test
    void idsAreVersion7AndSortByCreationTime() {
        UUID earlier = JobIds.next(Clock.fixed(Instant.parse("2026-01-01T00:00:00Z"), ZoneOffset.UTC));
        UUID later = JobIds.next(Clock.fixed(Instant.parse("2026-01-01T00:00:00.001Z"), ZoneOffset.UTC));

        assertThat(earlier.version()).isEqualTo(7);
        assertThat(earlier.variant()).isEqualTo(2);
        assertThat(earlier.getMostSignificantBits() >>> 16).isEqualTo(Instant.parse("2026-01-01T00:00:00Z").toEpochMilli());
        // PostgreSQL orders uuid by unsigned bytes, the same as this string order.
        assertThat(earlier.toString()).isLessThan(later.toString());
    }
}
