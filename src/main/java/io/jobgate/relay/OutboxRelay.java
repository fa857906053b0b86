package io.jobgate.relay;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.UUID;

import io.jobgate.common.Json;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.DeliveryMode;
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
 * commit returned. The SQL of a dispatch round is in {@code sql/relay-*.sql}; a status round's is here.
 */
public final class OutboxRelay {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(OutboxRelay.class);

    /** JMS properties of dispatch and status messages (also usable in selectors). */
    public static final String JOB_ID = "JobgateJobId";
    public static final String TENANT = "JobgateTenant";
    public static final String EVENT_ID = "JobgateEventId";
    public static final String STATUS = "JobgateStatus";

    public static final String DISPATCH_QUEUE = "jobs.dispatch";
    public static final String EVENTS_TOPIC = "jobs.events";

    private final ConnectionFactory connectionFactory;
    private final javax.sql.DataSource dataSource;
    private final java.time.Clock clock;
    private final int maxRunning;
    private final String providerLimits;
    private final int claimSeconds;
    private final int statusBatch;
    private final int perTenant;
    private final RelayPace pace;
    private final io.jobgate.job.StatusEvent.RoundWrites statusRoundWrites;
    /** Names this relay on its claims, so the sweeper releases them when its process is gone. */
    private final String owner = io.jobgate.infra.InstanceLiveness.ownerName("relay-");

    /**
     * @param dataSource     the relay's pool (commits without waiting for the WAL flush), for the status rounds
     * @param providerLimits each provider's max-concurrency ({@code name=limit,...}): a round dispatches a
     *                       provider's jobs only while it has calls free (V30)
     * @param statusRoundWrites what a status round also writes for the events it took, in its transaction
     *                       (tenants' webhook deliveries)
     * @param pace           when rounds may start (marked here as they start and end)
     */
    public OutboxRelay(ConnectionFactory connectionFactory, javax.sql.DataSource dataSource, java.time.Clock clock,
                       RelaySettings settings, java.util.Map<String, Integer> providerLimits,
                       io.jobgate.job.StatusEvent.RoundWrites statusRoundWrites, RelayPace pace) {
        this.pace = pace;
        this.statusRoundWrites = statusRoundWrites;
        this.connectionFactory = connectionFactory;
        this.providerLimits = providerLimits.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(java.util.stream.Collectors.joining(","));
        this.dataSource = dataSource;
        this.clock = clock;
        this.maxRunning = settings.maxRunning();
        this.claimSeconds = settings.claimSeconds();
        this.statusBatch = settings.statusBatch();
        this.perTenant = settings.perTenant();
    }

    public String owner() {
        return owner;
    }


    /** Headers the claim statements read: a fresh claim token per round, the window, the batch. */
    public void prepareRound(Exchange exchange) {
        pace.roundStarts();
        Message m = exchange.getMessage();
        m.setHeader("claimToken", UUID.randomUUID().toString());
        m.setHeader("claimOwner", owner);
        // The gateway's one clock (JobTransitions writes due times with it): what is due is decided by it too.
        m.setHeader("now", java.sql.Timestamp.from(clock.instant()));
        m.setHeader("claimSeconds", claimSeconds);
        m.setHeader("maxRunning", maxRunning);
        m.setHeader("providerLimits", providerLimits);
        m.setHeader("statusBatch", statusBatch);
        m.setHeader("perTenant", perTenant);
        // camel-sql looks every :#parameter up in the body first, converting it to a Map each time: an
        // empty Map answers at once (another body costs a failed type conversion per parameter).
        m.setBody(Map.of());
    }

    /**
     * Publishes the claimed dispatch rows to jobs.dispatch; sets {@code eventIds} for the mark, and
     * {@code anotherRound} when a tenant took its whole share ({@code per-tenant}): it may have more due
     * now, so the next round runs at once. A round that took less from everyone took all that was due
     * (or all the room left); the next one waits for a wake (an admission, a due time) or the timer,
     * instead of an empty round after every round.
     */
    @SuppressWarnings("unchecked")
    public void publishDispatch(Exchange exchange) throws JMSException {
        List<Map<String, Object>> rows = exchange.getMessage().getBody(List.class);
        Map<Object, Integer> perTenantTaken = new java.util.HashMap<>();
        boolean shareTaken = false;
        for (Map<String, Object> row : rows) {
            shareTaken |= perTenantTaken.merge(row.get("tenant_id"), 1, Integer::sum) >= perTenant;
        }
        String claimToken = exchange.getMessage().getHeader("claimToken", String.class);
        try {
            publish(exchange);
        } catch (JMSException | RuntimeException brokerFailed) {
            releaseClaims(rows, claimToken);
            throw brokerFailed;
        }
        exchange.setProperty("dispatched", exchange.getMessage().getHeader("published", Integer.class));
        pace.roundEnded();
        exchange.setProperty("anotherRound", shareTaken);
    }

