package io.jobgate.relay;

import org.apache.camel.ProducerTemplate;

/**
 * Wakes this instance's relay right after an admission commits, so an idle gateway dispatches at
 * once instead of at the next poll. The wake queue holds one token: wakes during a round coalesce
 * ({@link RelayPace}: and a round that was woken again while it ran makes the next wait a little).
 */
public final class RelayWakeup {

    /** The relay's wake queue; the same options everywhere it is named. */
    public static final String QUEUE = "seda:outbox-relay?size=1&discardWhenFull=true";

    private final ProducerTemplate producer;
    private final boolean enabled;
    private final RelayPace pace;

    public RelayWakeup(ProducerTemplate producer, boolean enabled, RelayPace pace) {
        this.producer = producer;
        this.enabled = enabled;
        this.pace = pace;
    }

    public void wake() {
        if (enabled) {
            pace.woken();
            producer.sendBody(QUEUE, null);
        }
    }
}
