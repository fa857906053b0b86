package io.jobgate.relay;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Db;
import io.jobgate.support.Jms;
import io.jobgate.support.LegacyClients;
import io.jobgate.support.LegacyClients.Client;
import io.jobgate.support.LegacyClients.Protocol;
import io.jobgate.support.LegacyClients.Reply;
import io.jobgate.support.LegacyClients.Request;
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

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * What the gateway relies on from Artemis, run against the embedded broker and a standalone one:
 * dispatch woken by the commit, redelivery then dead letter, the JMS intake door (login required,
 * the tenant taken from the authenticated producer), status events.
 */
abstract class BrokerFlowsContract extends GatewayTestBase {

    static final ObjectMapper JSON = new ObjectMapper();

    Jms jms;

    @BeanInject("jmsConnectionFactory")
    ConnectionFactory connectionFactory;

    @BeanInject("jobLeases")
    io.jobgate.job.JobLeases leases;

    /** A legacy producer of tenant globex (config/tenants.yaml; .ci/run creates it on the standalone broker). */
    static final String PRODUCER = "globex-legacy";
    static final String PRODUCER_PASSWORD = "dev-globex-jms";

    /** Where legacy producers connect: host and port of the broker's TCP acceptor (all protocols). */
    abstract String producerHostPort();

    private ActiveMQConnectionFactory producers;

    Connection producer(String user, String password) throws Exception {
        if (producers == null) {
            producers = new ActiveMQConnectionFactory("tcp://" + producerHostPort());
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
            String job = post(GLOBEX);
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
            // The stored request it carries is what a worker would have read of the job: it starts from it.
            assertThat(body.path("request").path("inputs").asText()).contains("Broker BV");
            assertThat(io.jobgate.worker.DispatchRequest.lease(UUID.fromString(job), m.getText()))
                    .contains(leases.peek(UUID.fromString(job), body.path("event_id").asLong()).orElseThrow());
        }
    }

