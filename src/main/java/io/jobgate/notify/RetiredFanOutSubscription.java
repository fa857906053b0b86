package io.jobgate.notify;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.job.StatusEvent;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import javax.sql.DataSource;
import org.apache.activemq.artemis.api.core.client.ClientSession;
import org.apache.activemq.artemis.jms.client.ActiveMQDestination;
import org.apache.activemq.artemis.jms.client.ActiveMQSession;
import org.springframework.jms.connection.SessionProxy;

/**
 * Releases before 2026-12 wrote tenants' deliveries in a consumer of the topic {@code jobs.events}, through
 * the shared durable subscription {@code jobgate.tenant-webhooks}; the relay's status round writes them now
 * ({@link DeliveryFanOut}). Left in the broker, that subscription would keep a copy of every status event
 * of every job, for nobody, until the broker's disk is full. So each relay instance, once: the events it
 * still holds (published by an instance of the old release, which left their deliveries to it) are fanned
 * out, then it is removed. While an instance of the old release still consumes it, the broker refuses the
 * removal; the route tries again later (its events are fanned out by that instance meanwhile).
 */
public final class RetiredFanOutSubscription {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RetiredFanOutSubscription.class);

    static final String NAME = "jobgate.tenant-webhooks";
    private static final String TOPIC = "jobs.events";
    private static final String SELECTOR = "JobgateStatus IS NOT NULL";
    /** How long an empty subscription is listened to before it counts as drained. */
    private static final long QUIET_MS = 200;
    /**
     * How long events that arrive after the ones it held are still taken: this release's relays publish every status
     * event to the topic too (and write their deliveries themselves), so under steady traffic the subscription is
     * never quiet for {@link #QUIET_MS}; without a bound the drain ran until the gateway stopped.
     */
    private static final long LATE_EVENTS_MS = 2_000;
    /**
     * The longest one try drains: an old instance consuming beside it takes some of what it held, so its count may
     * never be reached while that instance's relay keeps publishing. The removal is then refused and tried next minute.
     */
    private static final long MAX_DRAIN_MS = 60_000;

    private final ConnectionFactory broker;
    private final DataSource database;
    private final DeliveryFanOut fanOut;
    private volatile boolean removed;

    public RetiredFanOutSubscription(ConnectionFactory broker, DataSource database, DeliveryFanOut fanOut) {
        this.broker = broker;
        this.database = database;
        this.fanOut = fanOut;
    }

    /** Fans out what the subscription holds and removes it; answers whether it is gone (nothing to do once it is). */
    public boolean drainAndRemove() throws JMSException, java.sql.SQLException {
        if (removed) {
            return true;
        }
        int drained = 0;
        try (Connection connection = broker.createConnection();
             Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
            // Only where it exists: creating the consumer creates the subscription, and an install that never had it
            // would get one, filled with every status event of every job while it is drained.
            ClientSession.QueueQuery retired = query(session, connection.getClientID());
            if (!retired.isExists()) {
                removed = true;
                return true;
            }
            long held = retired.getMessageCount();
            long start = System.nanoTime();
            connection.start();
            try (MessageConsumer consumer = session.createSharedDurableConsumer(session.createTopic(TOPIC), NAME, SELECTOR)) {
                for (Message m = consumer.receive(QUIET_MS); m != null; m = goOn(drained, held, System.nanoTime() - start)
                        ? consumer.receive(QUIET_MS) : null) {
                    try (java.sql.Connection c = database.getConnection()) {
                        fanOut.write(c, List.of(event(((TextMessage) m).getText())));
                    }
                    session.commit(); // acknowledged once its deliveries are written (each once per endpoint)
                    drained++;
                }
            }
            session.unsubscribe(NAME);
        } catch (jakarta.jms.IllegalStateException stillConsumed) {
            LOG.info("webhooks: the retired subscription {} still has consumers (an instance of an older release?);"
                    + " tried again later ({} events fanned out meanwhile)", NAME, drained);
            return false;
        }
        removed = true;
        if (drained > 0) {
            LOG.info("webhooks: the retired subscription {} was removed after fanning out the {} events it held", NAME, drained);
        }
        return true;
    }

    /** Whether to take another event: what it held, then newer ones for a short while, never past the longest try. */
    static boolean goOn(long drained, long held, long elapsedNanos) {
        long elapsedMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(elapsedNanos);
        return elapsedMs < MAX_DRAIN_MS && (drained < held || elapsedMs < LATE_EVENTS_MS);
    }

    /** The subscription's queue as the broker knows it (asked of the Artemis session under Spring's cached one). */
    private static ClientSession.QueueQuery query(Session session, String clientId) throws JMSException {
        Session target = session instanceof SessionProxy cached ? cached.getTargetSession() : session;
        try {
            // Named as the JMS client names a durable subscription's queue (createSharedDurableConsumer below).
            return ((ActiveMQSession) target).getCoreSession().queueQuery(ActiveMQDestination.createQueueNameForSubscription(true, clientId, NAME));
        } catch (org.apache.activemq.artemis.api.core.ActiveMQException e) {
            JMSException failed = new JMSException("could not ask the broker for the subscription " + NAME + ": " + e.getMessage());
            failed.setLinkedException(e);
            throw failed;
        }
    }

    /** A status event as the relay published it: {job_id, tenant_id, status, attempt, error_category?, at, event_id}. */
    static StatusEvent event(String text) {
        JsonNode e = Json.parseObject(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return new StatusEvent(e.path("event_id").asLong(), UUID.fromString(e.path("job_id").asText()),
                e.path("tenant_id").asText(), e.path("status").asText(), e.path("attempt").asInt(),
                e.hasNonNull("error_category") ? e.path("error_category").asText() : null, Instant.parse(e.path("at").asText()));
    }
}