    /** How soon the events of a round whose publish failed may be claimed again (not the whole claim: a broker failover takes seconds). */
    static final java.time.Duration RETRY_AFTER_FAILED_PUBLISH = java.time.Duration.ofSeconds(1);

    /**
     * The broker refused the round (a failover under way, most likely): its claims end in a second instead of
     * at their full length ({@code claim-seconds}, 30 s by default), so the next rounds publish them again
     * soon after the broker is back. Ended, not cleared: a claim that ran out is published again on the slot
     * its job already took (the claim's "reclaims"), where a cleared one would take a second slot. Best
     * effort: if the database is gone too, the claims simply run out.
     */
    private void releaseClaims(List<Map<String, Object>> rows, String claimToken) {
        if (rows.isEmpty() || claimToken == null) {
            return;
        }
        StringJoiner ids = new StringJoiner(",", "{", "}");
        rows.forEach(row -> ids.add(row.get("event_id").toString()));
        try (java.sql.Connection c = dataSource.getConnection();
             java.sql.PreparedStatement ps = c.prepareStatement("UPDATE outbox SET claimed_until = ? WHERE event_id = ANY (?::bigint[])"
                     + " AND claim_token = ?::uuid AND published_at IS NULL")) {
            ps.setTimestamp(1, java.sql.Timestamp.from(clock.instant().plus(RETRY_AFTER_FAILED_PUBLISH)));
            ps.setString(2, ids.toString());
            ps.setString(3, claimToken);
            ps.executeUpdate();
        } catch (java.sql.SQLException | RuntimeException e) {
            LOG.warn("relay: the claims of a round the broker refused were not ended early ({}); they run out as claimed", e.toString());
        }
    }

    /**
     * The status events due now, oldest first, taken for this round and marked published in one
     * statement: the inner {@code FOR UPDATE SKIP LOCKED} keeps another instance's round off them (as it
     * skipped a claim), and so does the {@code claimed_until} test skip an event another instance claimed
     * the old way. The mark is the round's row lock (one row version, where a lock and then a mark wrote a
     * lock record and a version), and it is seen by others only if the round commits, which it does only
     * after the broker committed the messages. The payload's members come back as columns.
     */
    static final String TAKE_STATUS = """
            UPDATE outbox o SET published_at = ?, claimed_until = NULL
             WHERE o.event_id = ANY (ARRAY(
                   SELECT event_id FROM outbox
                    WHERE event_type = 'status' AND published_at IS NULL AND available_at <= ?
                      AND (claimed_until IS NULL OR claimed_until < ?)
                    ORDER BY event_id
                    LIMIT ?
                      FOR UPDATE SKIP LOCKED))
               AND o.published_at IS NULL
            RETURNING o.event_id, o.job_id, o.tenant_id, coalesce(o.payload->>'status', '') AS status,
                      coalesce((o.payload->>'attempt')::int, 0) AS attempt, o.payload->>'error_category' AS error_category,
                      o.created_at, o.payload->>'moved_to' AS moved_to""";

