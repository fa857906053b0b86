package io.jobgate.infra;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.activemq.artemis.api.core.TransportConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.core.config.CoreAddressConfiguration;
import org.apache.activemq.artemis.core.config.DivertConfiguration;
import org.apache.activemq.artemis.core.config.FileDeploymentManager;
import org.apache.activemq.artemis.core.security.Role;
import org.apache.activemq.artemis.core.server.ComponentConfigurationRoutingType;
import org.apache.activemq.artemis.core.config.impl.FileConfiguration;
import org.apache.activemq.artemis.core.remoting.impl.invm.InVMAcceptorFactory;
import org.apache.activemq.artemis.core.remoting.impl.invm.TransportConstants;
import org.apache.activemq.artemis.core.remoting.impl.netty.NettyAcceptorFactory;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * ActiveMQ Artemis in process, configured from the same {@code artemis/broker.xml} a standalone
 * broker uses, acceptor included (its protocols: CORE, AMQP, OPENWIRE, the modules of the last two
 * on the class path). What differs from a standalone broker is done here and only here, and listed
 * in docs/jms.md ("Embedded and standalone broker"): storage under the data directory; the network
 * acceptor bound to {@code jobgate.broker.embedded-host:-port} (loopback by default, none with port
 * 0) plus an in-VM acceptor for the gateway; logins from the tenants file ({@link BrokerLogins}).
 */
