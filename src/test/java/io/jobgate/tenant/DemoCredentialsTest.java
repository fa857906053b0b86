package io.jobgate.tenant;

import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;

import io.jobgate.common.Digests;
import org.junit.jupiter.api.Test;

/** Issue 38: a shipped demo secret answers on loopback only. */
class DemoCredentialsTest {

    static final String ADMIN_DEMO = Digests.sha256Hex(ADMIN);
    /** The simulator's webhook secret as config/application.properties ships it. */
    static final String SIMULATOR = shippedSetting("jobgate.simulator.webhook-secret");

    static String shippedSetting(String key) {
        java.util.Properties settings = new java.util.Properties();
        try (java.io.Reader in = java.nio.file.Files.newBufferedReader(Path.of("config/application.properties"))) {
            settings.load(in);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return settings.getProperty(key).trim();
    }

    TenantDirectory shipped() throws Exception {
        return TenantDirectory.load(List.of(Path.of("config/tenants.yaml")));
    }

    @Test
    void theShippedTenantsAdminKeyAndProducersAreNamedWhenReachable() throws Exception {
        List<String> found = DemoCredentials.reachable(shipped(), ADMIN_DEMO, SIMULATOR, "0.0.0.0", "0.0.0.0");
        assertThat(String.join("\n", found)).contains("tenant acme has the demo API key 'dev-acme-key'")
                .contains("tenant globex has the demo API key 'dev-globex-key'")
                .contains("the operator key is the demo key 'dev-admin-key'")
                .contains("JMS producer acme-legacy of tenant acme has the demo password 'dev-acme-jms'")
                .contains("JMS producer globex-legacy of tenant globex has the demo password 'dev-globex-jms'")
                .contains("the provider simulator runs with the shipped webhook secret (jobgate.simulator.webhook-secret");
    }

    /** Issue 64: the digest DemoCredentials knows is the settings file's secret, so the two cannot drift apart. */
    @Test
    void theShippedSimulatorSecretIsTheSettingsFilesOne() {
        assertThat(SIMULATOR).startsWith("whsec_");
        assertThat(DemoCredentials.shippedWebhookSecret(SIMULATOR)).isTrue();
        assertThat(DemoCredentials.shippedWebhookSecret("whsec_b3VyLW93bi1zaW11bGF0b3Itc2VjcmV0")).isFalse();
        assertThat(DemoCredentials.shippedWebhookSecret(null)).isFalse();
    }

    /** The simulator off (null): its secret answers nothing at start; an own secret is never named. */
    @Test
    void theSimulatorSecretCountsOnlyWhileTheSimulatorRuns() throws Exception {
        TenantDirectory own = new TenantDirectory(List.of(), List.of());
        assertThat(DemoCredentials.reachable(own, null, null, "0.0.0.0", null)).isEmpty();
        assertThat(DemoCredentials.reachable(own, null, "whsec_b3VyLW93bi1zaW11bGF0b3Itc2VjcmV0", "0.0.0.0", null)).isEmpty();
        assertThat(DemoCredentials.reachable(own, null, SIMULATOR, "127.0.0.1", null)).isEmpty();
        assertThat(DemoCredentials.reachable(own, null, SIMULATOR, "0.0.0.0", null)).singleElement().asString()
                .contains("jobgate.simulator.webhook-secret").contains("listens on 0.0.0.0");
    }

    @Test
    void onLoopbackNothingIsReachable() throws Exception {
        for (String host : new String[] {"127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"}) {
            assertThat(DemoCredentials.reachable(shipped(), ADMIN_DEMO, SIMULATOR, host, host)).as(host).isEmpty();
        }
    }

    @Test
    void anExternalBrokerKeepsItsOwnPasswordsAndOwnSecretsAreNeverNamed() throws Exception {
        assertThat(DemoCredentials.reachable(shipped(), ADMIN_DEMO, SIMULATOR, "127.0.0.1", null)).isEmpty();
        TenantDirectory own = new TenantDirectory(List.of(new Tenant("own", "Own", Digests.sha256Hex("a-key-of-our-own"), 10, 1, 1L << 20, java.util.Map.of())),
                List.of(new TenantDirectory.BrokerProducer("own-legacy", Digests.sha256Hex("a-password-of-our-own"), "own")));
        assertThat(DemoCredentials.reachable(own, Digests.sha256Hex("an-admin-key-of-our-own"), "whsec_b3VyLW93bi1zaW11bGF0b3Itc2VjcmV0", "0.0.0.0", "0.0.0.0")).isEmpty();
        assertThat(DemoCredentials.reachable(own, null, null, "", "10.0.0.5")).isEmpty();
    }

    @Test
    void theWildcardAndOtherAddressesAreReachable() {
        for (String host : new String[] {"0.0.0.0", "::", "10.1.2.3", "", "no-such-host.invalid"}) {
            assertThat(DemoCredentials.loopback(host)).as(host).isFalse();
        }
    }
}
