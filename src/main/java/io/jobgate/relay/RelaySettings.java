package io.jobgate.relay;

import io.jobgate.infra.Settings;

/**
 * The outbox relay's settings ({@code jobgate.relay.*}, {@code jobgate.dispatch.max-running}).
 *
 * @param enabled      this instance runs a relay (the role {@code relay} of {@code jobgate.roles})
 * @param maxRunning   gateway-wide window of dispatched, unfinished jobs ({@code jobgate.dispatch.max-running};
 *                     unset: derived from what the providers allow in flight)
 * @param claimSeconds how long a round's claim lasts before another relay may publish the event again
 * @param statusBatch  status events per round
 * @param perTenant    due dispatch events a round takes per tenant at most, in turns: every tenant's first, then
 *                     every tenant's second, ... (1: one job per tenant per round)
 * @param roundGapMs   after a round during which the relay was woken again, how long the next waits (the
 *                     wakes meanwhile make one round, {@link RelayPace}); 0: none
 */
public record RelaySettings(boolean enabled, int maxRunning, int claimSeconds, int statusBatch, int perTenant, int roundGapMs) {

    /** @param derivedMaxRunning the window when {@code jobgate.dispatch.max-running} is left empty */
    public static RelaySettings from(Settings s, boolean enabled, int derivedMaxRunning) {
        boolean set = s.optional("jobgate.dispatch.max-running").isPresent();
        return new RelaySettings(enabled,
                set ? s.intValue("jobgate.dispatch.max-running", 1, 1_000_000) : Math.max(1, Math.min(derivedMaxRunning, 1_000_000)),
                s.intValue("jobgate.relay.claim-seconds", 1, 3600),
                s.intValue("jobgate.relay.status-batch", 1, 10_000),
                s.intValue("jobgate.relay.per-tenant", 1, 1_000),
                s.intValue("jobgate.relay.round-gap-ms", 0, 10_000));
    }
}