public final class EmbeddedBroker {

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedBroker.class);

    /** The in-VM acceptor's URL (server id 0), known before the broker runs. */
    public static final String CLIENT_URL = "vm://0";

    private final EmbeddedActiveMQ broker;

    private EmbeddedBroker(EmbeddedActiveMQ broker) {
        this.broker = broker;
    }

    /**
     * @param tcpPort port of the loopback TCP acceptor for legacy producers, or 0 for in-VM only
     */
    public static EmbeddedBroker start(Path brokerXml, Path dataDir, String tcpHost, int tcpPort, BrokerLogins logins)
            throws Exception {
        return start(brokerXml, dataDir, tcpHost, tcpPort, logins, null);
    }

    /**
     * One node of a replicated pair ({@code artemis/ha/<role>.xml} beside broker.xml's folder): its
     * role, the address its peer and clients reach it at, the peer's, and the cluster password the
     * two authenticate each other with.
     */
    public record Replication(String role, String self, String peer, String clusterPassword) {

        public static final java.util.List<String> ROLES = java.util.List.of("primary", "backup");

        /** The setting that makes a broker node one of a pair ({@code java -jar jobgate.jar broker}). */
        public static final String SETTING = "jobgate.broker.ha";

        /** host:port, nothing else: the value goes into the broker's XML. */
        public static final java.util.regex.Pattern ADDRESS = java.util.regex.Pattern.compile("[A-Za-z0-9.\\-]+:[0-9]{1,5}|\\[[0-9A-Fa-f:.]+\\]:[0-9]{1,5}");

        public Replication {
            if (!ROLES.contains(role)) {
                throw new IllegalArgumentException("role " + role);
            }
        }

        /**
         * broker.xml with the role's elements put at the end of its {@code <core>}, the addresses filled in,
         * written beside the journal: the file the node reads (and the schema check caches, as for broker.xml).
         * The cluster password stays out of it ({@link #start} sets it).
         */
        public Path merged(Path brokerXml, Path dataDir) throws java.io.IOException {
            Path fragment = brokerXml.resolveSibling("ha").resolve(role + ".xml");
            String elements = java.nio.file.Files.readString(fragment).replace("@SELF@", self).replace("@PEER@", peer);
            String xml = java.nio.file.Files.readString(brokerXml);
            int end = xml.lastIndexOf("</core>");
            if (end < 0) {
                throw new IllegalStateException(brokerXml + " has no </core>");
            }
            String text = xml.substring(0, end) + "<!-- " + fragment.toAbsolutePath().normalize() + " (generated: "
                    + "edit that file and broker.xml, not this one) -->\n" + elements + "\n" + xml.substring(end);
            java.nio.file.Files.createDirectories(dataDir);
            Path file = dataDir.resolve("broker-" + role + ".xml");
            java.nio.file.Files.writeString(file, text);
            return file;
        }
    }

    /** @param replication the node's place in a replicated pair, or null for a broker of its own */
    public static EmbeddedBroker start(Path brokerXml, Path dataDir, String tcpHost, int tcpPort, BrokerLogins logins,
            Replication replication) throws Exception {
        Path configFile = replication == null ? brokerXml : replication.merged(brokerXml, dataDir);
        FileConfiguration configuration = read(configFile, dataDir);
        if (replication != null) {
            configuration.setClusterPassword(replication.clusterPassword());
        }
        configuration.setBrokerInstance(dataDir.toFile());
        configuration.setBindingsDirectory(dataDir.resolve("bindings").toString());
        configuration.setJournalDirectory(dataDir.resolve("journal").toString());
        configuration.setPagingDirectory(dataDir.resolve("paging").toString());
        configuration.setLargeMessagesDirectory(dataDir.resolve("large-messages").toString());
        configuration.setNodeManagerLockDirectory(dataDir.toString());
        // Login required as on a standalone broker (broker.xml's security settings apply): the
        // gateway connects in-VM with its service user, legacy producers over loopback TCP with theirs.
        configuration.setSecurityEnabled(true);
        List<String> network = networkAcceptors(configuration, tcpHost, tcpPort);
        tenantEvents(configuration, logins.tenants());
        // broker.xml names ValidatedUserStamp as a broker plugin; that list is read here like any other setting.
        EmbeddedActiveMQ broker = new EmbeddedActiveMQ();
        broker.setConfiguration(configuration);
        broker.setSecurityManager(logins);
        long started = System.nanoTime();
        broker.start();
        LOG.info("Embedded Artemis from {} with data in {}, in-VM{} ({} ms)", configFile, dataDir,
                network.isEmpty() ? " only" : " and " + String.join(", ", network), (System.nanoTime() - started) / 1_000_000);
        return new EmbeddedBroker(broker);
    }

    /**
     * broker.xml's {@code <core>}, checked against Artemis's schema as a standalone broker would,
     * but only when the file (or Artemis) changed since the last check in this data directory: the
     * check alone costs 0.15-0.25 s of CPU, and a broker that starts last holds the gateway's ready.
     */
    public static FileConfiguration read(Path brokerXml, Path dataDir) throws Exception {
        FileConfiguration configuration = new FileConfiguration();
        String stamp = io.jobgate.common.Digests.sha256Hex(java.nio.file.Files.readAllBytes(brokerXml))
                + " artemis " + org.apache.activemq.artemis.utils.VersionLoader.getVersion().getFullVersion();
        Path checked = dataDir.resolve("broker-xml.checked");
        if (java.nio.file.Files.exists(checked) && java.nio.file.Files.readString(checked).trim().equals(stamp)) {
            java.net.URL url = brokerXml.toUri().toURL();
            org.w3c.dom.Element root = org.apache.activemq.artemis.utils.XMLUtil.urlToElement(url);
            configuration.parse((org.w3c.dom.Element) root.getElementsByTagName(configuration.getRootElement()).item(0), url);
            return configuration;
        }
        FileDeploymentManager deployment = new FileDeploymentManager(brokerXml.toUri().toString());
        deployment.addDeployable(configuration);
        deployment.readConfiguration(); // validates, then parses
        java.nio.file.Files.createDirectories(dataDir);
        java.nio.file.Files.writeString(checked, stamp + "\n");
        return configuration;
    }

    /**
     * The acceptors: broker.xml's network acceptor as written (its protocols and options), bound to
     * {@code tcpHost:tcpPort} instead of its own host and port, or left out when the port is 0; and
     * an in-VM acceptor for the gateway's own connection.
     *
     * @return the network acceptors opened, described for the log
     */
    static List<String> networkAcceptors(FileConfiguration configuration, String tcpHost, int tcpPort) {
        List<TransportConfiguration> fromXml = List.copyOf(configuration.getAcceptorConfigurations());
        List<TransportConfiguration> network = fromXml.stream()
                .filter(a -> NettyAcceptorFactory.class.getName().equals(a.getFactoryClassName())).toList();
        // One host and port to bind: a second network acceptor would ask for the same port.
        if (network.size() != 1) {
            throw new IllegalStateException("the embedded broker binds broker.xml's one network acceptor to "
                    + "jobgate.broker.embedded-host/-port, but broker.xml has " + network.size());
        }
        configuration.getAcceptorConfigurations().clear();
        configuration.addAcceptorConfiguration(new TransportConfiguration(InVMAcceptorFactory.class.getName(),
                Map.of(TransportConstants.SERVER_ID_PROP_NAME, 0), "in-vm"));
        if (tcpPort == 0) {
            return List.of();
        }
        TransportConfiguration xml = network.get(0);
        Map<String, Object> params = new HashMap<>(xml.getParams());
        params.put(org.apache.activemq.artemis.core.remoting.impl.netty.TransportConstants.HOST_PROP_NAME, tcpHost);
        params.put(org.apache.activemq.artemis.core.remoting.impl.netty.TransportConstants.PORT_PROP_NAME, tcpPort);
        configuration.addAcceptorConfiguration(new TransportConfiguration(xml.getFactoryClassName(), params, xml.getName(),
                xml.getExtraParams()));
        return List.of(xml.getName() + " on " + tcpHost + ":" + tcpPort + " ("
                + params.getOrDefault(org.apache.activemq.artemis.core.remoting.impl.netty.TransportConstants.PROTOCOLS_PROP_NAME, "all protocols") + ")");
    }

    /**
     * Per tenant with a JMS user, what a standalone broker gets from the per-tenant snippet of docs/jms.md:
     * the address {@code jobs.events.<tenant>}, fed by a divert that copies that tenant's events from
     * {@code jobs.events}, readable by the gateway and the role {@code events-<tenant>} only. A
     * selector on the shared topic would be the consumer's own choice, not a boundary.
     */
    static void tenantEvents(FileConfiguration configuration, java.util.Collection<String> tenants) {
        for (String tenant : tenants) {
            String address = "jobs.events." + tenant;
            configuration.addDivertConfiguration(new DivertConfiguration().setName(address).setAddress("jobs.events")
                    .setForwardingAddress(address).setFilterString("JobgateTenant = '" + tenant + "'").setExclusive(false)
                    .setRoutingType(ComponentConfigurationRoutingType.MULTICAST));
            configuration.addAddressConfiguration(new CoreAddressConfiguration().setName(address)
                    .addRoutingType(RoutingType.MULTICAST));
            // name, send, consume, create/delete durable queue, create/delete non-durable queue, manage, browse,
            // create/delete address
            configuration.putSecurityRoles(address, Set.of(
                    new Role(BrokerLogins.SERVICE_ROLE, true, true, true, true, true, true, true, true, true, true),
                    new Role(BrokerLogins.eventsRole(tenant), false, true, true, true, true, true, false, false, false, false)));
        }
    }

    public void stop() throws Exception {
        broker.stop();
    }
}
