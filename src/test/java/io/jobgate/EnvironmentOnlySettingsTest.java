package io.jobgate;

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.infra.Settings;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.preset.VideoOrder;
import io.jobgate.provider.AdapterSource;
import io.jobgate.provider.ProviderKeys;
import io.jobgate.support.EnvironmentProbe;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every documented setting can be given by the environment alone, whether or not its file names it
 * (issue 37). The walk reads the settings tables of docs/settings.md, docs/providers.md (the provider
 * entries and the shipped adapters' variables), docs/canary.md and docs/video.md; removes each entry from a
 * copy of its file; gives it by its environment variable only; and asks a gateway-configured JVM of its own
 * ({@link EnvironmentProbe}: a JVM cannot set its own environment) what it reads — the value, and for
 * provider entries the typed view their consumers use. No two documented settings share a variable.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EnvironmentOnlySettingsTest {

    /** The provider the walk gives every documented provider entry to, from an empty file. */
    static final String ENV_ONLY = "envonly";

    /** One question to the probe, the variable that answers it, and what it must read. */
    record Check(String question, String variable, String value) {
    }

    final List<Check> checks = new ArrayList<>();
    final Map<String, String> environment = new TreeMap<>();
    final Map<String, String> keyByVariable = new TreeMap<>();
    Path work;
    Properties answers;

    @BeforeAll
    void walkTheDocsAndAskAJvmGivenOnlyTheEnvironment() throws Exception {
        work = Files.createTempDirectory("jobgate-env-only");
        Path providers = Files.createDirectories(work.resolve("providers"));
        Files.createDirectories(work.resolve("config"));

        // The gateway's settings (docs/settings.md), each removed from the settings file.
        Set<String> gatewayKeys = new TreeSet<>();
        int n = 0;
        for (SettingsDocumentationTest.Row row : SettingsDocumentationTest.table()) {
            if (row.key().contains("<")) {
                continue; // jobgate.provider.<name>.*: the provider tables below
            }
            gatewayKeys.add(row.key());
            String value = row.key().equals("camel.server.port") ? "18181"
                    : row.key().startsWith("jobgate.providers.default.") ? "simulator" // the catalog checks it names a provider
                    : "env-" + (++n);
            expect((row.key().startsWith("camel.") ? "camel " : "gateway ") + row.key(), row.key(), value);
        }
        assertThat(gatewayKeys).as("the walk found the settings table").hasSizeGreaterThan(50)
                .contains("jobgate.canary.period-ms", "camel.server.port", "jobgate.db.url", "jobgate.refunds.failed-percent");
        Files.write(work.resolve("config/application.properties"), Files.readAllLines(Path.of("config/application.properties")).stream()
                .filter(line -> !gatewayKeys.contains(entryOf(line))).toList());

        // Every documented provider entry, given to a provider whose file names none of them.
        Set<String> providerKeys = new TreeSet<>();
        providerKeys.addAll(tableKeys("docs/providers.md", "**Settings** (`config/providers/<name>.properties`"));
        providerKeys.addAll(tableKeys("docs/canary.md", "Settings in `config/providers/<name>.properties`"));
        providerKeys.addAll(tableKeys("docs/video.md", "## Settings of a video provider"));
        Set<String> entries = new TreeSet<>();
        providerKeys.forEach(key -> entries.addAll(expand(key)));
        assertThat(entries).as("the walk found the provider tables")
                .contains("kinds", "canary.share", "canary.min-sample", "size.portrait.1080p", "error.429.insufficient_quota",
                        "price.predict_seconds-micros", "base-url", "duration-tolerance-ms");
        Files.writeString(providers.resolve(ENV_ONLY + ".properties"), "# Every entry of this provider comes from the environment.\n");
        for (String key : entries) {
            expect("provider " + ENV_ONLY + " " + key, "jobgate.provider." + ENV_ONLY + "." + key, validValue(key));
        }
        // ... and read as their consumers read them.
        Map<String, String> typed = new LinkedHashMap<>();
        typed.put("kinds", "image,transcription,video");
        typed.put("max-concurrency", "7");
        typed.put("call-deadline-ms", "4321");
        typed.put("idempotent-submit", "true");
        typed.put("rate-limit-backoff-seconds", "42");
        typed.put("revision", "envonly-7");
        typed.put("revision.image", "envonly-image-3");
        typed.put("size.square", "1024x1024");
        typed.put("size.portrait.1080p", "1080x1920");
        typed.put("price.image-micros", "1234");
        typed.put("operations", "true");
        typed.put("error.429.insufficient_quota", "auth");
        typed.put("canary.share", "50.0");
        typed.put("canary.min-sample", "8");
        typed.put("canary.window-seconds", "120");
        typed.put("canary.max-p95-ms", "900");
        typed.forEach((what, value) -> checks.add(new Check("typed " + ENV_ONLY + " " + what,
                Settings.environmentName("jobgate.provider." + ENV_ONLY + "." + what), value)));

        // The shipped adapters' variables (docs/providers.md, "Shipped adapters"), each entry removed from its file.
        Map<String, Set<String>> removed = new TreeMap<>();
        for (Map.Entry<String, List<String>> adapter : shippedVariables().entrySet()) {
            String name = adapter.getKey();
            Set<String> vocabulary = vocabulary(name);
            for (String variable : adapter.getValue()) {
                List<String> keys = vocabulary.stream()
                        .filter(k -> Settings.environmentName("jobgate.provider." + name + "." + k).equals(variable)).toList();
                assertThat(keys).as(variable + " names exactly one entry of provider " + name).hasSize(1);
                String key = keys.get(0);
                removed.computeIfAbsent(name, k -> new TreeSet<>()).add(key);
                String value = validShippedValue(key, name);
                expect("provider " + name + " " + key, "jobgate.provider." + name + "." + key, value);
                // enabled is read through the same properties as the route's placeholders (RouteStartRules), not by the file.
                if (key.equals("enabled")
                        || AdapterSource.of(name, Files.readString(Path.of("routes/providers/" + name + ".camel.yaml"))).settingKeys().contains(key)) {
                    expect("placeholder " + name + " " + key, "jobgate.provider." + name + "." + key, value);
                }
            }
        }
        assertThat(removed).as("the walk found the shipped adapters' variables").containsKeys("openai", "replicate", "fal", "azure-openai", "amazon-transcribe", "gemini");
        // The issue's case: a canary of openai given by the environment alone.
        assertThat(Files.readString(Path.of("config/providers/openai.properties"))).doesNotContain(".canary.");
        give("jobgate.provider.openai.canary.share", "50");
        checks.add(new Check("typed openai canary.share", "JOBGATE_PROVIDER_OPENAI_CANARY_SHARE", "50.0"));
        expect("typed openai canary.min-sample", "jobgate.provider.openai.canary.min-sample", "8");
        expect("provider openai canary.label", "jobgate.provider.openai.canary.label", "openai-images-next");
        List<String> shipped;
        try (java.util.stream.Stream<Path> files = Files.list(Path.of("config/providers"))) {
            shipped = files.map(f -> f.getFileName().toString()).filter(f -> f.endsWith(".properties"))
                    .map(f -> f.substring(0, f.length() - ".properties".length())).sorted().toList();
        }
        assertThat(shipped).contains("openai", "replicate", "fal", "simulator", "azure-openai", "gemini");
        for (String name : shipped) {
            Set<String> gone = removed.getOrDefault(name, Set.of());
            Files.write(providers.resolve(name + ".properties"), Files.readAllLines(Path.of("config/providers/" + name + ".properties"))
                    .stream().filter(line -> !gone.contains(entryOf(line).replace("jobgate.provider." + name + ".", ""))).toList());
        }

        answers = ask(providers);
    }

    /** A setting given by {@code variable} ({@code key}'s) alone, and the question that must read {@code value}. */
    void expect(String question, String key, String value) {
        checks.add(new Check(question, give(key, value), value));
    }

    /** {@code key} given by its variable alone; no other setting may have that variable. */
    String give(String key, String value) {
        String variable = Settings.environmentName(key);
        String other = keyByVariable.putIfAbsent(variable, key);
        assertThat(other == null || other.equals(key)).as(other + " and " + key + " share " + variable).isTrue();
        environment.put(variable, value);
        return variable;
    }

    @Test
    void everyDocumentedSettingIsSeenWhenOnlyTheEnvironmentGivesIt() {
        Map<String, String> wrong = new TreeMap<>();
        for (Check check : checks) {
            String read = answers.getProperty(check.question());
            if (!check.value().equals(read)) {
                wrong.put(check.question(), check.variable() + "=" + check.value() + " read as " + read);
            }
        }
        assertThat(wrong).isEmpty();
        assertThat(checks).hasSizeGreaterThan(150);
    }

    @Test
    void noTwoDocumentedProviderEntriesShareAVariable() {
        Map<String, String> byVariable = new TreeMap<>();
        for (String key : ProviderKeys.known()) {
            String other = byVariable.put(Settings.environmentName("jobgate.provider.x." + key), key);
            assertThat(other).as(key).isNull();
        }
    }

    /** The probe, in a JVM of its own: the working directory above, the environment above and nothing else of ours. */
    Properties ask(Path providers) throws Exception {
        Path questions = work.resolve("questions.txt");
        Path answered = work.resolve("answers.properties");
        Files.write(questions, checks.stream().map(Check::question).distinct().toList());
        String classpath = String.join(java.io.File.pathSeparator, Path.of("target/test-classes").toAbsolutePath().toString(),
                Path.of("target/classes").toAbsolutePath().toString(), System.getProperty("java.class.path"));
        ProcessBuilder probe = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", classpath, EnvironmentProbe.class.getName(), questions.toString(), answered.toString(), providers.toString(),
                Path.of("routes/providers").toAbsolutePath().toString())
                .directory(work.toFile()).redirectErrorStream(true).redirectOutput(work.resolve("probe.log").toFile());
        probe.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_") || k.startsWith("CAMEL_"));
        probe.environment().putAll(environment);
        Process p = probe.start();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("the probe answered").isTrue();
        assertThat(p.exitValue()).as(Files.readString(work.resolve("probe.log"))).isZero();
        Properties read = new Properties();
        try (Reader r = Files.newBufferedReader(answered)) {
            read.load(r);
        }
        return read;
    }

    /** The key of a properties line, or "" for a comment or blank line. */
    static String entryOf(String line) {
        String t = line.trim();
        if (t.isEmpty() || t.startsWith("#") || t.startsWith("!")) {
            return "";
        }
        int end = 0;
        while (end < t.length() && t.charAt(end) != '=' && t.charAt(end) != ':' && !Character.isWhitespace(t.charAt(end))) {
            end++;
        }
        return t.substring(0, end);
    }

    /** The keys in the first column of the first table after {@code anchor} ({@code `a`, `.b`}: a and its sibling b). */
    static Set<String> tableKeys(String doc, String anchor) throws Exception {
        String text = Files.readString(Path.of(doc));
        int at = text.indexOf(anchor);
        assertThat(at).as(anchor + " in " + doc).isNotNegative();
        Set<String> keys = new TreeSet<>();
        boolean inTable = false;
        for (String line : text.substring(at).lines().toList()) {
            if (line.startsWith("|")) {
                inTable = true;
                if (line.startsWith("| `")) {
                    String first = null;
                    for (String item : SettingsDocumentationTest.items(line.split("\\|")[1])) {
                        if (!item.startsWith("`")) {
                            continue; // "…": whatever the adapter reads (the shipped adapters' variables below)
                        }
                        String key = item.replace("`", "");
                        if (key.startsWith(".") && first != null) {
                            key = first.substring(0, first.lastIndexOf('.')) + key;
                        }
                        first = first == null ? key : first;
                        keys.add(key);
                    }
                }
            } else if (inTable) {
                break;
            }
        }
        return keys;
    }

    static final Pattern PLACEHOLDER = Pattern.compile("<([a-z]+)>");

    /** A documented key with its {@code <parts>} spelled out with every value they take. */
    static List<String> expand(String key) {
        Matcher m = PLACEHOLDER.matcher(key);
        if (!m.find()) {
            return List.of(key);
        }
        List<String> values = switch (m.group(1)) {
            case "kind" -> ProviderKeys.KINDS;
            case "class" -> PresetCatalog.ASPECT_CLASSES;
            case "resolution" -> VideoOrder.RESOLUTIONS;
            case "status" -> List.of("429");
            case "code" -> List.of("insufficient_quota");
            case "unit" -> List.of("predict_seconds");
            default -> throw new IllegalStateException("no values for <" + m.group(1) + "> in " + key);
        };
        List<String> all = new ArrayList<>();
        for (String value : values) {
            all.addAll(expand(key.substring(0, m.start()) + value + key.substring(m.end())));
        }
        return all;
    }

    /** A value the catalog accepts for a provider entry (it validates prices, sizes, limits and the error table at load). */
    static String validValue(String key) {
        if (key.startsWith("price.")) {
            return "1234";
        }
        if (key.startsWith("size.")) {
            String[] parts = key.split("\\.");
            if (parts.length == 2) {
                return switch (parts[1]) {
                    case "landscape" -> "1536x1024";
                    case "portrait" -> "1024x1536";
                    default -> "1024x1024";
                };
            }
            int shortSide = VideoOrder.shortSide(parts[2]);
            int longSide = shortSide * 16 / 9;
            return switch (parts[1]) {
                case "landscape" -> longSide + "x" + shortSide;
                case "portrait" -> shortSide + "x" + longSide;
                default -> shortSide + "x" + shortSide;
            };
        }
        if (key.startsWith("revision.")) {
            return "envonly-" + key.substring("revision.".length()) + "-3";
        }
        if (key.startsWith("error.")) {
            return "auth: quota exhausted";
        }
        return switch (key) {
            case "kinds" -> "image,transcription,video";
            case "enabled" -> "true";
            case "revision" -> "envonly-7";
            case "max-concurrency" -> "7";
            case "call-deadline-ms" -> "4321";
            case "idempotent-submit" -> "true";
            case "rate-limit-backoff-seconds" -> "42";
            case "duration-tolerance-ms" -> "250";
            case "max-video-output-bytes" -> "1000000";
            case "max-input-bytes" -> "26214400";
            case "operations" -> "submit,lookup,webhook";
            case "error-code-fields" -> "error.code";
            case "readiness-url" -> "http://127.0.0.1:9/ready";
            case "readiness-authorization" -> "Bearer env-token";
            case "webhook-secret" -> "whsec_ZW52LW9ubHk=";
            case "webhook-scheme" -> "fal-ed25519";
            case "webhook-jwks-url" -> "http://127.0.0.1:9/jwks.json";
            case "worker-key-sha256" -> "0".repeat(64);
            case "worker-absent-seconds" -> "90";
            case "base-url" -> "http://127.0.0.1:9/env";
            case "api-key" -> "env-key";
            case "aws-region" -> "eu-central-1";
            case "aws-access-key-id" -> "AKIDENVONLY";
            case "aws-secret-access-key" -> "env-aws-secret";
            case "aws-session-token" -> "env-aws-session";
            case "aws-credentials" -> "default-chain";
            case "canary.share" -> "50";
            case "canary.label" -> "envonly-next";
            case "canary.window-seconds" -> "120";
            case "canary.min-sample" -> "8";
            case "canary.max-error-rate" -> "0.3";
            case "canary.max-p95-ms" -> "900";
            case "canary.max-invalid-output-rate" -> "0.1";
            case "canary.min-evaluated" -> "4";
            case "canary.min-field-accuracy" -> "0.7";
            case "canary.min-totals-correct" -> "0.6";
            default -> throw new IllegalStateException("the walk has no value for the documented provider entry '" + key
                    + "': add one here");
        };
    }

    static String validShippedValue(String key, String provider) {
        return switch (key) {
            case "base-url" -> "http://127.0.0.1:9/" + provider;
            case "generate-audio" -> "true";
            default -> "env-" + provider + "-" + key;
        };
    }

    /** The shipped adapters' variables: provider → JOBGATE_PROVIDER_* names ({@code _BASE_URL}: the first one's provider prefix). */
    static Map<String, List<String>> shippedVariables() throws Exception {
        String text = Files.readString(Path.of("docs/providers.md"));
        int at = text.indexOf("Shipped adapters:");
        assertThat(at).isNotNegative();
        Map<String, List<String>> all = new TreeMap<>();
        boolean inTable = false;
        for (String line : text.substring(at).lines().skip(1).toList()) {
            if (!line.startsWith("|")) {
                if (inTable) {
                    break;
                }
                continue;
            }
            inTable = true;
            String[] cells = line.split("\\|");
            if (!cells[1].trim().startsWith("`")) {
                continue;
            }
            String name = cells[1].trim().replace("`", "");
            String prefix = "JOBGATE_PROVIDER_" + Settings.environmentName(name) + "_";
            List<String> variables = new ArrayList<>();
            Matcher m = Pattern.compile("`(JOBGATE_PROVIDER_[A-Z0-9_]+|_[A-Z0-9_]+)`").matcher(cells[cells.length - 1]);
            while (m.find()) {
                variables.add(m.group(1).startsWith("_") ? prefix + m.group(1).substring(1) : m.group(1));
            }
            if (!variables.isEmpty()) {
                all.put(name, variables);
            }
        }
        return all;
    }

    /** Every entry provider {@code name} may have: what the gateway knows, its file's, its adapter route's. */
    static Set<String> vocabulary(String name) throws Exception {
        Set<String> keys = new TreeSet<>(ProviderKeys.known());
        Properties file = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/providers/" + name + ".properties"))) {
            file.load(r);
        }
        file.stringPropertyNames().forEach(k -> keys.add(k.substring(("jobgate.provider." + name + ".").length())));
        keys.addAll(AdapterSource.of(name, Files.readString(Path.of("routes/providers/" + name + ".camel.yaml"))).settingKeys());
        return keys;
    }
}
