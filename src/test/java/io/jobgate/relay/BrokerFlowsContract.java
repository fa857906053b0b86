package io.jobgate.relay;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.Jms;
import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Destination;
import jakarta.jms.JMSSecurityException;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What the gateway relies on from Artemis, run against the embedded broker and a standalone one:
 * dispatch woken by the commit, redelivery then dead letter, the JMS intake door (login required,
 * the tenant taken from the authenticated producer), status events.
 */
abstract class BrokerFlowsContract {

    static final ObjectMapper JSON = new ObjectMapper();

    ApiClient api;
    Jms jms;

    @BeanInject("jmsConnectionFactory")
    ConnectionFactory connectionFactory;

    /** A legacy producer of tenant globex (config/tenants.yaml; .ci/run creates it on the standalone broker). */
    static final String PRODUCER = "globex-legacy";
    static final String PRODUCER_PASSWORD = "dev-globex-jms";

    /** Where legacy producers connect: the broker's TCP acceptor. */
    abstract String producerUrl();

    private ActiveMQConnectionFactory producers;

    Connection producer(String user, String password) throws Exception {
        if (producers == null) {
            producers = new ActiveMQConnectionFactory(producerUrl());
        }
        Connection c = producers.createConnection(user, password);
        c.start();
        return c;
    }

    @BeforeEach
    void connect() throws Exception {
        if (jms == null) {
            jms = new Jms(connectionFactory);
        }
    }

    @AfterAll
    void close() throws Exception {
        if (jms != null) {
            jms.close();
        }
        if (producers != null) {
            producers.close();
        }
    }

