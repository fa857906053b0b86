package io.jobgate.support;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Message;
import jakarta.jms.QueueBrowser;
import jakarta.jms.Session;
import org.springframework.jms.connection.CachingConnectionFactory;

/** Plain JMS against the broker the gateway uses, for assertions on queues and topics. */
public final class Jms implements AutoCloseable {

    private final Connection connection;

    public Jms(ConnectionFactory gatewayFactory) throws Exception {
        ConnectionFactory target = gatewayFactory instanceof CachingConnectionFactory c ? c.getTargetConnectionFactory()
                : gatewayFactory;
        this.connection = target.createConnection();
        connection.start();
    }

    public Connection connection() {
        return connection;
    }

    /** Messages on a queue matching a selector, left in place. */
    public List<Message> browse(String queue, String selector) throws Exception {
        try (Session s = connection.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            QueueBrowser browser = s.createBrowser(s.createQueue(queue), selector);
            List<Message> found = new ArrayList<>(Collections.list(browser.getEnumeration()).stream()
                    .map(Message.class::cast).toList());
            browser.close();
            return found;
        }
    }

    @Override
    public void close() throws Exception {
        connection.close();
    }
}
