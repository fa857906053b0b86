package io.jobgate.infra;

import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;

import org.apache.activemq.artemis.jms.client.ActiveMQConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jms.connection.CachingConnectionFactory;

/**
 * The gateway's one shared JMS connection (sessions and producers cached), reset when the broker is lost, but
 * not when the Artemis client has failed over by itself.
 *
 * <p>With an HA URL ({@code ha=true}, both servers; docs/operating.md, "Failover") the Artemis client moves its
 * connection, sessions and consumers to the backup on its own, and then still tells the connection's
 * {@code ExceptionListener}, with the error code {@code FAILOVER}. Spring's {@code reconnectOnException} took
 * that for a lost connection and closed it: every session and consumer the failover had just moved was closed
 * under the worker, the relay and the topic's subscribers, so every listener container reconnected, and the
 * relay's first round after the failover (the backlog of the failover, up to a provider's every free call) failed
 * on "Connection is closed". Those claims keep their jobs' slots; before the relay published such claims on a full
 * provider (relay-claim-dispatch.sql), that failed round stalled FailoverIT for good (seen after the failover and
 * after the failback). Artemis's own resource adapter ignores {@code FAILOVER} the same way. A {@code DISCONNECT} (a single broker gone, or
 * reconnection given up) still resets the connection, and the listener containers make a new one.
 */
public final class FailoverKeepingConnectionFactory extends CachingConnectionFactory {

    private static final Logger LOG = LoggerFactory.getLogger(FailoverKeepingConnectionFactory.class);

    public FailoverKeepingConnectionFactory(ConnectionFactory target) {
        super(target);
    }

    @Override
    public void onException(JMSException ex) {
        if (ActiveMQConnection.EXCEPTION_FAILOVER.equals(ex.getErrorCode())) {
            LOG.warn("the broker connection failed over to the other server of the pair; sessions and consumers carry on ({})",
                    ex.getMessage());
            return;
        }
        super.onException(ex);
    }
}
