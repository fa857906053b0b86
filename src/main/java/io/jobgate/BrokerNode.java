package io.jobgate;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.stream.Collectors;

import io.jobgate.common.StartRefused;
import io.jobgate.infra.BrokerLogins;
import io.jobgate.infra.DataDirectoryLock;
import io.jobgate.infra.EmbeddedBroker;
import io.jobgate.infra.Settings;
import io.jobgate.tenant.DemoCredentials;
import io.jobgate.tenant.TenantDirectory;
import org.apache.camel.impl.DefaultCamelContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code java -jar jobgate.jar broker}: the embedded broker alone, as a node of its own that gateways
 * reach over TCP ({@code jobgate.broker.url}), and with {@code jobgate.broker.ha} one of a replicated
 * pair (docs/operating.md, "Artemis: a replicated pair"). It runs none of the gateway's parts: no
 * database, no object store, no routes; the same settings file and environment variables as the
 * gateway, the same broker.xml, the same logins (the gateway's broker user and the tenants' JMS
 * producers). Unlike the gateway's embedded broker, whose service password may be made per start
 * since only the gateway in the same JVM uses it, a node's logins are used from elsewhere: it refuses
 * to start without a user and password the operator set, and with a shipped demo producer password,
 * on any address (a node exists to be reached).
 */
public final class BrokerNode {

    private static final Logger LOG = LoggerFactory.getLogger(BrokerNode.class);

    /** Artemis's own lines on activation, replication and failback are what an operator watches on a node. */
    private static final java.util.logging.Logger ARTEMIS_SERVER = java.util.logging.Logger.getLogger("org.apache.activemq.artemis.core.server");

    /** The settings a node reads beyond the gateway's broker settings (docs/settings.md). */
    static final String HA = EmbeddedBroker.Replication.SETTING;
    static final String HA_PEER = "jobgate.broker.ha-peer";
    static final String HA_ADDRESS = "jobgate.broker.ha-address";
    static final String HA_CLUSTER_PASSWORD = "jobgate.broker.ha-cluster-password";

    private BrokerNode() {
    }

