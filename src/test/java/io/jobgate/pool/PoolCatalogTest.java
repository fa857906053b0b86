package io.jobgate.pool;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.jobgate.common.StartRefused;
import io.jobgate.infra.Settings;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Pools as their files declare them, against the shipped providers and the test ones: a good file read with its
 * defaults, and each bad one refusing the start in one line that names the pool and what is wrong.
 */
class PoolCatalogTest {

    static ProviderCatalog providers;

    @BeforeAll
    static void providers() throws Exception {
        // The shipped settings (the providers' files name some of them), as the gateway reads them.
        DefaultCamelContext context = new DefaultCamelContext();
        java.util.Properties settings = new java.util.Properties();
        try (var in = Files.newBufferedReader(Path.of("config/application.properties"))) {
            settings.load(in);
        }
        context.getPropertiesComponent().setInitialProperties(settings);
        providers = ProviderCatalog.load(List.of(Path.of("config/providers"), Path.of("src/test/resources/providers")),
                new Settings(context));
    }

    static PoolCatalog load(Path dir, String name, String text) throws Exception {
        Files.writeString(dir.resolve(name + ".properties"), text);
        return PoolCatalog.load(List.of(dir), providers);
    }

    @Test
    void readsMembersInOrderWithTheirWeightsAndMaxWaits(@TempDir Path dir) throws Exception {
        PoolCatalog pools = load(dir, "images", """
                kind = image
                members = openai, fakeimg , replicate
                weight.openai = 3
                weight.replicate = 0
                max-wait-seconds.fakeimg = 5
                """);
        assertThat(pools.find("images")).contains(new Pool("images", "image", List.of(
                new Pool.Member("openai", 3, Duration.ofSeconds(60)),
                new Pool.Member("fakeimg", 1, Duration.ofSeconds(5)),
                new Pool.Member("replicate", 0, Duration.ofSeconds(60)))));
        assertThat(pools.find("other")).isEmpty();
    }

