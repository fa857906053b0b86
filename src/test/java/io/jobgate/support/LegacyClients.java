package io.jobgate.support;

import java.util.ArrayList;
import java.util.List;

/**
 * The stock JMS clients legacy systems run, each over its own protocol against the broker's TCP
 * acceptor: the Artemis core client (jakarta.jms), the ActiveMQ 5.x client (javax.jms, OpenWire) and
 * Qpid JMS (jakarta.jms, AMQP 1.0). One small API over the three so each test runs on each protocol.
 */
public final class LegacyClients {

    private LegacyClients() {
    }

    public enum Protocol {
        /** Artemis' own JMS client, {@code artemis-jakarta-client}. */
        CORE,
        /** The ActiveMQ 5.x client, {@code activemq-client}, javax.jms. */
        OPENWIRE,
        /** Qpid JMS 2.x, {@code qpid-jms-client}. */
        AMQP;

        /** The connection URL a user of this client writes. */
        public String url(String hostPort) {
            return switch (this) {
                case CORE, OPENWIRE -> "tcp://" + hostPort;
                case AMQP -> "amqp://" + hostPort;
            };
        }
    }

    /** A job request as a legacy producer sends it. */
    public record Request(String body, String idempotencyKey, String correlationId, String claimedTenant,
                          String forgedUser) {
        public static Request of(String body, String idempotencyKey, String correlationId) {
            return new Request(body, idempotencyKey, correlationId, null, null);
        }

        public Request claiming(String tenant) {
            return new Request(body, idempotencyKey, correlationId, tenant, forgedUser);
        }

        /**
         * Sets JMSXUserID (AMQP: the message's user-id) and the broker's own property name for the
         * validated user, as a sender trying to pass for another user would.
         */
        public Request forgingUser(String user) {
            return new Request(body, idempotencyKey, correlationId, claimedTenant, user);
        }
    }

    /** A reply as the producer's client reads it. */
    public record Reply(String correlationId, Integer status, String jobId, Boolean replayed, String text) {
    }

    /** A consumer's message: the body and the properties the tests look at. */
    public record Event(String text, String jobId, String tenant) {
    }

    /** The login was refused (the client's own JMSSecurityException, javax or jakarta). */
    public static final class Refused extends Exception {
        Refused(Exception cause) {
            super(cause.toString(), cause);
        }
    }

    /** A connected client. */
    public interface Client extends AutoCloseable {

        /** Sends the request with a temporary reply queue as JMSReplyTo; the reply, or null after timeoutMs. */
        Reply request(Request request, long timeoutMs) throws Exception;

        /** Subscribes to a topic (non-durable), with a selector or none. */
        Subscription subscribe(String topic, String selector) throws Exception;

        @Override
        void close() throws Exception;
    }

    public interface Subscription {
        Event receive(long timeoutMs) throws Exception;
    }

