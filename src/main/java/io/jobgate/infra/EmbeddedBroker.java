package io.jobgate.infra;

import java.nio.file.Path;

import org.apache.activemq.artemis.core.config.FileDeploymentManager;
import org.apache.activemq.artemis.core.config.impl.FileConfiguration;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ActiveMQ Artemis in process, configured from the same {@code artemis/broker.xml} a standalone
 * broker uses; only the storage folders and the acceptors are set here.
 */
public final class EmbeddedBroker {

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedBroker.class);

    private final EmbeddedActiveMQ broker;

    private EmbeddedBroker(EmbeddedActiveMQ broker) {
        this.broker = broker;
    }

    /**
     * @param tcpPort port of the loopback TCP acceptor for legacy producers, or 0 for in-VM only
     */
    public static EmbeddedBroker start(Path brokerXml, Path dataDir, String tcpHost, int tcpPort, BrokerLogins logins)
            throws Exception {
        FileConfiguration configuration = new FileConfiguration();
        FileDeploymentManager deployment = new FileDeploymentManager(brokerXml.toUri().toString());
        deployment.addDeployable(configuration);
        deployment.readConfiguration();
        configuration.setBrokerInstance(dataDir.toFile());
        configuration.setBindingsDirectory(dataDir.resolve("bindings").toString());
        configuration.setJournalDirectory(dataDir.resolve("journal").toString());
        configuration.setPagingDirectory(dataDir.resolve("paging").toString());
        configuration.setLargeMessagesDirectory(dataDir.resolve("large-messages").toString());
        configuration.setNodeManagerLockDirectory(dataDir.toString());
        // Login required as on a standalone broker (broker.xml's security settings apply): the
        // gateway connects in-VM with its service user, legacy producers over loopback TCP with theirs.
        configuration.setSecurityEnabled(true);
        configuration.getAcceptorConfigurations().clear();
        configuration.addAcceptorConfiguration("in-vm", "vm://0");
        if (tcpPort > 0) {
            configuration.addAcceptorConfiguration("tcp", "tcp://" + tcpHost + ":" + tcpPort);
        }
        EmbeddedActiveMQ broker = new EmbeddedActiveMQ();
        broker.setConfiguration(configuration);
        broker.setSecurityManager(logins);
        long started = System.nanoTime();
        broker.start();
        LOG.info("Embedded Artemis from {} with data in {}{} ({} ms)", brokerXml, dataDir,
                tcpPort > 0 ? ", TCP on " + tcpHost + ":" + tcpPort : "", (System.nanoTime() - started) / 1_000_000);
        return new EmbeddedBroker(broker);
    }

    public String clientUrl() {
        return "vm://0";
    }

    public void stop() throws Exception {
        broker.stop();
    }
}
