package io.jobgate.reconcile;

import java.time.Duration;

import io.jobgate.infra.Settings;
import io.jobgate.adapter.Backoff;

/**
 * The poller's settings ({@code jobgate.reconcile.*}).
 *
 * @param firstCheck when a job that started waiting on its provider is first asked about
 * @param checkCap   the longest interval between checks (they grow from firstCheck)
 * @param batch      due checks claimed per poll
 * @param concurrency the claimed checks asked and applied at once (each a lookup, maybe an output stored, a finalize:
 *                    mostly waiting on the provider, the S3 server and PostgreSQL)
 */
public record ReconcileSettings(Duration firstCheck, Duration checkCap, int batch, int concurrency) {

    public static ReconcileSettings from(Settings s) {
        return new ReconcileSettings(s.millis("jobgate.reconcile.first-check-ms", 10, 3_600_000),
                s.millis("jobgate.reconcile.check-cap-ms", 10, 86_400_000),
                s.intValue("jobgate.reconcile.batch", 1, 10_000),
                s.intValue("jobgate.reconcile.concurrency", 1, 256));
    }

    public Backoff checks() {
        return Backoff.withRandomJitter(firstCheck, checkCap);
    }
}