    /**
     * One round of status events for followers of the jobs.events topic, in one transaction of the
     * relay's pool: take the due events (locked and marked published in one statement), write what
     * follows from them in PostgreSQL (tenants' webhook deliveries: {@code statusRoundWrites}), publish
     * them in one JMS transaction, commit. The deliveries are written here, where the events are taken,
     * rather than by a consumer of the topic: such a consumer took every event of every job back out of
     * the broker (a durable subscription: stored, delivered, acknowledged, one transaction each), for
     * tenants without an endpoint too. One for every admitted job ({@code queued}), so the round is cut
     * to what at least once needs: one statement, one row version per event, no lock record of its
     * own. A round that fails (broker, database) rolls back, so its events are unmarked and left to the
     * next round; a round whose process dies loses its transaction with its connection. A round stuck
     * in the broker's commit holds them no longer than a claim lasted: the transaction's
     * {@code idle_in_transaction_session_timeout} is the claim's length, after which PostgreSQL ends the
     * session, the mark is rolled back and the events are published again (at least once, as when a
     * claim expired).
     */
    public void statusRound(Exchange exchange) throws java.sql.SQLException, JMSException {
        java.sql.Timestamp now = java.sql.Timestamp.from(clock.instant());
        int published = 0;
        try (java.sql.Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            try {
                try (java.sql.PreparedStatement ps = c.prepareStatement("SET LOCAL idle_in_transaction_session_timeout = "
                        + Math.multiplyExact(claimSeconds, 1000) + ";\n" + TAKE_STATUS)) {
                    planEachTime(ps);
                    ps.setTimestamp(1, now);
                    ps.setTimestamp(2, now);
                    ps.setTimestamp(3, now);
                    ps.setInt(4, statusBatch);
                    ps.execute(); // the SET's count first, then the rows: one round trip
                    while (!ps.getMoreResults() && ps.getUpdateCount() != -1) {
                        // skip to the UPDATE's rows
                    }
                    List<io.jobgate.job.StatusEvent> taken;
                    try (java.sql.ResultSet rs = ps.getResultSet()) {
                        taken = rs == null ? List.of() : taken(rs);
                    }
                    if (!taken.isEmpty()) {
                        // Before the broker's commit: a database that fails here sends nothing twice.
                        statusRoundWrites.write(c, taken);
                        published = publishStatus(taken);
                    }
                }
                c.commit();
            } catch (java.sql.SQLException | JMSException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(true);
            }
        }
        exchange.getMessage().setHeader("published", published);
        exchange.setProperty("announced", published);
    }

    /** The taken rows, oldest first (an UPDATE's RETURNING has no order of its own). */
    private static List<io.jobgate.job.StatusEvent> taken(java.sql.ResultSet rs) throws java.sql.SQLException {
        List<io.jobgate.job.StatusEvent> rows = new java.util.ArrayList<>();
        while (rs.next()) {
            rows.add(new io.jobgate.job.StatusEvent(rs.getLong(1), rs.getObject(2, UUID.class), rs.getString(3),
                    rs.getString(4), rs.getInt(5), rs.getString(6), rs.getTimestamp(7).toInstant(), rs.getString(8)));
        }
        rows.sort(java.util.Comparator.comparingLong(io.jobgate.job.StatusEvent::eventId));
        return rows;
    }

    /** Publishes the taken events in one JMS transaction, in their order; answers how many. */
    private int publishStatus(List<io.jobgate.job.StatusEvent> rows) throws JMSException {
        try (Connection connection = connectionFactory.createConnection();
             Session session = connection.createSession(true, Session.SESSION_TRANSACTED);
             MessageProducer producer = session.createProducer(session.createTopic(EVENTS_TOPIC))) {
            for (io.jobgate.job.StatusEvent r : rows) {
                producer.send(statusMessage(session, r));
            }
            session.commit(); // the broker has them all, durably, or none
        }
        return rows.size();
    }

    /**
     * Planned for its parameters at every run (an unnamed statement), never from a plan kept on the
     * connection: the relay's first rounds run while the outbox is a few pages, and a generic plan
     * made then (a sequential scan, cheapest on a tiny table) stayed in use as the table grew to
     * hundreds of thousands of rows: seen as a mark of 200 events taking 30-90 ms instead of 5.
     * Planning a statement a few times a second costs nothing next to that.
     */
    private static void planEachTime(java.sql.PreparedStatement statement) throws java.sql.SQLException {
        statement.unwrap(org.postgresql.PGStatement.class).setPrepareThreshold(0);
    }