    @Test
    void aMessageRolledBackEveryTimeIsRedeliveredWithGrowingDelaysThenDeadLetteredAndGivenBackTwiceBeforeItsJobFailsOnce()
            throws Exception {
        long balanceBefore = Db.count("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme'");
        long openBefore = Db.count("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'acme'");
        String job = post(ACME);
        String ofJob = "JobgateJobId = '" + job + "'";
        List<Integer> deliveryCounts = new ArrayList<>();
        List<Long> arrivals = new ArrayList<>();
        TextMessage first = null;
        // The tenant at its running limit, the job's own slot counted in it: the dispatch given back still goes out.
        long limitBefore = Db.count("SELECT max_running_jobs FROM tenants WHERE tenant_id = 'acme'");
        try (Session s = jms.connection().createSession(true, Session.SESSION_TRANSACTED)) {
            MessageConsumer consumer = s.createConsumer(s.createQueue("jobs.dispatch"), ofJob);
            Message m;
            while (deliveryCounts.size() < 5 && (m = consumer.receive(15_000)) != null) {
                deliveryCounts.add(m.getIntProperty("JMSXDeliveryCount"));
                arrivals.add(System.nanoTime());
                if (first == null) {
                    // Dispatched: the job's slot is counted in the tenant's running jobs, which is its limit from here on.
                    Db.update("UPDATE tenants SET max_running_jobs = ? WHERE tenant_id = 'acme'", (int) tenantRunning("acme"));
                }
                first = (TextMessage) m;
                s.rollback(); // a worker that crashes every time
            }
        }

        assertThat(deliveryCounts).containsExactly(1, 2, 3, 4, 5);
        // Never before its delay, which doubles (broker.xml: 500 ms, x2.0, up to 10 s, each within 10 % for
        // collision avoidance): a lower bound only, as for a Retry-After, so a slow machine cannot fail it,
        // while a delay that did not grow fails from the second redelivery on (900 ms at least).
        for (int i = 1; i < arrivals.size(); i++) {
            long gapMillis = (arrivals.get(i) - arrivals.get(i - 1)) / 1_000_000;
            long delayMillis = Math.min(10_000, 500L << (i - 1));
            assertThat(gapMillis).as("redelivery %d waited its delay of %d ms (-10 %%)", i, delayMillis)
                    .isGreaterThanOrEqualTo(delayMillis * 9 / 10);
        }
        long running = tenantRunning("acme");

        // Dead-lettered with no attempt started from it: the job's dispatch goes out again, as a new event, under the
        // slot it holds (the tenant's running count unchanged), and nothing is kept or refunded.
        TextMessage second;
        try {
            second = nextDispatch(job, first.getLongProperty("JobgateEventId"));
        } finally {
            Db.update("UPDATE tenants SET max_running_jobs = ? WHERE tenant_id = 'acme'", (int) limitBefore);
        }
        assertThat(Db.single("SELECT status, dispatch_given_back FROM jobs WHERE job_id = ?::uuid", job))
                .containsEntry("status", "queued").containsEntry("dispatch_given_back", 1);
        assertThat(tenantRunning("acme")).isEqualTo(running);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?::uuid AND entry_type = 'refund'", job)).isZero();

        // The first message again (an operator replays it): its job no longer waits on it; kept, nothing changes.
        deadLetter(first);
        await().atMost(Duration.ofSeconds(10)).until(() -> jms.browse("jobs.dispatch.dead", ofJob).size() == 1);
        assertThat(jms.browse("jobs.dispatch.dead", ofJob).get(0).getStringProperty("JobgateDeadLetterOutcome")).isEqualTo("stale");
        assertThat(Db.single("SELECT status FROM jobs WHERE job_id = ?::uuid", job)).containsEntry("status", "queued");

        // Dead-lettered again (as the broker moves it: the message as it was): given back a second time; the third
        // time the job fails once as dead_lettered, everything it held given back, and the message is kept.
        deadLetter(second);
        TextMessage third = nextDispatch(job, second.getLongProperty("JobgateEventId"));
        deadLetter(third);
        await().atMost(Duration.ofSeconds(15)).until(() -> "failed".equals(
                Db.single("SELECT status FROM jobs WHERE job_id = ?::uuid", job).get("status")));
        assertThat(Db.single("SELECT error_category, dispatch_given_back FROM jobs WHERE job_id = ?::uuid", job))
                .containsEntry("error_category", "dead_lettered").containsEntry("dispatch_given_back", 2);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?::uuid AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT balance_micros FROM tenant_accounts WHERE tenant_id = 'acme'")).isEqualTo(balanceBefore);
        assertThat(Db.count("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'acme'")).isEqualTo(openBefore);
        assertThat(tenantRunning("acme")).isEqualTo(running - 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> jms.browse("jobs.dispatch.dead", ofJob).size() == 2);
        Message kept = jms.browse("jobs.dispatch.dead", ofJob + " AND JobgateEventId = " + third.getLongProperty("JobgateEventId")).get(0);
        assertThat(kept.getBooleanProperty("JobgateFinalizedByDeadLetter")).isTrue();
        assertThat(kept.getStringProperty("JobgateDeadLetterOutcome")).isEqualTo("failed");

        // The same dead letter again: the job is final, nothing changes; it is kept too.
        deadLetter(third);
        await().atMost(Duration.ofSeconds(10)).until(() -> jms.browse("jobs.dispatch.dead", ofJob).size() == 3);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ?::uuid AND entry_type = 'refund'", job)).isEqualTo(1);
        assertThat(Db.count("SELECT open_jobs FROM tenant_counters WHERE tenant_id = 'acme'")).isEqualTo(openBefore);
    }

