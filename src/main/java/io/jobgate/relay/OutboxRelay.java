package io.jobgate.relay;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.UUID;

import io.jobgate.common.Json;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Destination;
import jakarta.jms.JMSException;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * Rules of the outbox relay route (routes/outbox-relay.camel.yaml): the parameters of a round and
 * the messages it publishes. All messages of a round go to the broker in one JMS transaction (one
 * journal sync instead of one per message); the route marks the events published only after that
 * commit returned. The SQL of a round is in {@code sql/relay-*.sql}.
 */
public final class OutboxRelay {

    /** JMS properties of dispatch and status messages (also usable in selectors). */
    public static final String JOB_ID = "JobgateJobId";
    public static final String TENANT = "JobgateTenant";
    public static final String EVENT_ID = "JobgateEventId";
    public static final String STATUS = "JobgateStatus";

    public static final String DISPATCH_QUEUE = "jobs.dispatch";
    public static final String EVENTS_TOPIC = "jobs.events";

    private final ConnectionFactory connectionFactory;
    private final java.time.Clock clock;
    private final int maxRunning;
    private final int claimSeconds;
    private final int statusBatch;
    /** Names this relay on its claims, so the sweeper releases them when its process is gone. */
    private final String owner = io.jobgate.infra.InstanceLiveness.ownerName("relay-");

    public OutboxRelay(ConnectionFactory connectionFactory, java.time.Clock clock, RelaySettings settings) {
        this.connectionFactory = connectionFactory;
        this.clock = clock;
        this.maxRunning = settings.maxRunning();
        this.claimSeconds = settings.claimSeconds();
        this.statusBatch = settings.statusBatch();
    }

    public String owner() {
        return owner;
    }


    /** Headers the claim statements read: a fresh claim token per round, the window, the batch. */
    public void prepareRound(Exchange exchange) {
        Message m = exchange.getMessage();
        m.setHeader("claimToken", UUID.randomUUID().toString());
        m.setHeader("claimOwner", owner);
        // The gateway's one clock (JobTransitions writes due times with it): what is due is decided by it too.
        m.setHeader("now", java.sql.Timestamp.from(clock.instant()));
        m.setHeader("claimSeconds", claimSeconds);
        m.setHeader("maxRunning", maxRunning);
        m.setHeader("statusBatch", statusBatch);
        // camel-sql looks every :#parameter up in the body first, converting it to a Map each time: an
        // empty Map answers at once (another body costs a failed type conversion per parameter).
        m.setBody(Map.of());
    }

    /** Publishes the claimed dispatch rows to jobs.dispatch; sets {@code eventIds} for the mark. */
    public void publishDispatch(Exchange exchange) throws JMSException {
        publish(exchange, false);
        exchange.setProperty("dispatched", exchange.getMessage().getHeader("published", Integer.class));
    }

    /** Publishes the claimed status rows to the jobs.events topic; sets {@code eventIds} for the mark. */
    public void publishStatus(Exchange exchange) throws JMSException {
        publish(exchange, true);
        exchange.setProperty("announced", exchange.getMessage().getHeader("published", Integer.class));
    }

    @SuppressWarnings("unchecked")
    private void publish(Exchange exchange, boolean status) throws JMSException {
        Message m = exchange.getMessage();
        List<Map<String, Object>> rows = m.getBody(List.class);
        StringJoiner ids = new StringJoiner(",", "{", "}");
        if (!rows.isEmpty()) {
            try (Connection connection = connectionFactory.createConnection();
                 Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
                Destination to = status ? session.createTopic(EVENTS_TOPIC) : session.createQueue(DISPATCH_QUEUE);
                try (MessageProducer producer = session.createProducer(to)) {
                    for (Map<String, Object> row : rows) {
                        producer.send(status ? statusMessage(session, row) : dispatchMessage(session, row));
                        ids.add(row.get("event_id").toString());
                    }
                }
                session.commit(); // the broker has them all, durably, or none
            }
        }
        m.setHeader("eventIds", ids.toString());
        m.setHeader("published", rows.size());
        m.setBody(Map.of()); // the mark's parameters are headers (see prepareRound)
    }

    /** One claimed dispatch row → the message workers consume from jobs.dispatch. */
    static TextMessage dispatchMessage(Session session, Map<String, Object> row) throws JMSException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job_id", row.get("job_id").toString());
        body.put("tenant_id", row.get("tenant_id"));
        body.put("event_id", ((Number) row.get("event_id")).longValue());
        body.put("attempt", ((Number) row.get("attempts")).intValue() + 1);
        body.put("preset_id", row.get("preset_id"));
        body.put("preset_version", row.get("preset_version"));
        body.put("kind", row.get("kind"));
        body.put("provider", row.get("provider"));
        TextMessage message = session.createTextMessage(Json.write(body));
        address(message, row);
        return message;
    }

    /**
     * One claimed status row → the event followers receive on the jobs.events topic. Written with
     * Jackson's generator straight from the row (the claim returns the payload's members as columns):
     * one of these goes out for every admitted job.
     */
    static TextMessage statusMessage(Session session, Map<String, Object> row) throws JMSException {
        String status = (String) row.get("status");
        java.io.StringWriter text = new java.io.StringWriter(192);
        try (com.fasterxml.jackson.core.JsonGenerator g = Json.MAPPER.getFactory().createGenerator(text)) {
            g.writeStartObject();
            g.writeStringField("job_id", row.get("job_id").toString());
            g.writeStringField("tenant_id", (String) row.get("tenant_id"));
            g.writeStringField("status", status);
            g.writeNumberField("attempt", ((Number) row.get("attempt")).intValue());
            if (row.get("error_category") != null) {
                g.writeStringField("error_category", (String) row.get("error_category"));
            }
            g.writeStringField("at", ((java.sql.Timestamp) row.get("created_at")).toInstant().toString());
            g.writeNumberField("event_id", ((Number) row.get("event_id")).longValue());
            g.writeEndObject();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot write the status event " + row.get("event_id"), e);
        }
        TextMessage message = session.createTextMessage(text.toString());
        address(message, row);
        message.setStringProperty(STATUS, status);
        return message;
    }

    /**
     * Delivery is at least once: a relay that dies between the broker's commit and the mark
     * publishes the event again, with the same event id. Consumers deduplicate by job id. (Broker
     * duplicate detection is not used: inside a transaction one duplicate rolls back the whole
     * round, which would stall the relay on the event forever.)
     */
    private static void address(TextMessage message, Map<String, Object> row) throws JMSException {
        long eventId = ((Number) row.get("event_id")).longValue();
        message.setLongProperty(EVENT_ID, eventId);
        message.setStringProperty(JOB_ID, row.get("job_id").toString());
        message.setStringProperty(TENANT, (String) row.get("tenant_id"));
    }
}