    @SuppressWarnings("unchecked")
    private void publish(Exchange exchange) throws JMSException {
        Message m = exchange.getMessage();
        List<Map<String, Object>> rows = m.getBody(List.class);
        StringJoiner ids = new StringJoiner(",", "{", "}");
        if (!rows.isEmpty()) {
            try (Connection connection = connectionFactory.createConnection();
                 Session session = connection.createSession(true, Session.SESSION_TRANSACTED)) {
                Destination to = session.createQueue(DISPATCH_QUEUE);
                try (MessageProducer producer = session.createProducer(to)) {
                    for (Map<String, Object> row : rows) {
                        producer.send(dispatchMessage(session, row), DeliveryMode.PERSISTENT, priority(row),
                                jakarta.jms.Message.DEFAULT_TIME_TO_LIVE);
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

    /**
     * A dispatch message's JMS priority from how many of its tenant's jobs are dispatched and not yet ended
     * when it goes out: 9 for a tenant with none, one less each time that number doubles (8 for 1–2, 7 for
     * 3–6, ..., 4, the JMS default, for 31–62), 0 from 511. The relay's turns are fair within a round, but
     * jobs.dispatch is one queue: without priorities a quiet tenant's job would wait behind every message of
     * a flood published in the rounds before it (up to the providers' max-concurrency), as long as those take
     * to start. Artemis delivers a queue's higher priorities first (the consumers buffer nothing: window 0),
     * so a tenant with little running goes ahead of one with much; a flood's messages still go, in order,
     * as soon as nobody with less running waits, and the relay never queues more than the providers' calls.
     */
    static int priority(Map<String, Object> row) {
        Object ahead = row.get("tenant_ahead");
        long n = ahead == null ? 0 : Math.max(0, ((Number) ahead).longValue());
        return 9 - Math.min(9, 63 - Long.numberOfLeadingZeros(n + 1));
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
        if (row.containsKey("inputs")) {
            // The job's stored request as this round read it: the worker starts from it without reading the job
            // again (docs/jms.md); its start's guard (this event, these attempts) says whether it still holds.
            Map<String, Object> request = new LinkedHashMap<>();
            request.put("aspect_class", row.get("aspect_class"));
            request.put("inputs", row.get("inputs"));
            request.put("source_key", row.get("source_key"));
            request.put("source_sha256", row.get("source_sha256"));
            request.put("source_media_type", row.get("source_media_type"));
            request.put("correlation_id", row.get("correlation_id"));
            request.put("max_attempts", ((Number) row.get("max_attempts")).intValue());
            request.put("expires_at", row.get("expires_at") instanceof java.sql.Timestamp at ? at.toInstant().toString() : null);
            request.put("unparseable_streak", ((Number) row.get("unparseable_streak")).intValue());
            request.put("pool", row.get("pool"));
            request.put("source_bytes", row.get("source_bytes") == null ? 0L : ((Number) row.get("source_bytes")).longValue());
            body.put("request", request);
        }
        TextMessage message = session.createTextMessage(Json.write(body));
        address(message, row);
        return message;
    }

    /**
     * One locked status row → the event followers receive on the jobs.events topic. Written with
     * Jackson's generator straight from the row's columns (the payload's members): one of these goes
     * out for every admitted job.
     */
    static TextMessage statusMessage(Session session, io.jobgate.job.StatusEvent event) throws JMSException {
        String jobId = event.jobId().toString();
        java.io.StringWriter text = new java.io.StringWriter(192);
        try (com.fasterxml.jackson.core.JsonGenerator g = Json.MAPPER.getFactory().createGenerator(text)) {
            g.writeStartObject();
            g.writeStringField("job_id", jobId);
            g.writeStringField("tenant_id", event.tenantId());
            g.writeStringField("status", event.status());
            g.writeNumberField("attempt", event.attempt());
            if (event.errorCategory() != null) {
                g.writeStringField("error_category", event.errorCategory());
            }
            if (event.movedTo() != null) {
                g.writeStringField("moved_to", event.movedTo()); // a pool job's move to another member
            }
            g.writeStringField("at", event.at().toString());
            g.writeNumberField("event_id", event.eventId());
            g.writeEndObject();
        } catch (java.io.IOException e) {
            throw new IllegalStateException("cannot write the status event " + event.eventId(), e);
        }
        TextMessage message = session.createTextMessage(text.toString());
        address(message, event.eventId(), jobId, event.tenantId());
        message.setStringProperty(STATUS, event.status());
        return message;
    }

    /**
     * Delivery is at least once: a relay that dies between the broker's commit and the mark
     * publishes the event again, with the same event id. Consumers deduplicate by job id. (Broker
     * duplicate detection is not used: inside a transaction one duplicate rolls back the whole
     * round, which would stall the relay on the event forever.)
     */
    private static void address(TextMessage message, Map<String, Object> row) throws JMSException {
        address(message, ((Number) row.get("event_id")).longValue(), row.get("job_id").toString(), (String) row.get("tenant_id"));
    }

    private static void address(TextMessage message, long eventId, String jobId, String tenantId) throws JMSException {
        message.setLongProperty(EVENT_ID, eventId);
        message.setStringProperty(JOB_ID, jobId);
        message.setStringProperty(TENANT, tenantId);
    }
}
