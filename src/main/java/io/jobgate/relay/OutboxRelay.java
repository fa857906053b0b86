package io.jobgate.relay;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.api.Json;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * Rules of the outbox relay route (routes/outbox-relay.camel.yaml): the parameters of a round, and
 * the shape of the messages it publishes. The SQL of a round is in {@code sql/relay-*.sql}.
 */
public final class OutboxRelay {

    /** JMS properties of dispatch and status messages (also usable in selectors). */
    public static final String JOB_ID = "JobgateJobId";
    public static final String TENANT = "JobgateTenant";
    public static final String EVENT_ID = "JobgateEventId";
    public static final String STATUS = "JobgateStatus";
    /** Artemis duplicate detection: a republished event (relay crash after send) is dropped by the broker. */
    public static final String DUPLICATE_ID = "_AMQ_DUPL_ID";

    private final int maxRunning;
    private final int claimSeconds;
    private final int statusBatch;

    public OutboxRelay(int maxRunning, int claimSeconds, int statusBatch) {
        this.maxRunning = maxRunning;
        this.claimSeconds = claimSeconds;
        this.statusBatch = statusBatch;
    }

    /** Headers the claim statements read: a fresh claim token per round, the window, the batch. */
    public void prepareRound(Exchange exchange) {
        Message m = exchange.getMessage();
        m.setHeader("claimToken", UUID.randomUUID().toString());
        m.setHeader("claimSeconds", claimSeconds);
        m.setHeader("maxRunning", maxRunning);
        m.setHeader("statusBatch", statusBatch);
    }

    /** One claimed dispatch row → the message workers consume from jobs.dispatch. */
    public void dispatchMessage(Exchange exchange) {
        Message m = exchange.getMessage();
        Map<?, ?> row = m.getBody(Map.class);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job_id", row.get("job_id").toString());
        body.put("tenant_id", row.get("tenant_id"));
        body.put("event_id", ((Number) row.get("event_id")).longValue());
        body.put("attempt", ((Number) row.get("attempts")).intValue() + 1);
        body.put("preset_id", row.get("preset_id"));
        body.put("preset_version", row.get("preset_version"));
        body.put("kind", row.get("kind"));
        body.put("provider", row.get("provider"));
        address(m, row, "dispatch");
        m.setBody(Json.write(body));
    }

    /** One claimed status row → the event followers receive on the jobs.events topic. */
    public void statusMessage(Exchange exchange) throws Exception {
        Message m = exchange.getMessage();
        Map<?, ?> row = m.getBody(Map.class);
        JsonNode payload = Json.MAPPER.readTree(row.get("payload").toString());
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job_id", row.get("job_id").toString());
        body.put("tenant_id", row.get("tenant_id"));
        body.put("status", payload.path("status").asText());
        body.put("attempt", payload.path("attempt").asInt());
        if (payload.hasNonNull("error_category")) {
            body.put("error_category", payload.get("error_category").asText());
        }
        body.put("at", ((java.sql.Timestamp) row.get("created_at")).toInstant().toString());
        body.put("event_id", ((Number) row.get("event_id")).longValue());
        address(m, row, "status");
        m.setHeader(STATUS, payload.path("status").asText());
        m.setBody(Json.write(body));
    }

    private static void address(Message m, Map<?, ?> row, String kind) {
        long eventId = ((Number) row.get("event_id")).longValue();
        m.setHeader("eventId", eventId);
        m.setHeader(EVENT_ID, eventId);
        m.setHeader(JOB_ID, row.get("job_id").toString());
        m.setHeader(TENANT, row.get("tenant_id"));
        m.setHeader(DUPLICATE_ID, "outbox-" + kind + "-" + eventId);
    }
}