    @Test
    void noDirectoryNoPool() throws Exception {
        assertThat(PoolCatalog.load(List.of(Path.of("config/pools")), providers).all()).isEmpty();
        assertThat(Files.exists(Path.of("config/pools"))).as("no pool is shipped").isFalse();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            an unknown provider           | kind = image\\nmembers = openai, nosuch                 | member 'nosuch' is not a configured provider
            a disabled provider           | kind = transcription\\nmembers = openai, azure-openai    | member 'azure-openai' is disabled
            a member of another kind      | kind = video\\nmembers = fal, openai                     | member 'openai' does not serve video jobs
            a weight below zero           | kind = image\\nmembers = openai\\nweight.openai = -1     | weight.openai must be a whole number of at least 0, was '-1'
            a weight that is not a number | kind = image\\nmembers = openai\\nweight.openai = much   | weight.openai must be a whole number of at least 0, was 'much'
            no member                     | kind = image\\nmembers =                                  | it has no member
            every weight zero             | kind = image\\nmembers = openai, fakeimg\\nweight.openai = 0\\nweight.fakeimg = 0 | every member's weight is 0
            an unknown kind               | kind = music\\nmembers = openai                          | kind must be one of image, transcription, summary, video
            a max-wait below zero         | kind = image\\nmembers = openai\\nmax-wait-seconds.openai = -5 | max-wait-seconds.openai must be a whole number of at least 0
            an entry for a non-member     | kind = image\\nmembers = openai\\nweight.fakeimg = 2      | unknown entry 'weight.fakeimg'
            a default that is no boolean  | kind = image\\nmembers = openai\\ndefault = yes          | default must be true or false, was 'yes'
            """)
    void refusesABadPoolInOneLine(String why, String text, String expected, @TempDir Path dir) {
        assertThatThrownBy(() -> load(dir, "bad", text.replace("\\n", "\n")))
                .isInstanceOf(StartRefused.class)
                .hasMessageStartingWith("pool bad (pools/bad.properties): ")
                .hasMessageContaining(expected)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }

    static io.jobgate.tenant.Tenant tenant(java.util.Set<String> allow, java.util.Set<String> deny) {
        return new io.jobgate.tenant.Tenant("eu", "EU", "a".repeat(64), 1, 1, 1, java.util.Map.of(),
                new io.jobgate.tenant.ProviderRules(allow, deny, true));
    }

    @Test
    void aTenantRuleNamingAnUnknownProviderOrLeavingAKindNoMemberRefusesTheStart(@TempDir Path dir) throws Exception {
        load(dir, "images", "kind = image\nmembers = openai, replicate\n");
        PoolCatalog pools = load(dir, "more-images", "kind = image\nmembers = fakeimg\n");
        assertThatThrownBy(() -> TenantPoolRules.check(List.of(tenant(java.util.Set.of(), java.util.Set.of("opneai"))), pools, providers))
                .isInstanceOf(StartRefused.class).hasMessage("tenant eu: providers.deny names 'opneai', which is not a configured provider;"
                        + " name one of jobgate.providers.dirs or drop it");
        assertThatThrownBy(() -> TenantPoolRules.check(List.of(tenant(java.util.Set.of("nosuch"), java.util.Set.of())), pools, providers))
                .isInstanceOf(StartRefused.class).hasMessageContaining("providers.allow names 'nosuch'");
        assertThatThrownBy(() -> TenantPoolRules.check(List.of(tenant(java.util.Set.of(), java.util.Set.of("openai", "replicate", "fakeimg"))),
                pools, providers)).isInstanceOf(StartRefused.class)
                .hasMessageContaining("tenant eu: a tenant rule that leaves image jobs no member")
                .hasMessageContaining("pool images (openai, replicate), pool more-images (fakeimg)");
        // One pool of the kind ruled out is not: the tenant's jobs may name the other (the one ruled out: pool_not_allowed).
        TenantPoolRules.check(List.of(tenant(java.util.Set.of(), java.util.Set.of("openai", "replicate"))), pools, providers);
        // A kind without pools is not checked: its jobs go to a provider the tenant may use, or are refused one by one.
        TenantPoolRules.check(List.of(tenant(java.util.Set.of("fakeimg"), java.util.Set.of())), pools, providers);
        TenantPoolRules.check(List.of(tenant(java.util.Set.of("gemini"), java.util.Set.of())), PoolCatalog.none(), providers);
    }

    @Test
    void aJobNamingNeitherTakesThePoolOfItsPresetElseItsKindsDefaultPoolElseNone(@TempDir Path dir) throws Exception {
        load(dir, "scans", "kind = image\nmembers = openai, fakeimg\npresets = invoice-scan\n");
        load(dir, "images", "kind = image\nmembers = replicate, openai\ndefault = true\n");
        PoolCatalog pools = load(dir, "talk", "kind = transcription\nmembers = openai\n");
        io.jobgate.preset.PresetCatalog presets = io.jobgate.preset.PresetCatalog.load(Path.of("config/presets"));
        pools.checkPresets(presets);

        assertThat(pools.forPreset(presets.resolve("invoice-scan", null))).map(Pool::name).contains("scans");
        assertThat(pools.forPreset(presets.resolve("invoice-clean", null))).map(Pool::name).contains("images");
        assertThat(pools.forPreset(presets.resolve("call-transcript", null))).as("pool talk is no default").isEmpty();
        assertThat(pools.find("scans").orElseThrow().presets()).containsExactly("invoice-scan");
        assertThat(pools.find("images").orElseThrow().kindDefault()).isTrue();
    }

    @Test
    void aPresetOfTwoPoolsTwoDefaultsOfAKindOrAPresetThatIsNoneOfTheKindsRefusesTheStart(@TempDir Path dir) throws Exception {
        load(dir, "scans", "kind = image\nmembers = openai\npresets = invoice-scan\ndefault = true\n");
        assertThatThrownBy(() -> load(dir, "more-scans", "kind = image\nmembers = fakeimg\npresets = invoice-clean, invoice-scan\n"))
                .isInstanceOf(StartRefused.class).hasMessage("pool scans (pools/scans.properties): presets names 'invoice-scan', which pool "
                        + "more-scans names too; a preset's jobs take one pool");
        Files.delete(dir.resolve("more-scans.properties"));
        assertThatThrownBy(() -> load(dir, "images", "kind = image\nmembers = fakeimg\ndefault = true\n"))
                .isInstanceOf(StartRefused.class).hasMessageContaining("default = true, as pool ")
                .hasMessageEndingWith("is for image jobs; a kind has one default pool");
        Files.delete(dir.resolve("images.properties"));

        io.jobgate.preset.PresetCatalog presets = io.jobgate.preset.PresetCatalog.load(Path.of("config/presets"));
        assertThatThrownBy(() -> load(dir, "typo", "kind = image\nmembers = fakeimg\npresets = invoice-scna\n").checkPresets(presets))
                .isInstanceOf(StartRefused.class).hasMessageStartingWith("pool typo (pools/typo.properties): presets names 'invoice-scna', "
                        + "which is not a preset (presets: ");
        Files.delete(dir.resolve("typo.properties"));
        assertThatThrownBy(() -> load(dir, "kinds", "kind = image\nmembers = fakeimg\npresets = call-transcript\n").checkPresets(presets))
                .isInstanceOf(StartRefused.class).hasMessage("pool kinds (pools/kinds.properties): presets names 'call-transcript', "
                        + "a preset of kind transcription; the pool serves image jobs");
    }
}
