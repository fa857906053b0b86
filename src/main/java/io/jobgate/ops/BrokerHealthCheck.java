package io.jobgate.ops;


import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Session;

import org.apache.camel.health.HealthCheckResultBuilder;

/**
 * Readiness of the broker: a JMS connection can be had and opens a session. DOWN means the relay
 * cannot dispatch and the workers receive nothing; the gateway still accepts jobs into the outbox,
 * so it is a readiness check only, never a reason to restart this process.
 */
public final class BrokerHealthCheck extends BackgroundHealthCheck {

    private final ConnectionFactory connections;

    public BrokerHealthCheck(ConnectionFactory connections) {
        super("jobgate", "broker");
        this.connections = connections;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void probe(HealthCheckResultBuilder builder) {
        // The gateway's caching factory hands out its one shared connection: closing it here is a no-op.
        try (Connection c = connections.createConnection(); Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
            builder.up();
        } catch (Exception e) {
            builder.message("the broker does not answer: " + e.getMessage()).error(e).down();
        }
    }
}
