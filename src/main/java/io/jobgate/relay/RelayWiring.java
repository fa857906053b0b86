package io.jobgate.relay;

import java.time.Clock;
import java.util.Map;
import java.util.UUID;

import io.jobgate.infra.InfraWiring;
import io.jobgate.infra.Roles;
import io.jobgate.infra.Settings;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.StatusEvent;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;

/** The wiring of relay: the outbox relay, what wakes it (admissions, ended calls, due times, other instances), dead letters. */
public final class RelayWiring {

    private RelayWiring() {
    }

    /**
     * @param instanceId this instance's name in the admissions' notifications (PostgreSQL NOTIFY): its relay is
     *                   woken by the other instances' admissions, its own wake it directly
     */
    public record Relay(RelaySettings settings, String instanceId, RelayWakeup wakeup, RelayTimer timer, OutboxRelay outbox) {
    }

    /**
     * @param callsAllowed      the calls the providers allow in flight at once, over all instances
     * @param callLimits        each provider's max-concurrency, by name
     * @param statusRoundWrites what a status round also writes for the events it took (tenants' webhook deliveries)
     */
    public static Relay bind(CamelContext context, Settings settings, Roles roles, InfraWiring.Stores stores, Clock clock,
                             JobTransitions transitions, JobFinalizer finalizer, int callsAllowed, Map<String, Integer> callLimits,
                             StatusEvent.RoundWrites statusRoundWrites) throws Exception {
        Registry registry = context.getRegistry();
        // The dispatch window, unless set: what the providers allow in flight; as many answers again, that
        // wait to be finished with their provider slots given back (ProviderCalls.mustWaitToFinish: their
        // jobs hold the window until recorded, and a window of the calls alone kept the next wave of calls
        // behind the finishes of the last); and one message per starting consumer, so a slot freed by an
        // ending call finds a job already dispatched.
        RelaySettings relay = RelaySettings.from(settings, roles.runs(Roles.Role.RELAY),
                2 * callsAllowed + settings.intValue("jobgate.worker.concurrency", 1, 10_000));
        // When relay rounds may start (routes/outbox-relay.camel.yaml, round-gap): wakes count, rounds mark their start and end.
        RelayPace relayPace = new RelayPace(relay.roundGapMs());
        registry.bind("relayPace", relayPace);
        RelayWakeup wakeup = new RelayWakeup(context.createProducerTemplate(), relay.enabled(), relayPace);
        registry.bind("relayWakeup", wakeup); // a call that ended gave its slot back: the next job may go (routes/worker.camel.yaml)
        // A dispatch this instance wrote for later (a retry, a gate's reopening) wakes its relay when due.
        RelayTimer relayTimer = new RelayTimer(clock, wakeup::wake);
        if (relay.enabled()) {
            context.addService(relayTimer, true, true);
            transitions.observe((event, moved, change) -> {
                if (event.has(JobTransitions.Effect.DISPATCH_AT)) {
                    relayTimer.wakeAt(change.at());
                }
            });
        }
        String instanceId = UUID.randomUUID().toString();
        if (relay.enabled()) {
            // Admissions on other instances wake this relay too (PostgreSQL LISTEN/NOTIFY).
            context.addService(new RelayNotifications(stores.dataSource()::getJdbcUrl, stores.dataSource().getUsername(),
                    stores.dataSource().getPassword(), instanceId, wakeup::wake), true, true);
        }
        OutboxRelay outboxRelay = new OutboxRelay(stores.parts().jms(), stores.parts().relayDataSource(), clock, relay, callLimits,
                statusRoundWrites, relayPace);
        registry.bind("outboxRelay", outboxRelay);
        registry.bind("deadLetters", new DeadLetters(new io.jobgate.job.DeadLetteredDispatches(transitions, stores.jdbc()), finalizer, wakeup::wake, clock));
        return new Relay(relay, instanceId, wakeup, relayTimer, outboxRelay);
    }
}
