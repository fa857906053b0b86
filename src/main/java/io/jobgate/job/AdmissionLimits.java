package io.jobgate.job;

import io.jobgate.infra.Settings;

/**
 * Gateway-wide admission settings: the in-flight window, the limits stored on every job, and the
 * Retry-After hint sent with a capacity refusal.
 */
public record AdmissionLimits(int maxInFlight, int maxAttempts, int maxLifetimeSeconds, long retryAfterSeconds) {

    public static final int DEFAULT_MAX_IN_FLIGHT = 10_000;
    public static final int DEFAULT_MAX_ATTEMPTS = 4;
    public static final int DEFAULT_MAX_LIFETIME_SECONDS = 1800;
    public static final long DEFAULT_RETRY_AFTER_SECONDS = 5;

    public static AdmissionLimits from(Settings s) {
        return new AdmissionLimits(
                s.intValue("jobgate.admission.max-in-flight", DEFAULT_MAX_IN_FLIGHT, 1, 10_000_000),
                s.intValue("jobgate.limits.max-attempts", DEFAULT_MAX_ATTEMPTS, 1, 100),
                s.intValue("jobgate.limits.max-lifetime-seconds", DEFAULT_MAX_LIFETIME_SECONDS, 10, 7 * 24 * 3600),
                s.longValue("jobgate.admission.retry-after-seconds", DEFAULT_RETRY_AFTER_SECONDS, 1, 3600));
    }
}