    /** What a node is configured to be, every setting checked; nothing started. */
    record Plan(Path brokerXml, Path dataDir, String host, int port, String user, String password,
                TenantDirectory tenants, EmbeddedBroker.Replication replication) {

        String describe() {
            String where = host + ":" + port;
            return replication == null ? "a broker of its own on " + where
                    : "the " + replication.role() + " of a replicated pair on " + where + " (reached as " + replication.self()
                    + "), its peer " + replication.peer();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            throw new StartRefused("the broker command takes no arguments, only settings (environment variables; "
                    + "java -jar jobgate.jar broker --help)");
        }
        DefaultCamelContext context = new DefaultCamelContext();
        context.getPropertiesComponent().setLocation(Gateway.SETTINGS);
        Plan plan = plan(new Settings(context));
        ARTEMIS_SERVER.setLevel(Level.INFO);
        DataDirectoryLock lock = DataDirectoryLock.acquire(plan.dataDir());
        BrokerLogins logins = new BrokerLogins(plan.user(), plan.password(), producers(plan.tenants()),
                plan.tenants().brokerProducers().stream().collect(Collectors.toMap(TenantDirectory.BrokerProducer::user,
                        TenantDirectory.BrokerProducer::tenantId)));
        EmbeddedBroker broker = EmbeddedBroker.start(plan.brokerXml(), plan.dataDir().resolve("artemis"), plan.host(), plan.port(),
                logins, plan.replication());
        LOG.info("jobgate broker node: {}; logins: {} and {} JMS producer(s) (Ctrl-C stops it)", plan.describe(), plan.user(),
                plan.tenants().brokerProducers().size());
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                broker.stop();
            } catch (Exception e) {
                LOG.warn("broker node stop: {}", e.toString());
            } finally {
                try {
                    lock.close();
                } catch (java.io.IOException e) {
                    LOG.warn("data directory lock: {}", e.toString());
                }
                stopped.countDown();
            }
        }, "jobgate-broker-node-stop"));
        stopped.await();
    }

    static Plan plan(Settings settings) throws Exception {
        String user = settings.optional("jobgate.broker.user").orElse(null);
        String password = settings.optional("jobgate.broker.password").orElse(null);
        if (user == null || password == null) {
            throw new StartRefused("refusing to start the broker node: it has no login of the operator's own; set "
                    + "JOBGATE_BROKER_USER and JOBGATE_BROKER_PASSWORD (the gateway logs in with the same two; "
                    + "docs/operating.md, \"Artemis: a replicated pair\")");
        }
        int port = settings.intValue("jobgate.broker.embedded-port", 0, 65535);
        if (port == 0) {
            throw new StartRefused("refusing to start the broker node: jobgate.broker.embedded-port is 0 (in-VM only), "
                    + "and a node is reached over TCP; set JOBGATE_BROKER_EMBEDDED_PORT");
        }
        String host = settings.required("jobgate.broker.embedded-host");
        TenantDirectory tenants = TenantDirectory.load(Arrays.stream(settings.required("jobgate.tenants.files").split(","))
                .map(String::trim).map(Path::of).toList());
        List<String> demo = tenants.brokerProducers().stream().filter(p -> DemoCredentials.shipped(p.passwordSha256()))
                .map(p -> p.user() + " (tenant " + p.tenantId() + ")").toList();
        if (!demo.isEmpty()) {
            throw new StartRefused("refusing to start the broker node: the JMS producer(s) " + String.join(", ", demo)
                    + " have the shipped demo password (config/tenants.yaml); set JOBGATE_TENANTS_FILES to tenants files "
                    + "of your own, with producers of your own or none");
        }
        String role = settings.optional(HA).orElse(null);
        EmbeddedBroker.Replication replication = null;
        if (role != null) {
            if (!EmbeddedBroker.Replication.ROLES.contains(role)) {
                throw new StartRefused("refusing to start the broker node: " + HA + " is '" + role + "'; set it to "
                        + String.join(" or ", EmbeddedBroker.Replication.ROLES) + ", or leave it empty for a broker of its own");
            }
            String peer = address(settings, HA_PEER, null);
            String wildcard = host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]") ? host : null;
            String self = address(settings, HA_ADDRESS, wildcard != null ? null : (host.contains(":") ? "[" + host + "]" : host) + ":" + port);
            if (self == null) {
                throw new StartRefused("refusing to start the broker node: it listens on " + wildcard + ", which its peer and "
                        + "clients cannot dial; set " + Settings.environmentName(HA_ADDRESS) + " to host:port they reach it at");
            }
            if (peer == null) {
                throw new StartRefused("refusing to start the broker node: " + HA + " = " + role + " needs its peer; set "
                        + Settings.environmentName(HA_PEER) + " to the other node's host:port");
            }
            String clusterPassword = settings.optional(HA_CLUSTER_PASSWORD).orElseThrow(() -> new StartRefused(
                    "refusing to start the broker node: a replicated pair authenticates its two nodes with a password of the "
                            + "operator's own, and none is set; set " + Settings.environmentName(HA_CLUSTER_PASSWORD)
                            + " (the same on both nodes)"));
            replication = new EmbeddedBroker.Replication(role, self, peer, clusterPassword);
        }
        return new Plan(settings.path("jobgate.broker.config"), settings.path("jobgate.data-dir"), host, port, user, password,
                tenants, replication);
    }

    /** A host:port setting, checked (it goes into the broker's XML); {@code fallback} when unset. */
    private static String address(Settings settings, String key, String fallback) {
        String value = settings.optional(key).orElse(fallback);
        if (value != null && !EmbeddedBroker.Replication.ADDRESS.matcher(value).matches()) {
            throw new StartRefused("refusing to start the broker node: " + key + " must be host:port, was '" + value + "'");
        }
        return value;
    }

    private static Map<String, String> producers(TenantDirectory tenants) {
        return tenants.brokerProducers().stream().filter(p -> p.passwordSha256() != null)
                .collect(Collectors.toMap(TenantDirectory.BrokerProducer::user, TenantDirectory.BrokerProducer::passwordSha256));
    }
}
