package io.jobgate.worker;

import io.jobgate.adapter.Backoff;
import java.time.Duration;

import io.jobgate.infra.Settings;

/**
 * The worker's settings ({@code jobgate.worker.*}, defaults in config/application.properties).
 *
 * @param leaseMargin   a lease lasts the provider's call deadline plus this
 * @param gateFullDelay about how long a job waits at a provider's full gate (jittered)
 * @param backoffBase   first retry's backoff ceiling (capped exponential, full jitter)
 * @param backoffCap    the backoff's cap
 * @param backoffJitter each retry waits a uniform time up to its ceiling (full jitter); without, exactly
 *                      its ceiling (retry times that can be read off a test, or spaced exactly)
 * @param maxOutputBytes the largest output a provider may return
 * @param inMemoryOutputBytes outputs up to this size are checked in memory and written once to their
 *                       readable key; bigger ones are quarantined, checked, copied and deleted
 * @param publicBaseUrl how providers reach this gateway (webhook URLs), without a trailing slash
 */
public record WorkerSettings(Duration leaseMargin, Duration gateFullDelay, Duration backoffBase, Duration backoffCap,
                             boolean backoffJitter, long maxOutputBytes, long inMemoryOutputBytes, String publicBaseUrl) {

    public static WorkerSettings from(Settings s) {
        return new WorkerSettings(
                s.seconds("jobgate.worker.lease-margin-seconds", 1, 3600),
                s.millis("jobgate.worker.gate-full-delay-ms", 10, 60_000),
                s.millis("jobgate.worker.backoff-base-ms", 1, 3_600_000),
                s.millis("jobgate.worker.backoff-cap-ms", 1, 86_400_000),
                s.bool("jobgate.worker.backoff-jitter"),
                s.longValue("jobgate.worker.max-output-bytes", 1, 1L << 31),
                s.longValue("jobgate.worker.in-memory-output-max-bytes", 0, 1L << 31),
                s.required("jobgate.public-base-url").replaceAll("/+$", ""));
    }

    public Backoff backoff() {
        return backoffJitter ? Backoff.withRandomJitter(backoffBase, backoffCap)
                : new Backoff(backoffBase, backoffCap, bound -> bound - 1);
    }
}
