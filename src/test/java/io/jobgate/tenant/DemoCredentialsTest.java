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

    TenantDirectory shipped() throws Exception {
        return TenantDirectory.load(List.of(Path.of("config/tenants.yaml")));
    }

    @Test
    void theShippedTenantsAdminKeyAndProducersAreNamedWhenReachable() throws Exception {
        List<String> found = DemoCredentials.reachable(shipped(), ADMIN_DEMO, "0.0.0.0", "0.0.0.0");
        assertThat(String.join("\n", found)).contains("tenant acme has the demo API key 'dev-acme-key'")
                .contains("tenant globex has the demo API key 'dev-globex-key'")
                .contains("the operator key is the demo key 'dev-admin-key'")
                .contains("JMS producer acme-legacy of tenant acme has the demo password 'dev-acme-jms'")
                .contains("JMS producer globex-legacy of tenant globex has the demo password 'dev-globex-jms'");
    }

    @Test
    void onLoopbackNothingIsReachable() throws Exception {
        for (String host : new String[] {"127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"}) {
            assertThat(DemoCredentials.reachable(shipped(), ADMIN_DEMO, host, host)).as(host).isEmpty();
        }
    }

    @Test
    void anExternalBrokerKeepsItsOwnPasswordsAndOwnSecretsAreNeverNamed() throws Exception {
        assertThat(DemoCredentials.reachable(shipped(), ADMIN_DEMO, "127.0.0.1", null)).isEmpty();
        TenantDirectory own = new TenantDirectory(List.of(new Tenant("own", "Own", Digests.sha256Hex("a-key-of-our-own"), 10, 1, 1L << 20, java.util.Map.of())),
                List.of(new TenantDirectory.BrokerProducer("own-legacy", Digests.sha256Hex("a-password-of-our-own"), "own")));
        assertThat(DemoCredentials.reachable(own, Digests.sha256Hex("an-admin-key-of-our-own"), "0.0.0.0", "0.0.0.0")).isEmpty();
        assertThat(DemoCredentials.reachable(own, null, "", "10.0.0.5")).isEmpty();
    }

    @Test
    void theWildcardAndOtherAddressesAreReachable() {
        for (String host : new String[] {"0.0.0.0", "::", "10.1.2.3", "", "no-such-host.invalid"}) {
            assertThat(DemoCredentials.loopback(host)).as(host).isFalse();
        }
    }
}
