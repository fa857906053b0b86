package io.jobgate.tenant;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The JMS producers of the tenants files: each broker user submits for exactly one tenant. */
class TenantDirectoryTest {

    @Test
    void theShippedProducersMapToTheirOwnTenantOnly() throws Exception {
        TenantDirectory tenants = TenantDirectory.load(List.of(Path.of("config/tenants.yaml")));

        assertThat(tenants.byBrokerUser("globex-legacy")).map(Tenant::id).contains("globex");
        assertThat(tenants.byBrokerUser("acme-legacy")).map(Tenant::id).contains("acme");
        assertThat(tenants.byBrokerUser("jobgate")).isEmpty();
        assertThat(tenants.byBrokerUser(null)).isEmpty();
    }

    @Test
    void aBrokerUserListedUnderTwoTenantsStopsTheGatewayAtStart() throws Exception {
        Path file = Files.createTempFile("tenants", ".yaml");
        Files.writeString(file, """
                tenants:
                  - id: one
                    api_key_sha256: %s
                    jms_producers: [{user: shared, password_sha256: %s}]
                  - id: two
                    api_key_sha256: %s
                    jms_producers: [{user: shared}]
                """.formatted("a".repeat(64), "b".repeat(64), "c".repeat(64)));

        assertThatThrownBy(() -> TenantDirectory.load(List.of(file)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'shared'").hasMessageContaining("one").hasMessageContaining("two");
    }
}