    /**
     * A dead letter of the event a job's attempt started from (its call now at the provider: no lease, its slot held,
     * no newer dispatch event) is stale: the job is neither failed nor sent out again.
     */
    @Test
    void aDeadLetterOfTheEventAStartedAttemptCameFromChangesNothing() throws Exception {
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        UUID id = jobs.job("acme").status("provider_pending").attempts(1).dispatchedAt(java.time.Instant.now()).insert();
        jobs.publishedDispatch(id, "acme");
        long event = Db.count("SELECT max(event_id) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch'", id.toString());
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage dead = s.createTextMessage("{\"job_id\": \"" + id + "\"}");
            dead.setStringProperty("JobgateJobId", id.toString());
            dead.setLongProperty("JobgateEventId", event);
            s.createProducer(s.createQueue("jobs.dispatch.DLQ")).send(dead);
        }
        String ofJob = "JobgateJobId = '" + id + "'";
        await().atMost(Duration.ofSeconds(10)).until(() -> jms.browse("jobs.dispatch.dead", ofJob).size() == 1);
        assertThat(jms.browse("jobs.dispatch.dead", ofJob).get(0).getStringProperty("JobgateDeadLetterOutcome")).isEqualTo("stale");
        assertThat(Db.single("SELECT status, dispatch_given_back FROM jobs WHERE job_id = ?::uuid", id.toString()))
                .containsEntry("status", "provider_pending").containsEntry("dispatch_given_back", 0);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch'", id.toString())).isEqualTo(1);
    }

    /** The job's next dispatch message, of an event newer than {@code after}, taken off the queue. */
    private TextMessage nextDispatch(String job, long after) throws Exception {
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage next = (TextMessage) s.createConsumer(s.createQueue("jobs.dispatch"),
                    "JobgateJobId = '" + job + "' AND JobgateEventId > " + after).receive(15_000);
            assertThat(next).as("the dispatch of job %s given back after event %d", job, after).isNotNull();
            return next;
        }
    }

    /** {@code message} on jobs.dispatch.DLQ, its text and properties as they were: what the broker does at its limit. */
    private void deadLetter(TextMessage message) throws Exception {
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage copy = s.createTextMessage(message.getText());
            for (String name : java.util.Collections.list((java.util.Enumeration<String>) message.getPropertyNames())) {
                if (name.startsWith("Jobgate")) {
                    copy.setObjectProperty(name, message.getObjectProperty(name));
                }
            }
            s.createProducer(s.createQueue("jobs.dispatch.DLQ")).send(copy);
        }
    }

    /** The tenant's jobs holding a dispatch slot: what relay rounds took, less what releases gave back (V24). */
    private static long tenantRunning(String tenant) {
        return Db.count("SELECT a.running_jobs + coalesce((SELECT sum(r.running_jobs) FROM tenant_releases r"
                + " WHERE r.tenant_id = a.tenant_id), 0) FROM tenant_accounts a WHERE a.tenant_id = ?", tenant);
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
    void aMessageFromTheGatewaysOwnUserIsRefusedAsNotAProducer() throws Exception {
        String notAProducer = "service-" + UUID.randomUUID();
        // The gateway's own user may use the queue but submits for no tenant.
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            TextMessage orphan = s.createTextMessage("{}");
            orphan.setStringProperty("JobgateTenant", "globex");
            orphan.setStringProperty("JobgateIdempotencyKey", notAProducer);
            s.createProducer(s.createQueue("jobs.intake")).send(orphan);
        }
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + notAProducer + "'").size() == 1);
        assertThat(jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + notAProducer + "'").get(0)
                .getStringProperty("JobgateProblemCode")).isEqualTo("not_a_producer");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", notAProducer)).isZero();
    }

    // --- Each protocol with its stock client: Artemis core (jakarta), ActiveMQ 5.x (OpenWire, javax),
    // Qpid JMS (AMQP 1.0). -----------------------------------------------------------------------
    // (One @Test per protocol rather than a parameterized test: camel-test-main boots a fresh gateway
    // for each parameterized container, and the class shares one.)

    @Test
    void artemisCoreClient_getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob() throws Exception {
        getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob(Protocol.CORE);
    }

    @Test
    void activeMq5OpenWireClient_getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob() throws Exception {
        getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob(Protocol.OPENWIRE);
    }

    @Test
    void qpidJmsAmqpClient_getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob() throws Exception {
        getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob(Protocol.AMQP);
    }

    /**
     * The Python example of docs/jms.md (examples/python/send_job.py, Qpid Proton from Debian's
     * python3-qpid-proton) as a producer runs it: the 202 reply with its correlation id, the job of
     * its login's tenant; the same key again: the same job, marked replayed; a wrong password: no job.
     */
    @Test
    void pythonProtonAmqpProducer_theReadmeExampleGetsItsJobAndAResendTheSameJob() throws Exception {
        boolean required = Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_PROTON"));
        boolean present = new ProcessBuilder(python(), "-c", "import proton").start().waitFor() == 0;
        if (required && !present) {
            throw new IllegalStateException("JOBGATE_TEST_REQUIRE_PROTON is set but python3 cannot import proton");
        }
        org.junit.jupiter.api.Assumptions.assumeTrue(present, "no Qpid Proton for Python (apt-get install python3-qpid-proton)");
        String key = "py-" + UUID.randomUUID();

        JsonNode first = sendWithPython(key, PRODUCER_PASSWORD, 0);
        assertThat(first.path("status").asInt()).as(first.toString()).isEqualTo(202);
        assertThat(first.path("correlation_id").asText()).isEqualTo("corr-" + key);
        String job = first.path("job_id").asText();
        assertThat(first.path("body").path("tenant_id").asText()).isEqualTo("globex");
        assertThat(api.get(GLOBEX, "/v1/jobs/" + job).status()).isEqualTo(200);

        JsonNode again = sendWithPython(key, PRODUCER_PASSWORD, 0);
        assertThat(again.path("job_id").asText()).isEqualTo(job);
        assertThat(again.path("replayed").asBoolean()).isTrue();

        String refused = "py-" + UUID.randomUUID();
        sendWithPython(refused, "wrong-password", -1);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", refused)).as("no job without a login").isZero();
    }

    /**
     * The send-job command (the JMS intake from a shell, core protocol): the 202 reply with its
     * correlation id and the job of its login's tenant; the same key again: the same job, replayed.
     */
    @Test
    void sendJobCommand_getsItsJobAndAResendTheSameJob() throws Exception {
        String key = "cmd-" + UUID.randomUUID();
        var first = io.jobgate.demo.SendJob.send("tcp://" + producerHostPort(), PRODUCER, PRODUCER_PASSWORD, key,
                "corr-" + key, io.jobgate.demo.SendJob.DEMO_JOB, 20_000);
        assertThat(first.get("status")).as(first.toString()).isEqualTo(202);
        assertThat(first.get("correlation_id")).isEqualTo("corr-" + key);
        assertThat(((JsonNode) first.get("body")).path("tenant_id").asText()).isEqualTo("globex");

        var again = io.jobgate.demo.SendJob.send("tcp://" + producerHostPort(), PRODUCER, PRODUCER_PASSWORD, key,
                null, io.jobgate.demo.SendJob.DEMO_JOB, 20_000);
        assertThat(again.get("job_id")).isEqualTo(first.get("job_id"));
        assertThat(again.get("replayed")).isEqualTo(true);
    }

    private static String python() {
        return java.nio.file.Files.isExecutable(java.nio.file.Path.of("/usr/bin/python3")) ? "/usr/bin/python3" : "python3";
    }

    /** Runs the example; answers its JSON line (exit code as asked; -1: any non-zero). */
    private JsonNode sendWithPython(String key, String password, int exitCode) throws Exception {
        Process p = new ProcessBuilder(python(), "examples/python/send_job.py", "--url", "amqp://" + producerHostPort(),
                "--user", PRODUCER, "--password", password, "--key", key, "--correlation-id", "corr-" + key, "--timeout", "20")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        if (exitCode >= 0) {
            assertThat(p.exitValue()).as(out).isEqualTo(exitCode);
            String last = out.strip().lines().reduce((a, b) -> b).orElse("");
            return JSON.readTree(last);
        }
        assertThat(p.exitValue()).as(out).isNotZero();
        return null;
    }

    @Test
    void artemisCoreClient_aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob() throws Exception {
        aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob(Protocol.CORE);
    }

    @Test
    void activeMq5OpenWireClient_aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob() throws Exception {
        aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob(Protocol.OPENWIRE);
    }

    @Test
    void qpidJmsAmqpClient_aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob() throws Exception {
        aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob(Protocol.AMQP);
    }

    @Test
    void artemisCoreClient_aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect() throws Exception {
        aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect(Protocol.CORE);
    }

    @Test
    void activeMq5OpenWireClient_aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect() throws Exception {
        aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect(Protocol.OPENWIRE);
    }

    @Test
    void qpidJmsAmqpClient_aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect() throws Exception {
        aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect(Protocol.AMQP);
    }

    @Test
    void artemisCoreClient_aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason() throws Exception {
        aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason(Protocol.CORE);
    }

    @Test
    void activeMq5OpenWireClient_aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason() throws Exception {
        aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason(Protocol.OPENWIRE);
    }

    @Test
    void qpidJmsAmqpClient_aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason() throws Exception {
        aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason(Protocol.AMQP);
    }


    static final String REQUEST = """
            {"preset_id": "invoice-clean", "aspect_class": "portrait",
             "inputs": {"supplier_name": "Legacy GmbH", "invoice_id": "L-1", "currency": "EUR", "line_items": []}}""";

    private void getsTheJobOfItsOwnTenantAsTheCorrelatedReplyAndAResendGetsTheSameJob(Protocol protocol)
            throws Exception {
        String key = protocol + "-" + UUID.randomUUID();
        try (Client client = LegacyClients.connect(protocol, producerHostPort(), PRODUCER, PRODUCER_PASSWORD)) {
            Reply first = client.request(Request.of(REQUEST, key, "corr-1-" + key).claiming("globex"), 10_000);
            // Resent without the claim: the tenant comes from the login.
            Reply second = client.request(Request.of(REQUEST, key, "corr-2-" + key), 10_000);

            assertThat(first).as("reply over %s", protocol).isNotNull();
            assertThat(first.correlationId()).isEqualTo("corr-1-" + key);
            assertThat(first.status()).isEqualTo(202);
            JsonNode job = JSON.readTree(first.text());
            assertThat(job.path("status").asText()).isEqualTo("queued");
            assertThat(job.path("tenant_id").asText()).isEqualTo("globex");
            assertThat(first.jobId()).isEqualTo(job.path("job_id").asText());
            assertThat(first.replayed()).isFalse();
            assertThat(second).isNotNull();
            assertThat(second.correlationId()).isEqualTo("corr-2-" + key);
            assertThat(second.status()).isEqualTo(202);
            assertThat(second.jobId()).isEqualTo(first.jobId());
            assertThat(second.replayed()).isTrue();
            assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'globex' AND idempotency_key = ?::text", key))
                    .isEqualTo(1);
            assertThat(api.get(GLOBEX, "/v1/jobs/" + first.jobId()).status()).isEqualTo(200);
        }
    }

    private void aMessageClaimingAnotherTenantOrForgingItsUserIsRefusedWithItsReasonAndMakesNoJob(Protocol protocol) throws Exception {
        String key = "claim-" + protocol + "-" + UUID.randomUUID();
        try (Client client = LegacyClients.connect(protocol, producerHostPort(), PRODUCER, PRODUCER_PASSWORD)) {
            // A forged user stamp changes nothing: the broker sets the user it authenticated.
            Reply reply = client.request(Request.of(REQUEST, key, "corr-claim").claiming("acme").forgingUser("acme-legacy"),
                    10_000);
            assertThat(reply).as("reply over %s", protocol).isNotNull();
            assertThat(reply.status()).isEqualTo(403);
            assertThat(reply.correlationId()).isEqualTo("corr-claim");
            assertThat(JSON.readTree(reply.text()).path("code").asText()).isEqualTo("tenant_mismatch");
        }
        Message kept = deadLetter(key);
        assertThat(kept.getStringProperty("JobgateProblemCode")).isEqualTo("tenant_mismatch");
        assertThat(kept.getIntProperty("JobgateHttpStatus")).isEqualTo(403);
        assertThat(kept.getStringProperty("JobgateProblemDetail")).contains("'acme'", "'globex'");
        assertThat(kept.getStringProperty("JobgateSender")).isEqualTo(PRODUCER);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isZero();
    }

    private void aSenderWithoutCredentialsOrWithAWrongOneIsRefusedAtConnect(Protocol protocol) {
        // No credentials, a wrong password, another tenant's user with this one's password, no such user.
        assertThatThrownBy(() -> LegacyClients.connect(protocol, producerHostPort(), null, null).close())
                .isInstanceOf(LegacyClients.Refused.class);
        assertThatThrownBy(() -> LegacyClients.connect(protocol, producerHostPort(), PRODUCER, "not-the-password").close())
                .isInstanceOf(LegacyClients.Refused.class);
        assertThatThrownBy(() -> LegacyClients.connect(protocol, producerHostPort(), "acme-legacy", PRODUCER_PASSWORD).close())
                .isInstanceOf(LegacyClients.Refused.class);
        assertThatThrownBy(() -> LegacyClients.connect(protocol, producerHostPort(), "nobody", PRODUCER_PASSWORD).close())
                .isInstanceOf(LegacyClients.Refused.class);
    }

    private void aMalformedRequestIsKeptOnTheIntakeDeadLetterQueueWithItsReason(Protocol protocol) throws Exception {
        String key = "bad-" + protocol + "-" + UUID.randomUUID();
        try (Client client = LegacyClients.connect(protocol, producerHostPort(), PRODUCER, PRODUCER_PASSWORD)) {
            Reply reply = client.request(Request.of("{\"preset_id\": ", key, "corr-bad"), 10_000);
            assertThat(reply).as("reply over %s", protocol).isNotNull();
            assertThat(reply.status()).isEqualTo(400);
            assertThat(JSON.readTree(reply.text()).path("code").asText()).isEqualTo("malformed_json");
        }
        Message kept = deadLetter(key);
        assertThat(kept.getStringProperty("JobgateProblemCode")).isEqualTo("malformed_json");
        assertThat(kept.getIntProperty("JobgateHttpStatus")).isEqualTo(400);
        assertThat(((TextMessage) kept).getText()).isEqualTo("{\"preset_id\": ");
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = ?", key)).isZero();
    }

    // --- Status events for legacy consumers: their tenant's own address, jobs.events.<tenant>. -------

    @Test
    void activeMq5OpenWireClient_aLegacyConsumerReadsItsOwnTenantsStatusEventsAndNoOtherTenants() throws Exception {
        readsItsOwnTenantsStatusEvents(Protocol.OPENWIRE);
    }

    @Test
    void qpidJmsAmqpClient_aLegacyConsumerReadsItsOwnTenantsStatusEventsAndNoOtherTenants() throws Exception {
        readsItsOwnTenantsStatusEvents(Protocol.AMQP);
    }

    @Test
    void artemisCoreClient_aLegacyConsumerReadsItsOwnTenantsStatusEventsAndNoOtherTenants() throws Exception {
        readsItsOwnTenantsStatusEvents(Protocol.CORE);
    }

    private void readsItsOwnTenantsStatusEvents(Protocol protocol) throws Exception {
        try (Client client = LegacyClients.connect(protocol, producerHostPort(), PRODUCER, PRODUCER_PASSWORD)) {
            LegacyClients.Subscription events = client.subscribe("jobs.events.globex", "JobgateStatus IN ('queued', 'cancelled')");
            String acmeJob = post(ACME);
            String job = post(GLOBEX);
            assertThat(api.post(GLOBEX, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);

            List<JsonNode> mine = new ArrayList<>();
            LegacyClients.Event e;
            while (mine.size() < 2 && (e = events.receive(15_000)) != null) {
                assertThat(e.tenant()).as("only globex's events reach globex's address").isEqualTo("globex");
                assertThat(e.jobId()).isNotEqualTo(acmeJob);
                if (job.equals(e.jobId())) {
                    mine.add(JSON.readTree(e.text()));
                }
            }
            assertThat(mine).extracting(n -> n.path("status").asText()).containsExactly("queued", "cancelled");
            // The same JSON as on jobs.events.
            assertThat(mine.get(0).path("job_id").asText()).isEqualTo(job);
            assertThat(mine.get(0).path("tenant_id").asText()).isEqualTo("globex");
            assertThat(mine.get(0).has("event_id") && mine.get(0).has("at") && mine.get(0).has("attempt")).isTrue();
            assertThat(mine.get(1).path("error_category").asText()).isEqualTo("cancelled");

            // Another tenant's address, and the shared topic whatever the selector: refused.
            assertThatThrownBy(() -> client.subscribe("jobs.events.acme", null)).satisfies(LegacyClientsRefusal::isSecurity);
            assertThatThrownBy(() -> client.subscribe("jobs.events", "JobgateTenant = 'globex'"))
                    .satisfies(LegacyClientsRefusal::isSecurity);
        }
    }

    /**
     * A refusal by the broker's security, in the client's own exception type (Artemis answers an
     * AMQP consumer's refused subscription as an internal error that carries AMQ229213, "does not
     * have permission").
     */
    static final class LegacyClientsRefusal {
        static void isSecurity(Throwable t) {
            if (!(t instanceof jakarta.jms.JMSSecurityException) && !(t instanceof javax.jms.JMSSecurityException)) {
                assertThat(t).isInstanceOf(jakarta.jms.JMSException.class).hasMessageContaining("AMQ229213");
            }
        }
    }

    private Message deadLetter(String key) throws Exception {
        await().atMost(Duration.ofSeconds(10)).until(() ->
                jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").size() == 1);
        return jms.browse("jobs.intake.DLQ", "JobgateIdempotencyKey = '" + key + "'").get(0);
    }

    @Test
    void followersSeeEachStatusChangeOnTheEventsTopic() throws Exception {
        try (Session s = jms.connection().createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            MessageConsumer events = s.createConsumer(s.createTopic("jobs.events"), "JobgateTenant = 'globex'");
            String job = post(GLOBEX);
            api.post(GLOBEX, "/v1/jobs/" + job + "/cancel");

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
}