    /**
     * Connects as {@code user} (no credentials when null) and opens a session.
     *
     * @throws Refused when the broker refuses the login
     */
    public static Client connect(Protocol protocol, String hostPort, String user, String password) throws Exception {
        try {
            return switch (protocol) {
                case CORE -> new JakartaClient(new org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory(
                        protocol.url(hostPort)), user, password);
                case AMQP -> new JakartaClient(new org.apache.qpid.jms.JmsConnectionFactory(protocol.url(hostPort)), user,
                        password);
                case OPENWIRE -> new JavaxClient(new org.apache.activemq.ActiveMQConnectionFactory(protocol.url(hostPort)),
                        user, password);
            };
        } catch (jakarta.jms.JMSSecurityException | javax.jms.JMSSecurityException e) {
            throw new Refused(e);
        } catch (jakarta.jms.JMSException | javax.jms.JMSException e) {
            // Some clients report a refused login as a closed connection; the cause says which.
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof SecurityException || t instanceof jakarta.jms.JMSSecurityException
                        || t instanceof javax.jms.JMSSecurityException || String.valueOf(t.getMessage()).contains("AMQ229031")) {
                    throw new Refused(e);
                }
            }
            throw e;
        }
    }

    /** Artemis core and Qpid JMS: both jakarta.jms. */
    private static final class JakartaClient implements Client {
        private final jakarta.jms.Connection connection;
        private final jakarta.jms.Session session;
        private final List<AutoCloseable> open = new ArrayList<>();

        JakartaClient(jakarta.jms.ConnectionFactory factory, String user, String password) throws jakarta.jms.JMSException {
            connection = user == null ? factory.createConnection() : factory.createConnection(user, password);
            try {
                connection.start();
                session = connection.createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE);
            } catch (jakarta.jms.JMSException e) {
                connection.close();
                throw e;
            }
        }

        @Override
        public Reply request(Request r, long timeoutMs) throws Exception {
            jakarta.jms.TemporaryQueue replies = session.createTemporaryQueue();
            try (jakarta.jms.MessageConsumer consumer = session.createConsumer(replies);
                 jakarta.jms.MessageProducer producer = session.createProducer(session.createQueue("jobs.intake"))) {
                jakarta.jms.TextMessage m = session.createTextMessage(r.body());
                m.setStringProperty("JobgateIdempotencyKey", r.idempotencyKey());
                if (r.claimedTenant() != null) {
                    m.setStringProperty("JobgateTenant", r.claimedTenant());
                }
                if (r.forgedUser() != null) {
                    m.setStringProperty("JMSXUserID", r.forgedUser());
                    m.setStringProperty("_AMQ_VALIDATED_USER", r.forgedUser());
                }
                m.setJMSCorrelationID(r.correlationId());
                m.setJMSReplyTo(replies);
                producer.send(m);
                jakarta.jms.TextMessage reply = (jakarta.jms.TextMessage) consumer.receive(timeoutMs);
                return reply == null ? null : new Reply(reply.getJMSCorrelationID(),
                        reply.propertyExists("JobgateHttpStatus") ? reply.getIntProperty("JobgateHttpStatus") : null,
                        reply.getStringProperty("JobgateJobId"),
                        reply.propertyExists("JobgateIdempotentReplayed") ? reply.getBooleanProperty("JobgateIdempotentReplayed") : null,
                        reply.getText());
            } finally {
                replies.delete();
            }
        }

        @Override
        public Subscription subscribe(String topic, String selector) throws Exception {
            jakarta.jms.MessageConsumer consumer = session.createConsumer(session.createTopic(topic), selector);
            open.add(consumer);
            return timeoutMs -> {
                jakarta.jms.TextMessage m = (jakarta.jms.TextMessage) consumer.receive(timeoutMs);
                return m == null ? null : new Event(m.getText(), m.getStringProperty("JobgateJobId"),
                        m.getStringProperty("JobgateTenant"));
            };
        }

        @Override
        public void close() throws Exception {
            connection.close();
        }
    }

    /** The ActiveMQ 5.x client: javax.jms. */
    private static final class JavaxClient implements Client {
        private final javax.jms.Connection connection;
        private final javax.jms.Session session;

        JavaxClient(javax.jms.ConnectionFactory factory, String user, String password) throws javax.jms.JMSException {
            connection = user == null ? factory.createConnection() : factory.createConnection(user, password);
            try {
                connection.start(); // the 5.x client sends its login here
                session = connection.createSession(false, javax.jms.Session.AUTO_ACKNOWLEDGE);
            } catch (javax.jms.JMSException e) {
                connection.close();
                throw e;
            }
        }

        @Override
        public Reply request(Request r, long timeoutMs) throws Exception {
            javax.jms.TemporaryQueue replies = session.createTemporaryQueue();
            try {
                javax.jms.MessageConsumer consumer = session.createConsumer(replies);
                javax.jms.MessageProducer producer = session.createProducer(session.createQueue("jobs.intake"));
                javax.jms.TextMessage m = session.createTextMessage(r.body());
                m.setStringProperty("JobgateIdempotencyKey", r.idempotencyKey());
                if (r.claimedTenant() != null) {
                    m.setStringProperty("JobgateTenant", r.claimedTenant());
                }
                if (r.forgedUser() != null) {
                    m.setStringProperty("JMSXUserID", r.forgedUser());
                    m.setStringProperty("_AMQ_VALIDATED_USER", r.forgedUser());
                }
                m.setJMSCorrelationID(r.correlationId());
                m.setJMSReplyTo(replies);
                producer.send(m);
                javax.jms.TextMessage reply = (javax.jms.TextMessage) consumer.receive(timeoutMs);
                producer.close();
                consumer.close();
                return reply == null ? null : new Reply(reply.getJMSCorrelationID(),
                        reply.propertyExists("JobgateHttpStatus") ? reply.getIntProperty("JobgateHttpStatus") : null,
                        reply.getStringProperty("JobgateJobId"),
                        reply.propertyExists("JobgateIdempotentReplayed") ? reply.getBooleanProperty("JobgateIdempotentReplayed") : null,
                        reply.getText());
            } finally {
                replies.delete();
            }
        }

        @Override
        public Subscription subscribe(String topic, String selector) throws Exception {
            javax.jms.MessageConsumer consumer = session.createConsumer(session.createTopic(topic), selector);
            return timeoutMs -> {
                javax.jms.TextMessage m = (javax.jms.TextMessage) consumer.receive(timeoutMs);
                return m == null ? null : new Event(m.getText(), m.getStringProperty("JobgateJobId"),
                        m.getStringProperty("JobgateTenant"));
            };
        }

        @Override
        public void close() throws Exception {
            connection.close();
        }
    }
}
