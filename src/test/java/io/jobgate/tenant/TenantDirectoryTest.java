package io.jobgate.tenant;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The JMS producers of the tenants files: each broker user submits for exactly one tenant; a tenant's rules of where its
 * jobs run, read as written (and refused in one line when malformed).
 */
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

    static Path tenant(String rules) throws Exception {
        Path file = Files.createTempFile("tenants", ".yaml");
        Files.writeString(file, """
                tenants:
                  - id: eu
                    api_key_sha256: %s
                %s
                """.formatted("a".repeat(64), rules.indent(4).stripTrailing()));
        return file;
    }

    @Test
    void aTenantsRulesAreReadAndApplied() throws Exception {
        Tenant eu = TenantDirectory.load(List.of(tenant("providers: {allow: [openai, azure-openai], deny: [azure-openai]}\nfailover: false")))
                .byId("eu").orElseThrow();
        assertThat(eu.rules()).isEqualTo(new ProviderRules(java.util.Set.of("openai", "azure-openai"), java.util.Set.of("azure-openai"), false));
        assertThat(eu.whyNot("openai")).isNull();
        assertThat(eu.whyNot("azure-openai")).isEqualTo("tenant eu may not use it (providers.deny)");
        assertThat(eu.whyNot("replicate")).isEqualTo("tenant eu may not use it (not in providers.allow)");

        Tenant plain = TenantDirectory.load(List.of(tenant("display_name: Plain"))).byId("eu").orElseThrow();
        assertThat(plain.rules()).isEqualTo(ProviderRules.NONE);
        assertThat(plain.whyNot("replicate")).isNull();
    }

    @Test
    void aMalformedRuleRefusesTheStartInOneLine() throws Exception {
        assertThatThrownBy(() -> TenantDirectory.load(List.of(tenant("providers: {only: [openai]}"))))
                .isInstanceOf(io.jobgate.common.StartRefused.class).hasMessageContaining("tenant eu").hasMessageContaining("'only'");
        assertThatThrownBy(() -> TenantDirectory.load(List.of(tenant("failover: sometimes"))))
                .isInstanceOf(io.jobgate.common.StartRefused.class).hasMessageContaining("failover must be true or false");
        assertThatThrownBy(() -> TenantDirectory.load(List.of(tenant("providers: {deny: openai}"))))
                .isInstanceOf(io.jobgate.common.StartRefused.class).hasMessageContaining("providers.deny must be a list");
    }
}
