package io.jobgate.canary;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

import io.jobgate.provider.Provider;

/**
 * A candidate's share of new attempts ({@code canary.share}, percent), decided from the attempt alone — a hash of (job
 * id, attempt number) against the share — so every instance decides the same without a shared counter or lock.
 */
public final class CanaryShare {

    /** Hash buckets of the share: 1/10000 (a share is given to 0.01 %). */
    static final int BUCKETS = 10_000;

    private CanaryShare() {
    }

    /** Does attempt {@code attempt} of {@code jobId} fall within the candidate's share? */
    static boolean inShare(Provider provider, UUID jobId, int attempt) {
        return bucket(jobId, attempt) < Math.round(share(provider) * (BUCKETS / 100.0));
    }

    /** {@code canary.share}: percent of new attempts for the candidate, 0 to 100 (decimals allowed). */
    public static double share(Provider provider) {
        String value = provider.settings().get("canary.share");
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            double share = Double.parseDouble(value.trim());
            if (!(share >= 0 && share <= 100)) {
                throw new NumberFormatException();
            }
            return share;
        } catch (NumberFormatException e) {
            throw new IllegalStateException("jobgate.provider." + provider.name() + ".canary.share must be a percent from 0 to 100, was "
                    + value);
        }
    }

    /** The attempt's bucket, 0 to 9999: the same on every instance. */
    static int bucket(UUID jobId, int attempt) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest((jobId + ":" + attempt).getBytes(StandardCharsets.US_ASCII));
            long n = ((d[0] & 0xffL) << 24) | ((d[1] & 0xffL) << 16) | ((d[2] & 0xffL) << 8) | (d[3] & 0xffL);
            return (int) (n % BUCKETS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
