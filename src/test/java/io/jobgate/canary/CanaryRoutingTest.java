package io.jobgate.canary;

import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The share is decided from the attempt alone (a hash of job id and attempt number), so every
 * instance decides the same attempt the same way, and over many attempts the candidate's part is
 * the share.
 */
class CanaryRoutingTest {

    @Test
    void theSameAttemptFallsInTheSameBucketAndBucketsSpreadEvenly() {
        UUID job = UUID.fromString("01a231ee-58f2-7e58-ac44-742551b3fbc8");
        assertThat(CanaryShare.bucket(job, 1)).isEqualTo(CanaryShare.bucket(job, 1)).isBetween(0, CanaryShare.BUCKETS - 1);
        int n = 200_000;
        int[] within = new int[3];
        double[] shares = {1, 5, 50};
        java.util.Random random = new java.util.Random(14);
        for (int i = 0; i < n; i++) {
            int bucket = CanaryShare.bucket(new UUID(random.nextLong(), random.nextLong()), 1 + random.nextInt(4));
            for (int s = 0; s < shares.length; s++) {
                if (bucket < Math.round(shares[s] * (CanaryShare.BUCKETS / 100.0))) {
                    within[s]++;
                }
            }
        }
        for (int s = 0; s < shares.length; s++) {
            double measured = 100.0 * within[s] / n;
            assertThat(measured).as("share %s %%", shares[s]).isCloseTo(shares[s], org.assertj.core.data.Offset.offset(shares[s] * 0.06 + 0.1));
        }
    }

    @Test
    void aJobsNextAttemptIsDecidedAfreshSoARetryMayLandElsewhere() {
        long differ = 0;
        for (int i = 0; i < 1000; i++) {
            UUID job = UUID.randomUUID();
            if ((CanaryShare.bucket(job, 1) < 5000) != (CanaryShare.bucket(job, 2) < 5000)) {
                differ++;
            }
        }
        assertThat(differ).isBetween(350L, 650L);
    }
}
