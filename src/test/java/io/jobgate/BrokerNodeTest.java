package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

import io.jobgate.common.StartRefused;
import io.jobgate.infra.EmbeddedBroker;
import io.jobgate.infra.Settings;
import org.apache.activemq.artemis.core.config.ha.ReplicaPolicyConfiguration;
import org.apache.activemq.artemis.core.config.ha.ReplicatedPolicyConfiguration;
import org.apache.activemq.artemis.core.config.impl.FileConfiguration;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A broker node's settings: no login, demo producers, a pair without its peer or cluster password, a
 * wildcard address its peer cannot dial are each refused in one line naming what to set; a pair's
 * configuration is broker.xml with artemis/ha's elements, valid for Artemis, its password from the setting.
 */
class BrokerNodeTest {

    @TempDir
    Path dir;

    private Settings settings(Map<String, String> values) {
        DefaultCamelContext context = new DefaultCamelContext();
        context.getPropertiesComponent().setLocation(Gateway.SETTINGS);
        // The settings file and this test's values only: the gateway tests that ran before in this JVM leave their
        // settings as system properties (jobgate.broker.user empty among them), which would override these.
        org.apache.camel.component.properties.PropertiesComponent properties =
                (org.apache.camel.component.properties.PropertiesComponent) context.getPropertiesComponent();
        properties.setSystemPropertiesMode(org.apache.camel.component.properties.PropertiesComponent.SYSTEM_PROPERTIES_MODE_NEVER);
        properties.setEnvironmentVariableMode(org.apache.camel.component.properties.PropertiesComponent.ENVIRONMENT_VARIABLES_MODE_NEVER);
        Properties overrides = new Properties();
        overrides.putAll(values);
        context.getPropertiesComponent().setOverrideProperties(overrides);
        return new Settings(context);
    }

    private Map<String, String> node(String... more) throws Exception {
        Path tenants = dir.resolve("tenants.yaml");
        Files.writeString(tenants, """
                tenants:
                  - id: own
                    display_name: own
                    api_key_sha256: %s
                    max_open_jobs: 10
                    max_running_jobs: 1
                """.formatted(io.jobgate.common.Digests.sha256Hex("a key of the operator's own")));
        Map<String, String> values = new java.util.HashMap<>(Map.of("jobgate.data-dir", dir.resolve("data").toString(),
                "jobgate.tenants.files", tenants.toString(), "jobgate.broker.user", "jobgate",
                "jobgate.broker.password", "an operator's own"));
        for (int i = 0; i < more.length; i += 2) {
            values.put(more[i], more[i + 1]);
        }
        return values;
    }

    @Test
    void refusesToStartWithoutALoginOfTheOperatorsOwn() throws Exception {
        Map<String, String> values = node();
        values.remove("jobgate.broker.password");
        assertThatThrownBy(() -> BrokerNode.plan(settings(values))).isInstanceOf(StartRefused.class)
                .hasMessageContaining("JOBGATE_BROKER_PASSWORD").hasMessageNotContaining("\n");
    }

    @Test
    void refusesTheDemoProducersOfTheShippedTenantsFile() throws Exception {
        Map<String, String> values = node("jobgate.tenants.files", "config/tenants.yaml");
        assertThatThrownBy(() -> BrokerNode.plan(settings(values))).isInstanceOf(StartRefused.class)
                .hasMessageContaining("acme-legacy").hasMessageContaining("JOBGATE_TENANTS_FILES");
    }

    @Test
    void aPairNeedsItsPeerAClusterPasswordAndAnAddressToBeReachedAt() throws Exception {
        assertThatThrownBy(() -> BrokerNode.plan(settings(node(BrokerNode.HA, "primary", BrokerNode.HA_CLUSTER_PASSWORD, "x"))))
                .isInstanceOf(StartRefused.class).hasMessageContaining("JOBGATE_BROKER_HA_PEER");
        assertThatThrownBy(() -> BrokerNode.plan(settings(node(BrokerNode.HA, "backup", BrokerNode.HA_PEER, "broker-a:61616"))))
                .isInstanceOf(StartRefused.class).hasMessageContaining("JOBGATE_BROKER_HA_CLUSTER_PASSWORD");
        assertThatThrownBy(() -> BrokerNode.plan(settings(node(BrokerNode.HA, "primary", BrokerNode.HA_PEER, "broker-b:61616",
                BrokerNode.HA_CLUSTER_PASSWORD, "x", "jobgate.broker.embedded-host", "0.0.0.0"))))
                .isInstanceOf(StartRefused.class).hasMessageContaining("JOBGATE_BROKER_HA_ADDRESS");
        assertThatThrownBy(() -> BrokerNode.plan(settings(node(BrokerNode.HA, "leader"))))
                .isInstanceOf(StartRefused.class).hasMessageContaining("primary or backup");
        assertThatThrownBy(() -> BrokerNode.plan(settings(node(BrokerNode.HA, "primary", BrokerNode.HA_PEER, "b</connector>:1",
                BrokerNode.HA_CLUSTER_PASSWORD, "x")))).isInstanceOf(StartRefused.class).hasMessageContaining("host:port");
    }

    @Test
    void aPairsNodeIsBrokerXmlWithTheRolesElementsAndThePasswordOfTheSetting() throws Exception {
        for (String role : EmbeddedBroker.Replication.ROLES) {
            BrokerNode.Plan plan = BrokerNode.plan(settings(node(BrokerNode.HA, role, BrokerNode.HA_PEER, "broker-b:61617",
                    BrokerNode.HA_CLUSTER_PASSWORD, "the pair's own")));
            assertThat(plan.replication().self()).isEqualTo("127.0.0.1:61616");
            Path data = dir.resolve(role);
            Path merged = plan.replication().merged(plan.brokerXml(), data);
            assertThat(Files.readString(merged)).doesNotContain("@SELF@", "@PEER@", "the pair's own")
                    .contains("tcp://127.0.0.1:61616", "tcp://broker-b:61617");
            // Valid against Artemis's schema, as the node reads it.
            FileConfiguration configuration = EmbeddedBroker.read(merged, data);
            if (role.equals("primary")) {
                assertThat(configuration.getHAPolicyConfiguration()).isInstanceOfSatisfying(ReplicatedPolicyConfiguration.class,
                        p -> assertThat(p.isCheckForActiveServer()).as("check-for-active-server").isTrue());
            } else {
                assertThat(configuration.getHAPolicyConfiguration()).isInstanceOfSatisfying(ReplicaPolicyConfiguration.class,
                        p -> assertThat(p.isAllowFailBack()).as("allow-failback").isTrue());
            }
            assertThat(configuration.getClusterConfigurations()).hasSize(1);
            assertThat(configuration.getClusterUser()).isEqualTo("jobgate-cluster");
        }
    }
}
