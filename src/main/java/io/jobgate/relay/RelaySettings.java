package io.jobgate.relay;

import io.jobgate.infra.Settings;

/**
 * The outbox relay's settings ({@code jobgate.relay.*}, {@code jobgate.dispatch.max-running}).
 *
 * @param enabled      this instance runs a relay (the role {@code relay} of {@code jobgate.roles})
 * @param maxRunning   gateway-wide window of dispatched, unfinished jobs
 * @param claimSeconds how long a round's claim lasts before another relay may publish the event again
 * @param statusBatch  status events per round
 */
public record RelaySettings(boolean enabled, int maxRunning, int claimSeconds, int statusBatch) {

    public static RelaySettings from(Settings s, boolean enabled) {
        return new RelaySettings(enabled,
                s.intValue("jobgate.dispatch.max-running", 1, 100_000),
                s.intValue("jobgate.relay.claim-seconds", 1, 3600),
                s.intValue("jobgate.relay.status-batch", 1, 10_000));
    }
}
