package io.jobgate.admission;

import io.jobgate.infra.Settings;

/**
 * Gateway-wide admission settings: the in-flight window, the limits stored on every job, and the
 * Retry-After hint sent with a capacity refusal.
 */
public record AdmissionLimits(int maxInFlight, int maxAttempts, int maxLifetimeSeconds, long retryAfterSeconds) {

    public static AdmissionLimits from(Settings s) {
        return new AdmissionLimits(
                s.intValue("jobgate.admission.max-in-flight", 1, 10_000_000),
                s.intValue("jobgate.limits.max-attempts", 1, 100),
                s.intValue("jobgate.limits.max-lifetime-seconds", 10, 7 * 24 * 3600),
                s.longValue("jobgate.admission.retry-after-seconds", 1, 3600));
    }
}
