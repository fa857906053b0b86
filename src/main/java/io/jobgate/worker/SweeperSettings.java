package io.jobgate.worker;

import java.time.Duration;

import io.jobgate.infra.Settings;

/**
 * The sweeper's settings ({@code jobgate.sweeper.*}).
 *
 * @param batch            expired leases and overdue jobs handled per sweep
 * @param quarantineMaxAge quarantine objects of final jobs older than this are deleted
 * @param horizon          how long after its lifetime a job at the provider still waits for the
 *                         provider's answer ({@code jobgate.reconcile.horizon-seconds})
 */
public record SweeperSettings(int batch, Duration quarantineMaxAge, Duration horizon) {

    public static SweeperSettings from(Settings s) {
        return new SweeperSettings(s.intValue("jobgate.sweeper.batch", 1, 10_000),
                s.seconds("jobgate.sweeper.quarantine-max-age-seconds", 0, 30L * 86_400),
                s.seconds("jobgate.reconcile.horizon-seconds", 0, 30L * 86_400));
    }
}
