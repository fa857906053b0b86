package io.jobgate;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.BeanDescription;
import com.fasterxml.jackson.databind.DeserializationConfig;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.deser.BeanDeserializerBuilder;
import com.fasterxml.jackson.databind.deser.BeanDeserializerModifier;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.autoscaling.v2.MetricSpec;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.jobgate.infra.Settings;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * deploy/kubernetes (docs/kubernetes.md) as CI sees it: the base and every overlay rendered by a real
 * kustomize (v4 or newer: {@code kustomize build}, or kubectl's built-in {@code kubectl kustomize}; without
 * one the class skips, and {@code JOBGATE_TEST_REQUIRE_KUSTOMIZE=true}, set by .ci/run, makes that a
 * failure), every object of the render checked against the Kubernetes API: its schemas (required fields,
 * enums, types, quantities: src/test/kubernetes), the object model with unknown fields and wrongly typed
 * values refused (fabric8), the API server's own rules the schemas leave out; then what running jobgate
 * needs: probes on /observe/health with a liveness that no dependency outage trips, a stop longer than the
 * calls' hand-back, a PodDisruptionBudget per Deployment, no secret value in the files, every environment
 * variable a setting the gateway knows, the workers scaled on queue age.
 */
class KubernetesManifestsTest {

    static final Path KUBERNETES = Path.of("deploy/kubernetes");
    static final Path DOCS = Path.of("docs/kubernetes.md");
    /** The schema check (validate.mjs) and its npm package (package.json, installed by npm ci). */
    static final Path SCHEMAS = Path.of("src/test/kubernetes");
    static final String QUEUE_AGE = "jobgate_queue_oldest_age_seconds";
    static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{\\s*((?:jobgate|camel)\\.[A-Za-z0-9.\\-]+)\\s*(?::[^}]*)?}}");
    /** Names that carry a secret: set from a Secret, never as a literal or in a ConfigMap. */
    static final Pattern SECRET_NAME = Pattern.compile(".*(PASSWORD|SECRET|TOKEN|API_KEY|ACCESS_KEY|SHA256).*");

    /** YAML with duplicate keys refused (kubectl refuses them; a plain parser keeps the last one). */
    static final YAMLMapper YAML = new YAMLMapper(YAMLFactory.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build());

    /** The Kubernetes kinds these manifests may hold, by apiVersion/kind, with their model class. */
    static final Map<String, Class<? extends HasMetadata>> KINDS = Map.of(
            "v1/ConfigMap", ConfigMap.class,
            "v1/Secret", Secret.class,
            "v1/Service", Service.class,
            "v1/ServiceAccount", ServiceAccount.class,
            "apps/v1/Deployment", Deployment.class,
            "policy/v1/PodDisruptionBudget", PodDisruptionBudget.class,
            "autoscaling/v2/HorizontalPodAutoscaler", HorizontalPodAutoscaler.class);

    /** The kustomization folders (the base, then each overlay) with the objects kustomize rendered. */
    static final Map<Path, List<ObjectNode>> RENDERS = new LinkedHashMap<>();
    /** What kustomize said on stderr while rendering each folder (its warnings). */
    static final Map<Path, String> WARNINGS = new LinkedHashMap<>();

    @BeforeAll
    static void render() throws IOException {
        RENDERS.clear();
        WARNINGS.clear();
        StringBuilder why = new StringBuilder();
        Optional<List<String>> kustomize = kustomize(why);
        if (kustomize.isEmpty()) {
            assertThat("true".equalsIgnoreCase(System.getenv("JOBGATE_TEST_REQUIRE_KUSTOMIZE")))
                    .as("JOBGATE_TEST_REQUIRE_KUSTOMIZE is set but no usable kustomize: " + why).isFalse();
            Assumptions.abort("deploy/kubernetes is rendered by a real kustomize, and none is here (" + why
                    + "): install kubectl 1.21+ or kustomize v4+");
        }
        for (Path dir : kustomizations()) {
            List<String> line = new ArrayList<>(kustomize.get());
            line.add(dir.toString());
            Path out = Files.createTempFile("kustomize", ".yaml");
            try {
                WARNINGS.put(dir, run(line, out, null));
                RENDERS.put(dir, documents(out));
            } finally {
                Files.deleteIfExists(out);
            }
        }
    }

    static List<Path> kustomizations() throws IOException {
        List<Path> dirs = new ArrayList<>(List.of(KUBERNETES.resolve("base")));
        dirs.addAll(overlays());
        return dirs;
    }

    static List<Path> overlays() throws IOException {
        try (Stream<Path> s = Files.list(KUBERNETES.resolve("overlays"))) {
            return s.filter(d -> Files.exists(d.resolve("kustomization.yaml"))).sorted().toList();
        }
    }

    // --- kustomize --------------------------------------------------------------------------------

    /**
     * A kustomize that can render these kustomizations (v4 or newer: {@code resources} naming folders,
     * {@code patches}), as the command line before the folder: {@code kustomize build} or
     * {@code kubectl kustomize}. Empty when neither is installed; {@code why} says what was found.
     */
    static Optional<List<String>> kustomize(StringBuilder why) {
        if (onPath("kustomize")) {
            String version = output(List.of("kustomize", "version"));
            Matcher m = Pattern.compile("v(\\d+)\\.\\d+").matcher(version);
            if (m.find() && Integer.parseInt(m.group(1)) >= 4) {
                return Optional.of(List.of("kustomize", "build"));
            }
            why.append("kustomize says its version is '").append(version.trim()).append("' (v4 or newer needed); ");
        }
        if (onPath("kubectl")) {
            String version = output(List.of("kubectl", "version", "--client"));
            Matcher m = Pattern.compile("Kustomize Version: v(\\d+)").matcher(version);
            if (m.find() && Integer.parseInt(m.group(1)) >= 4) {
                return Optional.of(List.of("kubectl", "kustomize"));
            }
            why.append("kubectl's kustomize is too old (").append(version.lines().findFirst().orElse("?"))
                    .append("; Debian's kubernetes-client 1.20 has kustomize v2.0.3, which lacks folders in resources and patches); ");
        }
        if (why.isEmpty()) {
            why.append("neither kustomize nor kubectl is on the PATH");
        }
        return Optional.empty();
    }

    @Test
    void kustomizeRendersEveryKustomizationWithoutADeprecationWarning() {
        assertThat(RENDERS.keySet()).as("the base and at least one overlay").hasSizeGreaterThanOrEqualTo(2);
        RENDERS.forEach((dir, nodes) -> {
            assertThat(nodes).as(dir + " renders objects").isNotEmpty();
            assertThat(nodes.stream().map(KubernetesManifestsTest::id).distinct().count()).as(dir + ": no object twice")
                    .isEqualTo(nodes.size());
            assertThat(WARNINGS.get(dir).toLowerCase(Locale.ROOT)).as(dir + ": kustomize warns of nothing deprecated")
                    .doesNotContain("deprecated");
        });
        // The overlay is what it says: its namespace and its image on every object kustomize rendered.
        assertThat(production()).allSatisfy(o -> assertThat(o.at("/metadata/namespace").asText()).isEqualTo("jobgate"));
    }

    /** The non-empty YAML documents of a file. */
    static List<ObjectNode> documents(Path file) throws IOException {
        List<ObjectNode> docs = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(file.toFile())) {
            while (it.hasNext()) {
                JsonNode doc = it.next();
                if (doc instanceof ObjectNode o && !o.isEmpty()) {
                    docs.add(o);
                } else if (doc != null && !doc.isNull() && !doc.isMissingNode() && !doc.isEmpty()) {
                    throw new IllegalStateException(file + ": a document that is not an object: " + doc);
                }
            }
        }
        return docs;
    }

    /** kind/namespace/name of an object: its identity in a render. */
    static String id(JsonNode o) {
        JsonNode meta = o.path("metadata");
        return o.path("kind").asText() + "/" + meta.path("namespace").asText("") + "/" + meta.path("name").asText();
    }

    /** What a command printed, or "" when it failed. */
    static String output(List<String> command) {
        try {
            Path out = Files.createTempFile("command", ".txt");
            try {
                run(command, out, null);
                return Files.readString(out, StandardCharsets.UTF_8);
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException | IllegalStateException e) {
            return "";
        }
    }

    /** Runs a command with {@code input} on its stdin, its stdout into a file; returns its stderr. */
    static String run(List<String> command, Path stdout, byte[] input) throws IOException {
        Path stderr = Files.createTempFile("command", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
            try (OutputStream in = p.getOutputStream()) {
                if (input != null) {
                    in.write(input);
                }
            }
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(command + " did not finish within 120 s");
            }
            String err = Files.readString(stderr, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IllegalStateException(command + " exited with " + p.exitValue() + ": " + err);
            }
            return err;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(command + " interrupted", e);
        } finally {
            Files.deleteIfExists(stderr);
        }
    }

    static boolean onPath(String command) {
        String path = System.getenv("PATH");
        return path != null && java.util.Arrays.stream(path.split(File.pathSeparator))
                .anyMatch(dir -> Files.isExecutable(Path.of(dir, command)));
    }

    // --- the Kubernetes API's schema -------------------------------------------------------------

    /**
     * A mapper that loads into fabric8's model as the API server would accept: fabric8's classes catch
     * every unknown field in an {@code additionalProperties} map (a {@code @JsonAnySetter}), so
     * FAIL_ON_UNKNOWN_PROPERTIES alone lets a misspelled field through; here the any-setter is taken
     * away. A number or boolean where the API wants a string (an env value, ConfigMap data) and a
     * string where it wants a number fail too, as they do for kubectl. The OpenAPI schemas below leave
     * objects open to unknown fields (kubectl's strict field validation is what refuses them), hence
     * this model beside them.
     */
    static ObjectMapper strictMapper() {
        ObjectMapper mapper = new ObjectMapper();
        mapper.enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
        mapper.enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
        mapper.coercionConfigFor(LogicalType.Textual)
                .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        for (LogicalType type : new LogicalType[] {LogicalType.Integer, LogicalType.Float, LogicalType.Boolean}) {
            mapper.coercionConfigFor(type).setCoercion(CoercionInputShape.String, CoercionAction.Fail);
        }
        SimpleModule strict = new SimpleModule("unknown-fields-fail");
        strict.setDeserializerModifier(new BeanDeserializerModifier() {
            @Override
            public BeanDeserializerBuilder updateBuilder(DeserializationConfig config, BeanDescription description,
                    BeanDeserializerBuilder builder) {
                if (description.getBeanClass().getName().startsWith("io.fabric8.kubernetes.api.model")) {
                    builder.setAnySetter(null);
                    builder.setIgnoreUnknownProperties(false);
                }
                return builder;
            }
        });
        mapper.registerModule(strict);
        return mapper;
    }

    static final ObjectMapper STRICT = strictMapper();

    /** One object of a render in the Kubernetes model; an unknown kind, field or type fails. */
    static HasMetadata load(JsonNode node) {
        String kind = node.path("apiVersion").asText() + "/" + node.path("kind").asText();
        Class<? extends HasMetadata> type = KINDS.get(kind);
        if (type == null) {
            throw new IllegalArgumentException(id(node) + ": " + kind + " is not a kind this test knows "
                    + "(add its fabric8 model to KINDS and pom.xml)");
        }
        try {
            return STRICT.treeToValue(node, type);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalArgumentException(id(node) + " does not fit the Kubernetes API's " + kind + ": "
                    + e.getOriginalMessage() + " at " + path(e), e);
        }
    }

    /** Where in the object a mapping failed, as a field path: spec.template.spec.containers[0].readinesProbe. */
    static String path(IOException e) {
        if (!(e instanceof com.fasterxml.jackson.databind.JsonMappingException m)) {
            return "?";
        }
        StringBuilder path = new StringBuilder();
        for (var ref : m.getPath()) {
            if (ref.getFieldName() != null) {
                path.append(path.isEmpty() ? "" : ".").append(ref.getFieldName());
            } else if (ref.getIndex() >= 0) {
                path.append('[').append(ref.getIndex()).append(']');
            }
        }
        return path.toString();
    }

    static List<HasMetadata> loadAll(List<ObjectNode> nodes) {
        return nodes.stream().map(KubernetesManifestsTest::load).toList();
    }

    static <T extends HasMetadata> List<T> all(List<HasMetadata> objects, Class<T> type) {
        return objects.stream().filter(type::isInstance).map(type::cast).toList();
    }

    /**
     * What the Kubernetes API would refuse in each object, in order: its schema (src/test/kubernetes's
     * validate.mjs: kubernetes-models, generated from Kubernetes' OpenAPI documents, so each `required`
     * list, enum, type and format, a quantity by Kubernetes' grammar), its model (fabric8, above:
     * unknown fields, wrong types) and {@link #serverRules}. An empty list for an object that fits.
     */
    static List<List<String>> apiProblems(List<ObjectNode> nodes) {
        List<List<String>> problems = new ArrayList<>();
        List<List<String>> schema = schemaProblems(nodes);
        for (int i = 0; i < nodes.size(); i++) {
            List<String> p = new ArrayList<>(schema.get(i));
            try {
                load(nodes.get(i));
            } catch (IllegalArgumentException e) {
                p.add(e.getMessage());
            }
            p.addAll(serverRules(nodes.get(i)));
            problems.add(p);
        }
        return problems;
    }

    static List<String> apiProblems(ObjectNode node) {
        return apiProblems(List.of(node)).get(0);
    }

    /** The schema check: node runs validate.mjs, which prints each object's problems. */
    static List<List<String>> schemaProblems(List<ObjectNode> nodes) {
        if (!onPath("node") || !Files.isDirectory(SCHEMAS.resolve("node_modules/kubernetes-models"))) {
            String missing = !onPath("node") ? "node is not on the PATH"
                    : SCHEMAS.resolve("node_modules") + " is not installed (npm ci --prefix " + SCHEMAS + ")";
            assertThat("true".equalsIgnoreCase(System.getenv("JOBGATE_TEST_REQUIRE_KUBERNETES_SCHEMAS")))
                    .as("JOBGATE_TEST_REQUIRE_KUBERNETES_SCHEMAS is set, but " + missing).isFalse();
            Assumptions.abort("no Kubernetes schemas to check against: " + missing);
        }
        try {
            Path out = Files.createTempFile("schemas", ".json");
            try {
                run(List.of("node", SCHEMAS.resolve("validate.mjs").toString()), out, STRICT.writeValueAsBytes(nodes));
                List<List<String>> problems = new ArrayList<>();
                for (JsonNode object : STRICT.readTree(out.toFile())) {
                    List<String> p = new ArrayList<>();
                    object.forEach(m -> p.add(m.asText()));
                    problems.add(p);
                }
                assertThat(problems).as("validate.mjs answers for every object").hasSize(nodes.size());
                return problems;
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The API server's own validation where the OpenAPI documents say less. A container's image: the
     * schema leaves it optional (so that tools may fill it in a workload's template), but the API server
     * requires it of every container of a pod or pod template (ValidatePodSpec), a Deployment's too.
     */
    static List<String> serverRules(JsonNode node) {
        List<String> problems = new ArrayList<>();
        JsonNode pod = node.path("spec").path("template").path("spec");
        for (String list : new String[] {"initContainers", "containers"}) {
            for (int i = 0; i < pod.path(list).size(); i++) {
                if (pod.path(list).get(i).path("image").asText("").isBlank()) {
                    problems.add(id(node) + ": spec.template.spec." + list + "[" + i + "].image: required by the API server");
                }
            }
        }
        return problems;
    }

    @Test
    void everyObjectOfEveryRenderFitsTheKubernetesApi() {
        assertThat(RENDERS.keySet()).as("the base and at least one overlay").hasSizeGreaterThanOrEqualTo(2);
        Map<String, List<String>> problems = new TreeMap<>();
        RENDERS.forEach((dir, nodes) -> {
            List<List<String>> found = apiProblems(nodes);
            for (int i = 0; i < nodes.size(); i++) {
                if (!found.get(i).isEmpty()) {
                    problems.put(dir + " " + id(nodes.get(i)), found.get(i));
                }
            }
        });
        assertThat(problems).isEmpty();
    }

    @Test
    void aMissingRequiredFieldABadValueOrABadQuantityIsRefused() {
        ObjectNode api = deployment(production(), "jobgate-api");
        ObjectNode misspelledPolicy = api.deepCopy();
        container(misspelledPolicy).put("imagePullPolicy", "Alwayz");
        ObjectNode noImage = api.deepCopy();
        container(noImage).remove("image");
        ObjectNode gigabytes = api.deepCopy();
        ((ObjectNode) container(gigabytes).at("/resources/requests")).put("memory", "1GB");
        ObjectNode lots = api.deepCopy();
        ((ObjectNode) container(lots).at("/resources/requests")).put("cpu", "lots");
        ObjectNode hours = api.deepCopy(); // an SI prefix Kubernetes does not take (h, hecto)
        ((ObjectNode) container(hours).at("/resources/requests")).put("cpu", "5h");
        ObjectNode noSelector = api.deepCopy();
        ((ObjectNode) noSelector.get("spec")).remove("selector");
        ObjectNode noContainerName = api.deepCopy();
        container(noContainerName).remove("name");
        ObjectNode badProtocol = api.deepCopy();
        ((ObjectNode) container(badProtocol).at("/ports/0")).put("protocol", "HTTP");
        ObjectNode badRestartPolicy = api.deepCopy();
        ((ObjectNode) badRestartPolicy.at("/spec/template/spec")).put("restartPolicy", "Sometimes");
        ObjectNode badServiceType = service(production()).deepCopy();
        ((ObjectNode) badServiceType.get("spec")).put("type", "Balanced");
        ObjectNode quantities = api.deepCopy(); // what Kubernetes' grammar takes
        ((ObjectNode) container(quantities).at("/resources")).putObject("limits").put("cpu", "1.5").put("memory", "512Mi")
                .put("ephemeral-storage", "1e9").put("hugepages-2Mi", "+.5Ki").put("example.com/device", "2");

        List<ObjectNode> cases = List.of(api, misspelledPolicy, noImage, gigabytes, lots, hours, noSelector, noContainerName,
                badProtocol, badRestartPolicy, badServiceType, quantities);
        List<List<String>> problems = apiProblems(cases);
        String container = "spec.template.spec.containers[0]";
        assertThat(problems.get(0)).as("as shipped: fits").isEmpty();
        assertThat(problems.get(1)).containsExactly(container + ".imagePullPolicy: must be one of Always, IfNotPresent, Never");
        assertThat(problems.get(2)).containsExactly("Deployment/jobgate/jobgate-api: " + container + ".image: required by the API server");
        assertThat(problems.get(3)).containsExactly(container + ".resources.requests.memory: not a quantity");
        assertThat(problems.get(4)).containsExactly(container + ".resources.requests.cpu: not a quantity");
        assertThat(problems.get(5)).containsExactly(container + ".resources.requests.cpu: not a quantity");
        assertThat(problems.get(6)).containsExactly("spec: required field selector missing");
        assertThat(problems.get(7)).containsExactly(container + ": required field name missing");
        assertThat(problems.get(8)).containsExactly(container + ".ports[0].protocol: must be one of SCTP, TCP, UDP");
        assertThat(problems.get(9)).containsExactly("spec.template.spec.restartPolicy: must be one of Always, Never, OnFailure");
        assertThat(problems.get(10)).containsExactly("spec.type: must be one of ClusterIP, ExternalName, LoadBalancer, NodePort");
        assertThat(problems.get(11)).as("good quantities").isEmpty();
    }

    @Test
    void aMisspelledFieldOrAWronglyTypedValueIsRefused() {
        ObjectNode api = deployment(production(), "jobgate-api");
        load(api); // as shipped: fits

        ObjectNode misspelled = api.deepCopy();
        container(misspelled).set("readinesProbe", container(misspelled).remove("readinessProbe"));
        assertThatThrownBy(() -> load(misspelled)).hasMessageContaining("readinesProbe")
                .hasMessageContaining("spec.template.spec.containers");
        assertThat(apiProblems(misspelled)).anyMatch(p -> p.contains("readinesProbe"));
        ObjectNode podField = api.deepCopy();
        ((ObjectNode) podField.at("/spec/template/spec")).put("terminationGracePeriodSecond", 50);
        assertThatThrownBy(() -> load(podField)).hasMessageContaining("terminationGracePeriodSecond");
        ObjectNode topLevel = api.deepCopy();
        topLevel.set("metdata", topLevel.get("metadata"));
        assertThatThrownBy(() -> load(topLevel)).hasMessageContaining("metdata");

        // Why the mapper above takes fabric8's any-setter away: with FAIL_ON_UNKNOWN_PROPERTIES alone the
        // misspelled field is swallowed into additionalProperties and the object "loads".
        ObjectMapper lenient = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
        Container swallowed = lenient.convertValue(misspelled, Deployment.class).getSpec().getTemplate().getSpec().getContainers().get(0);
        assertThat(swallowed.getAdditionalProperties()).containsKey("readinesProbe");
        assertThat(swallowed.getReadinessProbe()).isNull();

        ObjectNode numberAsEnvValue = api.deepCopy();
        ((ObjectNode) container(numberAsEnvValue).get("env").get(0)).put("value", 8080);
        assertThatThrownBy(() -> load(numberAsEnvValue)).hasMessageContaining("env");
        ObjectNode stringAsReplicas = api.deepCopy();
        ((ObjectNode) stringAsReplicas.get("spec")).put("replicas", "3");
        assertThatThrownBy(() -> load(stringAsReplicas)).hasMessageContaining("replicas");
        ObjectNode booleanInConfigMap = configMap(production()).deepCopy();
        ((ObjectNode) booleanInConfigMap.get("data")).put("JOBGATE_SIMULATOR_ENABLED", false);
        assertThatThrownBy(() -> load(booleanInConfigMap)).hasMessageContaining("data");
        ObjectNode unknownKind = api.deepCopy();
        unknownKind.put("apiVersion", "apps/v1beta1");
        assertThatThrownBy(() -> load(unknownKind)).hasMessageContaining("not a kind this test knows");
    }

    // --- what running jobgate needs ----------------------------------------------------------------

    @Test
    void deploymentsProbeHealthAndStopLongerThanTheCallsHandBack() throws IOException {
        RENDERS.forEach((dir, nodes) -> assertThat(probeProblems(loadAll(nodes))).as(dir.toString()).isEmpty());
        // The same check refuses a liveness that counts PostgreSQL, and a stop shorter than the hand-back.
        ObjectNode api = deployment(production(), "jobgate-api").deepCopy();
        container(api).set("livenessProbe", container(api).get("readinessProbe").deepCopy());
        ((ObjectNode) api.at("/spec/template/spec")).put("terminationGracePeriodSeconds", 30);
        ((ObjectNode) container(api).at("/startupProbe/httpGet")).put("port", 9090);
        assertThat(probeProblems(List.of(load(api)))).anyMatch(p -> p.contains("liveness probe asks /observe/health/ready"))
                .anyMatch(p -> p.contains("liveness gives up after 30 s"))
                .anyMatch(p -> p.contains("startup probe's port 9090"))
                .anyMatch(p -> p.contains("terminationGracePeriodSeconds 30 < 45"));
    }

    /** The seconds a clean stop takes at most before the JVM exits (docs/operating.md, "Calls in flight"). */
    static int handBackSeconds() throws IOException {
        int shutdownTimeout = Integer.parseInt(settingsFile().getProperty("camel.main.shutdown-timeout").trim());
        Matcher drain = Pattern.compile("providerCalls\\.drain\\((?:java\\.time\\.)?Duration\\.ofSeconds\\((\\d+)\\)\\)")
                .matcher(Files.readString(Path.of("src/main/java/io/jobgate/worker/WorkerWiring.java")));
        assertThat(drain.find()).as("WorkerWiring drains the calls in flight for a number of seconds").isTrue();
        return shutdownTimeout + Integer.parseInt(drain.group(1));
    }

    static List<String> probeProblems(List<HasMetadata> objects) {
        List<String> problems = new ArrayList<>();
        int handBack;
        int port;
        try {
            handBack = handBackSeconds();
            port = Integer.parseInt(settingsFile().getProperty("camel.server.port").trim());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        for (Deployment d : all(objects, Deployment.class)) {
            String name = d.getMetadata().getName();
            PodSpec pod = d.getSpec().getTemplate().getSpec();
            for (Container c : pod.getContainers()) {
                String where = name + "/" + c.getName();
                Map<String, Integer> ports = c.getPorts() == null ? Map.of() : c.getPorts().stream()
                        .filter(p -> p.getName() != null).collect(Collectors.toMap(p -> p.getName(), p -> p.getContainerPort()));
                if (!ports.containsValue(port)) {
                    problems.add(where + ": no container port " + port + " (camel.server.port)");
                }
                check(problems, where + " readiness", c.getReadinessProbe(), ports, port, "/observe/health");
                check(problems, where + " startup", c.getStartupProbe(), ports, port, "/observe/health");
                // Liveness: a TCP connect to the HTTP port (what the manifests ship: the health checks run
                // on the HTTP server's event loop, which a hung PostgreSQL holds), or at most an HTTP GET of
                // /observe/health/live; never the readiness checks, and lenient either way.
                Probe live = c.getLivenessProbe();
                if (live != null && live.getTcpSocket() != null) {
                    IntOrString p = live.getTcpSocket().getPort();
                    Integer resolved = p == null ? null : p.getIntVal() != null ? p.getIntVal() : ports.get(p.getStrVal());
                    if (resolved == null || resolved != port) {
                        problems.add(where + " liveness probe's port " + text(p) + " is not " + port);
                    }
                } else {
                    check(problems, where + " liveness", live, ports, port, "/observe/health/live");
                }
                if (live != null) {
                    int tolerated = orDefault(live.getFailureThreshold(), 3) * orDefault(live.getPeriodSeconds(), 10);
                    if (tolerated < 60) {
                        problems.add(where + " liveness gives up after " + tolerated + " s: be lenient (60 s or more)");
                    }
                }
            }
            int preStop = preStopSeconds(pod);
            long grace = pod.getTerminationGracePeriodSeconds() == null ? 30 : pod.getTerminationGracePeriodSeconds();
            long needed = Math.max(45, preStop + handBack + 15);
            if (grace < needed) {
                problems.add(name + ": terminationGracePeriodSeconds " + grace + " < " + needed + " (preStop " + preStop
                        + " s + shutdown-timeout and drain " + handBack + " s + 15 s to hand leases back and exit)");
            }
        }
        return problems;
    }

    static void check(List<String> problems, String where, Probe probe, Map<String, Integer> ports, int port, String pathPrefix) {
        if (probe == null) {
            problems.add(where + " probe missing");
            return;
        }
        if (probe.getHttpGet() == null) {
            problems.add(where + " probe is not an HTTP GET of " + pathPrefix);
            return;
        }
        String path = probe.getHttpGet().getPath();
        if (path == null || !(path.equals(pathPrefix) || path.startsWith(pathPrefix + "/") || path.startsWith(pathPrefix + "?"))) {
            problems.add(where + " probe asks " + path + ", not " + pathPrefix
                    + (where.endsWith("liveness") ? " (liveness must not count PostgreSQL, the broker or S3)" : ""));
        }
        IntOrString p = probe.getHttpGet().getPort();
        Integer resolved = p == null ? null : p.getIntVal() != null ? p.getIntVal() : ports.get(p.getStrVal());
        if (resolved == null || resolved != port) {
            problems.add(where + " probe's port " + text(p) + " is not " + port);
        }
    }

    static String text(IntOrString port) {
        return port == null ? "none" : port.getIntVal() != null ? port.getIntVal().toString() : port.getStrVal();
    }

    static int orDefault(Integer value, int otherwise) {
        return value == null ? otherwise : value;
    }

    static int preStopSeconds(PodSpec pod) {
        int seconds = 0;
        for (Container c : pod.getContainers()) {
            if (c.getLifecycle() != null && c.getLifecycle().getPreStop() != null) {
                var preStop = c.getLifecycle().getPreStop();
                if (preStop.getSleep() != null) {
                    seconds = Math.max(seconds, preStop.getSleep().getSeconds().intValue());
                } else if (preStop.getExec() != null && preStop.getExec().getCommand().size() == 2
                        && preStop.getExec().getCommand().get(0).equals("sleep")) {
                    seconds = Math.max(seconds, Integer.parseInt(preStop.getExec().getCommand().get(1)));
                } else {
                    seconds = Math.max(seconds, 30); // an unknown hook: assume the kubelet's own cap
                }
            }
        }
        return seconds;
    }

    @Test
    void aPodDisruptionBudgetCoversEachDeploymentAndSelectorsMatchTheirPods() {
        RENDERS.forEach((dir, nodes) -> assertThat(selectionProblems(loadAll(nodes))).as(dir.toString()).isEmpty());
        List<ObjectNode> withoutWorkerBudget = production().stream()
                .filter(o -> !id(o).startsWith("PodDisruptionBudget/jobgate/jobgate-worker")).toList();
        assertThat(selectionProblems(loadAll(withoutWorkerBudget))).anyMatch(p -> p.contains("jobgate-worker") && p.contains("PodDisruptionBudget"));
    }

    static List<String> selectionProblems(List<HasMetadata> objects) {
        List<String> problems = new ArrayList<>();
        List<Deployment> deployments = all(objects, Deployment.class);
        for (Deployment d : deployments) {
            String name = d.getMetadata().getName();
            Map<String, String> podLabels = d.getSpec().getTemplate().getMetadata().getLabels();
            if (!selects(d.getSpec().getSelector(), podLabels)) {
                problems.add(name + ": its selector does not select its own pods");
            }
            List<String> budgets = all(objects, PodDisruptionBudget.class).stream()
                    .filter(b -> sameNamespace(b, d) && selects(b.getSpec().getSelector(), podLabels))
                    .map(b -> b.getMetadata().getName()).toList();
            if (budgets.size() != 1) {
                problems.add(name + ": " + budgets.size() + " PodDisruptionBudgets select its pods " + budgets + ", one wanted");
            }
        }
        for (PodDisruptionBudget b : all(objects, PodDisruptionBudget.class)) {
            if (b.getSpec().getMinAvailable() == null && b.getSpec().getMaxUnavailable() == null) {
                problems.add("PodDisruptionBudget " + b.getMetadata().getName() + " allows everything");
            }
            long selected = deployments.stream().filter(d -> sameNamespace(b, d)
                    && selects(b.getSpec().getSelector(), d.getSpec().getTemplate().getMetadata().getLabels())).count();
            if (selected != 1) {
                problems.add("PodDisruptionBudget " + b.getMetadata().getName() + " selects the pods of " + selected + " Deployments");
            }
        }
        for (Service s : all(objects, Service.class)) {
            List<Deployment> backends = deployments.stream()
                    .filter(d -> sameNamespace(s, d) && s.getSpec().getSelector() != null
                            && d.getSpec().getTemplate().getMetadata().getLabels().entrySet().containsAll(s.getSpec().getSelector().entrySet()))
                    .toList();
            if (backends.size() != 1 || !backends.get(0).getMetadata().getName().equals("jobgate-api")) {
                problems.add("Service " + s.getMetadata().getName() + " selects " + backends.size() + " Deployments, jobgate-api wanted");
                continue;
            }
            Container c = backends.get(0).getSpec().getTemplate().getSpec().getContainers().get(0);
            for (var port : s.getSpec().getPorts()) {
                IntOrString target = port.getTargetPort();
                boolean found = c.getPorts().stream().anyMatch(p -> target.getIntVal() != null
                        ? target.getIntVal().equals(p.getContainerPort()) : target.getStrVal().equals(p.getName()));
                if (!found) {
                    problems.add("Service " + s.getMetadata().getName() + " targets port " + text(target) + ", which its pods do not have");
                }
            }
        }
        return problems;
    }

    static boolean sameNamespace(HasMetadata a, HasMetadata b) {
        return java.util.Objects.equals(a.getMetadata().getNamespace(), b.getMetadata().getNamespace());
    }

    static boolean selects(LabelSelector selector, Map<String, String> labels) {
        if (selector == null || selector.getMatchLabels() == null || selector.getMatchLabels().isEmpty()) {
            return false;
        }
        if (selector.getMatchExpressions() != null && !selector.getMatchExpressions().isEmpty()) {
            throw new IllegalStateException("matchExpressions are not evaluated by this test: use matchLabels");
        }
        return labels != null && labels.entrySet().containsAll(selector.getMatchLabels().entrySet());
    }

    @Test
    void theRolesAreSplitAsDocumentedAndEveryRoleRunsSomewhere() throws IOException {
        Set<String> everyRole = Set.of(settingsFile().getProperty("jobgate.roles").replace(" ", "").split(","));
        for (Map.Entry<Path, List<ObjectNode>> render : RENDERS.entrySet()) {
            Map<String, Map<String, String>> env = environments(loadAll(render.getValue()));
            assertThat(env.get("jobgate-api/jobgate").get("JOBGATE_ROLES")).isEqualTo("api,relay,sweeper,reconciler");
            assertThat(env.get("jobgate-worker/jobgate").get("JOBGATE_ROLES")).isEqualTo("worker");
            Set<String> running = env.values().stream().flatMap(e -> Stream.of(e.get("JOBGATE_ROLES").split(",")))
                    .collect(Collectors.toSet());
            assertThat(running).as(render.getKey() + ": every role somewhere").containsAll(everyRole);
            for (Map.Entry<String, Map<String, String>> container : env.entrySet()) {
                Map<String, String> e = container.getValue();
                assertThat(e.get("CAMEL_SERVER_HOST")).as(container.getKey() + ": the probes reach the pod's address")
                        .isEqualTo("0.0.0.0");
                assertThat(e.get("JOBGATE_DEMO")).as(container.getKey() + ": never a demo").isIn(null, "false");
                assertThat(e.get("JOBGATE_SIMULATOR_ENABLED")).as(container.getKey()).isEqualTo("false");
                for (String setting : List.of("JOBGATE_DB_URL", "JOBGATE_BROKER_URL", "JOBGATE_S3_ENDPOINT", "JOBGATE_PUBLIC_BASE_URL")) {
                    assertThat(e.get(setting)).as(container.getKey() + ": " + setting + " set (no embedded part in a pod)").isNotBlank();
                }
            }
        }
    }

    /**
     * The environment of each container (deployment/container), as the kubelet builds it: the envFrom
     * ConfigMaps' keys, then env (which wins); a value from a Secret as {@code secret:<name>/<key>}.
     */
    static Map<String, Map<String, String>> environments(List<HasMetadata> objects) {
        Map<String, Map<String, String>> result = new TreeMap<>();
        Map<String, ConfigMap> configMaps = all(objects, ConfigMap.class).stream()
                .collect(Collectors.toMap(c -> c.getMetadata().getName(), c -> c));
        for (Deployment d : all(objects, Deployment.class)) {
            for (Container c : d.getSpec().getTemplate().getSpec().getContainers()) {
                Map<String, String> env = new TreeMap<>();
                for (EnvFromSource from : c.getEnvFrom() == null ? List.<EnvFromSource>of() : c.getEnvFrom()) {
                    String prefix = from.getPrefix() == null ? "" : from.getPrefix();
                    if (from.getConfigMapRef() != null) {
                        ConfigMap cm = configMaps.get(from.getConfigMapRef().getName());
                        if (cm == null) {
                            throw new IllegalStateException(d.getMetadata().getName() + " loads ConfigMap "
                                    + from.getConfigMapRef().getName() + ", which the manifests do not have");
                        }
                        cm.getData().forEach((k, v) -> env.put(prefix + k, v));
                    } else {
                        throw new IllegalStateException(d.getMetadata().getName() + ": envFrom a Secret hides which settings it "
                                + "sets; name each with a secretKeyRef");
                    }
                }
                for (EnvVar e : c.getEnv() == null ? List.<EnvVar>of() : c.getEnv()) {
                    if (e.getValueFrom() == null) {
                        env.put(e.getName(), e.getValue() == null ? "" : e.getValue());
                    } else if (e.getValueFrom().getSecretKeyRef() != null) {
                        env.put(e.getName(), "secret:" + e.getValueFrom().getSecretKeyRef().getName() + "/"
                                + e.getValueFrom().getSecretKeyRef().getKey());
                    } else if (e.getValueFrom().getConfigMapKeyRef() != null) {
                        var ref = e.getValueFrom().getConfigMapKeyRef();
                        ConfigMap cm = configMaps.get(ref.getName());
                        if (cm == null || !cm.getData().containsKey(ref.getKey())) {
                            throw new IllegalStateException(d.getMetadata().getName() + ": " + e.getName() + " from ConfigMap "
                                    + ref.getName() + " key " + ref.getKey() + ", which the manifests do not have");
                        }
                        env.put(e.getName(), cm.getData().get(ref.getKey()));
                    } else {
                        env.put(e.getName(), "field");
                    }
                }
                result.put(d.getMetadata().getName() + "/" + c.getName(), env);
            }
        }
        return result;
    }

    // --- settings ---------------------------------------------------------------------------------

    @Test
    void everyEnvironmentVariableIsASettingTheGatewayKnows() throws IOException {
        Set<String> known = knownEnvironmentNames();
        assertThat(known).as("the settings are read").contains("JOBGATE_DB_URL", "CAMEL_SERVER_HOST",
                "JOBGATE_PROVIDER_OPENAI_API_KEY", "JOBGATE_PROVIDER_FAL_API_KEY", "JOBGATE_DB_PASSWORD");
        RENDERS.forEach((dir, nodes) -> assertThat(unknownEnvironmentNames(loadAll(nodes), known)).as(dir.toString()).isEmpty());
        // A misspelled name is found, in a Deployment's env and among a ConfigMap's keys.
        List<ObjectNode> misspelled = production().stream().map(ObjectNode::deepCopy).toList();
        ObjectNode api = deployment(misspelled, "jobgate-api");
        ((ArrayNode) container(api).get("env")).addObject().put("name", "JOBGATE_DB_POOLSIZE").put("value", "10");
        ((ObjectNode) configMap(misspelled).get("data")).put("JOBGATE_S3_BUKET", "jobgate");
        assertThat(unknownEnvironmentNames(loadAll(misspelled), known)).containsExactlyInAnyOrder(
                "jobgate-api/jobgate: JOBGATE_DB_POOLSIZE", "jobgate-api/jobgate: JOBGATE_S3_BUKET",
                "jobgate-worker/jobgate: JOBGATE_S3_BUKET");
    }

    static List<String> unknownEnvironmentNames(List<HasMetadata> objects, Set<String> known) {
        List<String> unknown = new ArrayList<>();
        environments(objects).forEach((container, env) -> env.keySet().stream().filter(n -> !known.contains(n)).sorted()
                .forEach(n -> unknown.add(container + ": " + n)));
        return unknown;
    }

    /**
     * The environment names of every setting the gateway knows, by its own rule
     * ({@link Settings#environmentName}: jobgate.db.url ↔ JOBGATE_DB_URL): the entries of
     * config/application.properties (the camel.* ones are overridden from the environment by name,
     * Gateway.overrideFromEnvironment) and of the provider files, the settings table of docs/settings.md
     * (credentials have no entry in the file), and the settings the routes name as {{placeholders}}.
     */
    static Set<String> knownEnvironmentNames() throws IOException {
        Set<String> keys = new TreeSet<>(settingsFile().stringPropertyNames());
        try (Stream<Path> files = Files.list(Path.of("config/providers"))) {
            for (Path f : files.filter(p -> p.toString().endsWith(".properties")).toList()) {
                keys.addAll(properties(f).stringPropertyNames());
            }
        }
        try {
            SettingsDocumentationTest.table().stream().map(SettingsDocumentationTest.Row::key)
                    .filter(k -> !k.contains("<") && !k.contains("*")).forEach(keys::add);
        } catch (Exception e) {
            throw new IOException("docs/settings.md's table", e);
        }
        try (Stream<Path> routes = Files.walk(Path.of("routes"))) {
            for (Path f : routes.filter(p -> p.toString().endsWith(".camel.yaml")).toList()) {
                Matcher m = PLACEHOLDER.matcher(Files.readString(f));
                while (m.find()) {
                    keys.add(m.group(1));
                }
            }
        }
        return keys.stream().map(Settings::environmentName).collect(Collectors.toCollection(TreeSet::new));
    }

    static Properties settingsFile() throws IOException {
        return properties(Path.of("config/application.properties"));
    }

    static Properties properties(Path file) throws IOException {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file)) {
            p.load(r);
        }
        return p;
    }

    // --- secrets ----------------------------------------------------------------------------------

    @Test
    void noSecretValueIsInTheManifestsAndEverySecretIsTheOperatorsAsDocumented() throws IOException {
        String docs = Files.readString(DOCS);
        for (Map.Entry<Path, List<ObjectNode>> render : RENDERS.entrySet()) {
            List<HasMetadata> objects = loadAll(render.getValue());
            assertThat(all(objects, Secret.class)).as(render.getKey() + ": the operator creates the Secrets").isEmpty();
            for (ConfigMap cm : all(objects, ConfigMap.class)) {
                assertThat(cm.getData().keySet()).as("ConfigMap " + cm.getMetadata().getName() + " holds no secret")
                        .noneMatch(k -> SECRET_NAME.matcher(k).matches());
                assertThat(cm.getBinaryData()).as("ConfigMap " + cm.getMetadata().getName()).isNullOrEmpty();
            }
            Map<String, Set<String>> secretKeys = new TreeMap<>();
            for (Deployment d : all(objects, Deployment.class)) {
                PodSpec pod = d.getSpec().getTemplate().getSpec();
                for (Container c : pod.getContainers()) {
                    for (EnvVar e : c.getEnv()) {
                        if (SECRET_NAME.matcher(e.getName()).matches()) {
                            assertThat(e.getValueFrom()).as(d.getMetadata().getName() + ": " + e.getName() + " from a Secret").isNotNull();
                            assertThat(e.getValueFrom().getSecretKeyRef()).as(e.getName()).isNotNull();
                        }
                        if (e.getValueFrom() != null && e.getValueFrom().getSecretKeyRef() != null) {
                            var ref = e.getValueFrom().getSecretKeyRef();
                            secretKeys.computeIfAbsent(ref.getName(), n -> new TreeSet<>()).add(ref.getKey());
                        }
                    }
                }
                for (Volume v : pod.getVolumes()) {
                    if (v.getSecret() != null) {
                        v.getSecret().getItems().forEach(i -> secretKeys.computeIfAbsent(v.getSecret().getSecretName(),
                                n -> new TreeSet<>()).add(i.getKey()));
                    }
                }
            }
            assertThat(secretKeys).containsKeys("jobgate-secrets", "jobgate-tenants");
            secretKeys.forEach((secret, keys) -> {
                assertThat(docs).as("docs/kubernetes.md creates " + secret)
                        .containsPattern("kubectl (-n \\S+ )?create secret generic " + Pattern.quote(secret) + " ");
                for (String key : keys) {
                    assertThat(docs).as("docs/kubernetes.md gives " + secret + " its key " + key)
                            .containsAnyOf("--from-literal=" + key + "=", "--from-file=" + key + "=");
                }
            });
        }
        // The shipped demo credentials (docs/operating.md, "Demo credentials") are nowhere in deploy/.
        Set<String> demo = new TreeSet<>(Set.of(ADMIN, ACME, GLOBEX, "dev-acme-jms",
                "dev-globex-jms", "whsec_"));
        Matcher digest = Pattern.compile("\\b[0-9a-f]{64}\\b").matcher(Files.readString(Path.of("config/tenants.yaml"))
                + settingsFile().getProperty("jobgate.admin.api-key-sha256"));
        while (digest.find()) {
            demo.add(digest.group());
        }
        assertThat(demo).hasSizeGreaterThan(8);
        try (Stream<Path> files = Files.walk(Path.of("deploy"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                String text = Files.readString(f);
                assertThat(demo).as(f + " holds no demo credential").noneMatch(text::contains);
            }
        }
    }

    @Test
    void theTenantsFileIsTheOperatorsMountedFromASecret() {
        for (Map.Entry<Path, List<ObjectNode>> render : RENDERS.entrySet()) {
            List<HasMetadata> objects = loadAll(render.getValue());
            Map<String, Map<String, String>> env = environments(objects);
            for (Deployment d : all(objects, Deployment.class)) {
                PodSpec pod = d.getSpec().getTemplate().getSpec();
                Container c = pod.getContainers().get(0);
                String files = env.get(d.getMetadata().getName() + "/" + c.getName()).get("JOBGATE_TENANTS_FILES");
                assertThat(files).as(d.getMetadata().getName() + ": JOBGATE_TENANTS_FILES set").isNotBlank();
                for (String file : files.split(",")) {
                    String f = file.trim();
                    assertThat(f).as("never the demo's config/tenants.yaml").doesNotContain("config/tenants.yaml");
                    VolumeMount mount = c.getVolumeMounts().stream().filter(m -> f.startsWith(m.getMountPath() + "/"))
                            .findFirst().orElse(null);
                    assertThat(mount).as(d.getMetadata().getName() + ": " + f + " is on a mounted volume").isNotNull();
                    Volume volume = pod.getVolumes().stream().filter(v -> v.getName().equals(mount.getName())).findFirst().orElseThrow();
                    assertThat(volume.getSecret() != null || volume.getConfigMap() != null)
                            .as(f + " comes from the operator's Secret or ConfigMap").isTrue();
                }
            }
        }
    }

    // --- image and scaling ------------------------------------------------------------------------

    @Test
    void eachOverlayNamesAPinnedImageBuiltByTheDockerfile() throws IOException {
        for (Path overlay : overlays()) {
            for (Deployment d : all(loadAll(RENDERS.get(overlay)), Deployment.class)) {
                for (Container c : d.getSpec().getTemplate().getSpec().getContainers()) {
                    String image = c.getImage();
                    assertThat(image).as(overlay + " " + d.getMetadata().getName() + ": the overlay names the image")
                            .isNotEqualTo("jobgate").matches(".+/.+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$")
                            .doesNotEndWith(":latest");
                }
            }
        }
        String dockerfile = Files.readString(Path.of("deploy/Dockerfile"));
        JsonNode compose = YAML.readTree(Path.of("compose.yaml").toFile());
        String composeImage = compose.path("x-jobgate").path("image").asText();
        assertThat(composeImage).startsWith("eclipse-temurin:");
        assertThat(dockerfile).as("the Dockerfile runs on compose.yaml's JRE").contains("FROM " + composeImage + "\n")
                .contains("COPY target/jobgate.jar /app/jobgate.jar").contains("COPY routes/ /app/routes/")
                .contains("COPY config/application.properties ").contains("COPY config/providers/ ").contains("COPY config/presets/ ")
                .as("no demo tenants in the image").doesNotContainPattern("(?m)^COPY[^\\n]*tenants").doesNotContain("COPY config/ ")
                .containsPattern("ENTRYPOINT \\[\"java\", [^\\]]*\"-jar\", \"/app/jobgate.jar\"]");
    }

    @Test
    void workersScaleOnTheQueueAgeMetric() throws IOException {
        assertThat(Files.readString(Path.of("src/main/java/io/jobgate/ops/Meters.java"))).as("the gateway serves the metric")
                .contains("\"" + QUEUE_AGE + "\"");
        assertThat(Files.readString(Path.of("docs/operating.md"))).contains(QUEUE_AGE);
        assertThat(Files.readString(DOCS)).as("docs/kubernetes.md has the metrics adapter's rule").contains(QUEUE_AGE);
        for (Map.Entry<Path, List<ObjectNode>> render : RENDERS.entrySet()) {
            List<HasMetadata> objects = loadAll(render.getValue());
            List<HorizontalPodAutoscaler> hpas = all(objects, HorizontalPodAutoscaler.class);
            assertThat(hpas).as(render.getKey().toString()).hasSize(1);
            HorizontalPodAutoscaler hpa = hpas.get(0);
            var target = hpa.getSpec().getScaleTargetRef();
            assertThat(target.getKind() + "/" + target.getName()).isEqualTo("Deployment/jobgate-worker");
            Deployment workers = all(objects, Deployment.class).stream()
                    .filter(d -> d.getMetadata().getName().equals(target.getName()) && sameNamespace(d, hpa)).findFirst().orElseThrow();
            assertThat(workers.getSpec().getReplicas()).as("the autoscaler alone sets the workers' replicas (an apply would undo it)").isNull();
            assertThat(hpa.getSpec().getMinReplicas()).isBetween(1, hpa.getSpec().getMaxReplicas());
            List<MetricSpec> metrics = hpa.getSpec().getMetrics();
            assertThat(metrics).hasSize(1);
            assertThat(metrics.get(0).getType()).isEqualTo("External");
            assertThat(metrics.get(0).getExternal().getMetric().getName()).isEqualTo(QUEUE_AGE);
            assertThat(metrics.get(0).getExternal().getTarget().getType()).isEqualTo("Value");
        }
    }

    // --- helpers ----------------------------------------------------------------------------------

    static List<ObjectNode> production() {
        return RENDERS.get(KUBERNETES.resolve("overlays/production"));
    }

    static ObjectNode deployment(List<ObjectNode> nodes, String name) {
        return nodes.stream().filter(o -> o.path("kind").asText().equals("Deployment")
                && o.path("metadata").path("name").asText().equals(name)).findFirst().orElseThrow();
    }

    static ObjectNode service(List<ObjectNode> nodes) {
        return nodes.stream().filter(o -> o.path("kind").asText().equals("Service")).findFirst().orElseThrow();
    }

    static ObjectNode configMap(List<ObjectNode> nodes) {
        return nodes.stream().filter(o -> o.path("kind").asText().equals("ConfigMap")).findFirst().orElseThrow();
    }

    static ObjectNode container(ObjectNode deployment) {
        return (ObjectNode) deployment.at("/spec/template/spec/containers/0");
    }
}
