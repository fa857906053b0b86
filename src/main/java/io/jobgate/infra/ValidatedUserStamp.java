package io.jobgate.infra;

import org.apache.activemq.artemis.api.core.Message;
import org.apache.activemq.artemis.core.server.ServerSession;
import org.apache.activemq.artemis.core.server.plugin.ActiveMQServerPlugin;
import org.apache.activemq.artemis.core.transaction.Transaction;

/**
 * A broker plugin (named in {@code artemis/broker.xml}, {@code broker-plugins}) that stamps every
 * message a client sends with the broker user that client logged in as, in
 * {@code _AMQ_VALIDATED_USER} ({@code JMSXUserID} to a JMS consumer), on every protocol, and
 * removes the property when the session has no user, so a sender can never set it.
 *
 * <p>Why not only {@code populate-validated-user}: Artemis applies that to core and OpenWire
 * messages but not to AMQP 1.0 ones (their {@code setValidatedUserID} does nothing), so an AMQP
 * sender's message arrived with no user at all — or with one it wrote itself as an application
 * property of that name. The JMS intake takes the tenant from this property, so it must come from
 * the broker. Imports only Artemis: {@code .ci/run} compiles this one file against the standalone
 * broker's own jars into the jar its {@code lib/} loads.
 */
public final class ValidatedUserStamp implements ActiveMQServerPlugin {

    @Override
    public void beforeSend(ServerSession session, Transaction tx, Message message, boolean direct,
            boolean noAutoCreateQueue) {
        // Only messages from a client session; the broker's own (diverts, DLQ moves) keep theirs.
        if (session == null) {
            return;
        }
        String user = session.getValidatedUser();
        if (user == null || user.isEmpty()) {
            message.removeProperty(Message.HDR_VALIDATED_USER);
        } else {
            message.putStringProperty(Message.HDR_VALIDATED_USER, user);
        }
    }
}