    String post(String apiKey) {
        ApiClient.Response r = api.postJob(apiKey, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "landscape",
                 "inputs": {"supplier_name": "Broker BV", "invoice_id": "B-7", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return r.json().path("job_id").asText();
    }

    @Test
    void anAcceptedJobIsDispatchedWithoutWaitingForAPoll() throws Exception {
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            String job = post("dev-globex-key");
            MessageConsumer consumer = s.createConsumer(s.createQueue("jobs.dispatch"), "JobgateJobId = '" + job + "'");
            TextMessage m = (TextMessage) consumer.receive(10_000);

            assertThat(m).isNotNull();
            JsonNode body = JSON.readTree(m.getText());
            assertThat(body.path("job_id").asText()).isEqualTo(job);
            assertThat(body.path("tenant_id").asText()).isEqualTo("globex");
            assertThat(body.path("attempt").asInt()).isEqualTo(1);
            assertThat(m.getLongProperty("JobgateEventId")).isEqualTo(body.path("event_id").asLong());
            assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id = ?::uuid AND dispatched_at IS NOT NULL", job))
                    .isEqualTo(1);
        }
    }

    @Test
    void aMessageRolledBackEveryTimeIsRedeliveredWithGrowingDelaysThenDeadLetteredAndItsJobFailsOnce() throws Exception {
        long balanceBefore = Db.count("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme'");
        long openBefore = Db.count("SELECT open_jobs FROM tenant_accounts WHERE tenant_id = 'acme'");
        String job = post("dev-acme-key");
        List<Integer> deliveryCounts = new ArrayList<>();
        List<Long> arrivals = new ArrayList<>();
        try (Session s = jms.connection().createSession(true, Session.SESSION_TRANSACTED)) {
            MessageConsumer consumer = s.createConsumer(s.createQueue("jobs.dispatch"), "JobgateJobId = '" + job + "'");
            Message m;
            while (deliveryCounts.size() < 5 && (m = consumer.receive(15_000)) != null) {
                deliveryCounts.add(m.getIntProperty("JMSXDeliveryCount"));
                arrivals.add(System.nanoTime());
                s.rollback(); // a worker that crashes every time
            }
        }

        assertThat(deliveryCounts).containsExactly(1, 2, 3, 4, 5);
        for (int i = 2; i < arrivals.size(); i++) {
            long gap = arrivals.get(i) - arrivals.get(i - 1);
            long previous = arrivals.get(i - 1) - arrivals.get(i - 2);
            assertThat(gap).as("redelivery delay %d grows", i).isGreaterThan(previous);
        }
        await().atMost(Duration.ofSeconds(15)).until(() -> "failed".equals(
                Db.single("SELECT status FROM jobs WHERE job_id = ?::uuid", job).get("status")));
        assertThat(Db.single("SELECT error_category FROM jobs WHERE job_id = ?::uuid", job).get("error_category"))
                .isEqualTo("dead_lettered");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?::uuid AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme'")).isEqualTo(balanceBefore);
        assertThat(Db.count("SELECT open_jobs FROM tenant_accounts WHERE tenant_id = 'acme'")).isEqualTo(openBefore);
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.dispatch.dead", "JobgateJobId = '" + job + "'").size() == 1);
        Message kept = jms.browse("jobs.dispatch.dead", "JobgateJobId = '" + job + "'").get(0);
        assertThat(kept.getBooleanProperty("JobgateFinalizedByDeadLetter")).isTrue();

        // The same dead letter again (an operator replays it): nothing changes, it is kept too.
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage again = s.createTextMessage("{\"job_id\": \"" + job + "\"}");
            again.setStringProperty("JobgateJobId", job);
            s.createProducer(s.createQueue("jobs.dispatch.DLQ")).send(again);
        }
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.dispatch.dead", "JobgateJobId = '" + job + "'").size() == 2);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?::uuid AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT open_jobs FROM tenant_accounts WHERE tenant_id = 'acme'")).isEqualTo(openBefore);
    }

    @Test
    void aLegacyProducerSubmitsOverJmsAndGetsTheJobOfItsOwnTenantAsTheCorrelatedReply() throws Exception {
        String key = "jms-" + UUID.randomUUID();
        try (Connection c = producer(PRODUCER, PRODUCER_PASSWORD);
                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            Destination replies = s.createTemporaryQueue();
            MessageConsumer replyConsumer = s.createConsumer(replies);
            MessageProducer producer = s.createProducer(s.createQueue("jobs.intake"));

            producer.send(intake(s, key, "corr-1", replies, "globex"));
            TextMessage first = (TextMessage) replyConsumer.receive(10_000);
            producer.send(intake(s, key, "corr-2", replies, null)); // resent; the tenant comes from the login
            TextMessage second = (TextMessage) replyConsumer.receive(10_000);

            assertThat(first).isNotNull();
            assertThat(first.getJMSCorrelationID()).isEqualTo("corr-1");
            assertThat(first.getIntProperty("JobgateHttpStatus")).isEqualTo(202);
            JsonNode job = JSON.readTree(first.getText());
            assertThat(job.path("status").asText()).isEqualTo("queued");
            assertThat(job.path("tenant_id").asText()).isEqualTo("globex");
            assertThat(second.getJMSCorrelationID()).isEqualTo("corr-2");
            assertThat(JSON.readTree(second.getText()).path("job_id").asText()).isEqualTo(job.path("job_id").asText());
            assertThat(second.getBooleanProperty("JobgateIdempotentReplayed")).isTrue();
            assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'globex' AND idempotency_key = ?", key))
                    .isEqualTo(1);
        }
    }

    @Test
    void aWrongPasswordOrAnUnknownUserIsRefusedAtConnect() {
        assertThatThrownBy(() -> producer(PRODUCER, "not-the-password")).isInstanceOf(JMSSecurityException.class);
        assertThatThrownBy(() -> producer("nobody", PRODUCER_PASSWORD)).isInstanceOf(JMSSecurityException.class);
    }

    @Test
    void aMessageClaimingAnotherTenantIsRefusedToTheIntakeDeadLetterQueueWithTheReason() throws Exception {
        String key = "claim-" + UUID.randomUUID();
        try (Connection c = producer(PRODUCER, PRODUCER_PASSWORD);
                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            Destination replies = s.createTemporaryQueue();
            MessageConsumer replyConsumer = s.createConsumer(replies);
            TextMessage claim = intake(s, key, "corr-claim", replies, "acme");
            // A forged stamp changes nothing: the broker overwrites it with the user it authenticated.
            claim.setStringProperty("JMSXUserID", "acme-legacy");
            s.createProducer(s.createQueue("jobs.intake")).send(claim);

            TextMessage reply = (TextMessage) replyConsumer.receive(10_000);
            assertThat(reply).isNotNull();
            assertThat(JSON.readTree(reply.getText()).path("code").asText()).isEqualTo("tenant_mismatch");
        }
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").size() == 1);
        Message kept = jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").get(0);
        assertThat(kept.getStringProperty("JobgateProblemCode")).isEqualTo("tenant_mismatch");
        assertThat(kept.getIntProperty("JobgateHttpStatus")).isEqualTo(403);
        assertThat(kept.getStringProperty("JobgateProblemDetail")).contains("'acme'", "'globex'");
        assertThat(kept.getStringProperty("JobgateSender")).isEqualTo(PRODUCER);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isZero();
    }

    @Test
    void aProducerMaySendJobRequestsAndNothingElse() throws Exception {
        try (Connection c = producer(PRODUCER, PRODUCER_PASSWORD);
                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            // Not other tenants' requests, not the dispatch queue, not the status events.
            assertThatThrownBy(() -> s.createConsumer(s.createQueue("jobs.intake")))
                    .isInstanceOf(JMSSecurityException.class);
            assertThatThrownBy(() -> s.createConsumer(s.createQueue("jobs.dispatch")))
                    .isInstanceOf(JMSSecurityException.class);
            assertThatThrownBy(() -> s.createConsumer(s.createTopic("jobs.events")))
                    .isInstanceOf(JMSSecurityException.class);
            assertThatThrownBy(() -> s.createProducer(s.createQueue("jobs.dispatch")).send(s.createTextMessage("{}")))
                    .isInstanceOf(JMSSecurityException.class);
        }
    }

    @Test
    void aMalformedOrRefusedIntakeMessageIsKeptOnTheIntakeDeadLetterQueueWithItsReason() throws Exception {
        String key = "bad-" + UUID.randomUUID();
        String notAProducer = "service-" + UUID.randomUUID();
        try (Connection c = producer(PRODUCER, PRODUCER_PASSWORD);
                Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage broken = s.createTextMessage("{\"preset_id\": ");
            broken.setStringProperty("JobgateIdempotencyKey", key);
            s.createProducer(s.createQueue("jobs.intake")).send(broken);
        }
        // The gateway's own user may use the queue but submits for no tenant.
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage orphan = s.createTextMessage("{}");
            orphan.setStringProperty("JobgateTenant", "globex");
            orphan.setStringProperty("JobgateIdempotencyKey", notAProducer);
            s.createProducer(s.createQueue("jobs.intake")).send(orphan);
        }

        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").size() == 1);
        Message kept = jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").get(0);
        assertThat(kept.getStringProperty("JobgateProblemCode")).isEqualTo("malformed_json");
        assertThat(kept.getIntProperty("JobgateHttpStatus")).isEqualTo(400);
        assertThat(((TextMessage) kept).getText()).isEqualTo("{\"preset_id\": ");
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + notAProducer + "'").size() == 1);
        assertThat(jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + notAProducer + "'").get(0)
                .getStringProperty("JobgateProblemCode")).isEqualTo("not_a_producer");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key IN (?, ?)", key, notAProducer)).isZero();
    }

    @Test
    void followersSeeEachStatusChangeOnTheEventsTopic() throws Exception {
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            MessageConsumer events = s.createConsumer(s.createTopic("jobs.events"), "JobgateTenant = 'globex'");
            String job = post("dev-globex-key");
            api.post("dev-globex-key", "/v1/jobs/" + job + "/cancel");

            List<JsonNode> mine = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (mine.size() < 2 && System.nanoTime() < deadline) {
                TextMessage m = (TextMessage) events.receive(1000);
                if (m != null && job.equals(m.getStringProperty("JobgateJobId"))) {
                    mine.add(JSON.readTree(m.getText()));
                }
            }
            assertThat(mine).extracting(e -> e.path("status").asText()).containsExactly("queued", "cancelled");
            assertThat(mine.get(1).path("error_category").asText()).isEqualTo("cancelled");
            assertThat(mine.get(0).path("tenant_id").asText()).isEqualTo("globex");
        }
    }

    private static TextMessage intake(Session s, String key, String correlation, Destination replyTo, String tenant)
            throws Exception {
        TextMessage m = s.createTextMessage("""
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Legacy GmbH", "invoice_id": "L-1", "currency": "EUR", "line_items": []}}""");
        if (tenant != null) {
            m.setStringProperty("JobgateTenant", tenant);
        }
        m.setStringProperty("JobgateIdempotencyKey", key);
        m.setJMSCorrelationID(correlation);
        m.setJMSReplyTo(replyTo);
        return m;
    }
}
