package io.jobgate.demo;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.Json;
import jakarta.jms.Connection;
import jakarta.jms.Message;
import jakarta.jms.Session;
import jakarta.jms.TemporaryQueue;
import jakarta.jms.TextMessage;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * {@code send-job}: the JMS intake from a shell. Sends one job request to {@code jobs.intake} as a
 * tenant's broker user (Artemis core protocol), waits for the reply and prints it as one JSON line:
 * what a legacy producer does, without writing one. The tenant is the broker user's, as for any
 * producer; the request body is the one {@code POST /v1/jobs} takes.
 */
public final class SendJob {

    public static final String DEMO_JOB = """
            {"preset_id": "invoice-clean", "aspect_class": "portrait",
             "inputs": {"supplier_name": "Legacy GmbH", "invoice_id": "L-1", "currency": "EUR",
                        "line_items": [{"description": "Consulting", "quantity": 1, "unit_price": 100}]}}""";

    private SendJob() {
    }

    public static void main(String[] args) throws Exception {
        String url = "tcp://127.0.0.1:61616";
        String user = "globex-legacy";
        String password = "dev-globex-jms";
        String key = "send-job-" + UUID.randomUUID();
        String correlationId = null;
        String body = DEMO_JOB;
        long timeoutMillis = 10_000;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--url" -> url = args[i + 1];
                case "--user" -> user = args[i + 1];
                case "--password" -> password = args[i + 1];
                case "--key" -> key = args[i + 1];
                case "--correlation-id" -> correlationId = args[i + 1];
                case "--file" -> body = Files.readString(Path.of(args[i + 1]), StandardCharsets.UTF_8);
                case "--json" -> body = args[i + 1];
                case "--timeout-ms" -> timeoutMillis = Long.parseLong(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; see 'send-job --help'");
            }
        }
        Map<String, Object> reply = send(url, user, password, key, correlationId, body, timeoutMillis);
        System.out.println(Json.write(reply));
        System.exit(reply.get("status") instanceof Integer s && s < 300 ? 0 : 1);
    }

    /** Sends the request and returns the reply: correlation id, status, job id, replayed, and the body (job or problem). */
    public static Map<String, Object> send(String url, String user, String password, String key, String correlationId,
                                           String body, long timeoutMillis) throws Exception {
        try (ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
             Connection connection = factory.createConnection(user, password)) {
            connection.start();
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            TemporaryQueue replies = session.createTemporaryQueue();
            TextMessage request = session.createTextMessage(body);
            request.setStringProperty("JobgateIdempotencyKey", key); // a resend with this key gets the same job
            request.setJMSCorrelationID(correlationId == null ? key : correlationId);
            request.setJMSReplyTo(replies);
            session.createProducer(session.createQueue("jobs.intake")).send(request);
            Message answer = session.createConsumer(replies).receive(timeoutMillis);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("correlation_id", request.getJMSCorrelationID());
            if (answer == null) {
                out.put("status", null);
                out.put("error", "no reply within " + timeoutMillis + " ms (is the gateway running with the role api?)");
                return out;
            }
            out.put("status", answer.propertyExists("JobgateHttpStatus") ? answer.getIntProperty("JobgateHttpStatus") : null);
            out.put("job_id", answer.getStringProperty("JobgateJobId"));
            out.put("replayed", answer.propertyExists("JobgateIdempotentReplayed")
                    && Boolean.parseBoolean(answer.getStringProperty("JobgateIdempotentReplayed")));
            String text = answer instanceof TextMessage t ? t.getText() : null;
            out.put("body", text == null ? null : Json.MAPPER.readTree(text));
            return out;
        }
    }
}
