package io.jobgate.infra;

import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicInteger;

import jakarta.jms.Connection;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.ExceptionListener;
import jakarta.jms.JMSException;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The shared connection survives the Artemis client's own failover (its ExceptionListener told {@code FAILOVER})
 * and is made anew after a lost broker ({@code DISCONNECT}): the rule behind FailoverIT's recovery, shown on a
 * stand-in connection factory that counts the connections made and closed.
 */
class FailoverKeepingConnectionFactoryTest {

    private final AtomicInteger made = new AtomicInteger();
    private final AtomicInteger closed = new AtomicInteger();
    private final ExceptionListener[] listener = new ExceptionListener[1];

    private final ConnectionFactory target = (ConnectionFactory) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {ConnectionFactory.class}, (p, m, args) -> switch (m.getName()) {
                case "createConnection" -> connection();
                default -> throw new UnsupportedOperationException(m.getName());
            });

    private Connection connection() {
        made.incrementAndGet();
        return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Connection.class}, (p, m, args) -> {
            switch (m.getName()) {
                case "setExceptionListener" -> listener[0] = (ExceptionListener) args[0];
                case "getExceptionListener" -> {
                    return listener[0];
                }
                case "close" -> closed.incrementAndGet();
                case "hashCode" -> {
                    return System.identityHashCode(p);
                }
                case "equals" -> {
                    return p == args[0];
                }
                default -> {
                    // start, stop, setClientID: nothing to do for the stand-in
                }
            }
            return null;
        });
    }

    @Test
    void aFailoverTheClientMadeKeepsTheConnectionALostBrokerResetsIt() throws Exception {
        FailoverKeepingConnectionFactory factory = new FailoverKeepingConnectionFactory(target);
        factory.setReconnectOnException(true);
        factory.createConnection();
        assertThat(made).hasValue(1);
        assertThat(listener[0]).as("the factory listens for the connection's failures").isNotNull();

        listener[0].onException(new JMSException("AMQ219016: Connection failure detected", "FAILOVER"));
        factory.createConnection();
        assertThat(closed).as("failed over by the client: kept").hasValue(0);
        assertThat(made).hasValue(1);

        listener[0].onException(new JMSException("AMQ219010: Connection is destroyed", "DISCONNECT"));
        assertThat(closed).as("a lost broker: the connection is closed").hasValue(1);
        factory.createConnection();
        assertThat(made).as("and made anew").hasValue(2);
        factory.destroy();
    }
}
