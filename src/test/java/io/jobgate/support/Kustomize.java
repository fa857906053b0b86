package io.jobgate.support;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;

/**
 * The part of kustomize that deploy/kubernetes uses, so its overlays render in a test on a machine
 * without kustomize: {@code resources} (files and kustomization folders), {@code patches} (strategic
 * merge patch files, matched by kind and name), {@code namespace} and {@code images}. Anything else in
 * a kustomization.yaml fails the render rather than being ignored; where a real kustomize is installed
 * ({@link #command()}), KubernetesManifestsTest checks that both render the same objects.
 */
public final class Kustomize {

    /** YAML with duplicate keys refused (kubectl refuses them; a plain parser keeps the last one). */
    public static final YAMLMapper YAML = new YAMLMapper(YAMLFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build());

    static final Set<String> FIELDS = Set.of("apiVersion", "kind", "resources", "namespace", "images", "patches");

    /**
     * Strategic merge patch's merge keys of the lists a patch may reach here (the Kubernetes API's
     * {@code patchMergeKey}); a patch into another list of objects is refused rather than guessed.
     */
    static final Map<String, String> MERGE_KEYS = Map.of(
            "containers", "name", "initContainers", "name", "env", "name", "volumes", "name",
            "volumeMounts", "mountPath", "imagePullSecrets", "name");

    /** Kinds whose objects have no namespace (the namespace transformer leaves them alone). */
    static final Set<String> CLUSTER_SCOPED = Set.of("Namespace", "ClusterRole", "ClusterRoleBinding",
            "CustomResourceDefinition", "PriorityClass", "StorageClass", "PersistentVolume");

    private Kustomize() {
    }

    /** The objects a kustomization folder renders to, in kustomize's order of resources. */
    public static List<ObjectNode> build(Path dir) throws IOException {
        Path file = dir.resolve("kustomization.yaml");
        JsonNode k = YAML.readTree(file.toFile());
        Set<String> unknown = new TreeSet<>();
        k.fieldNames().forEachRemaining(unknown::add);
        unknown.removeAll(FIELDS);
        if (!unknown.isEmpty()) {
            throw new IllegalStateException(file + " uses " + unknown + ", which this renderer does not implement "
                    + "(add it to io.jobgate.support.Kustomize, or keep to " + FIELDS + ")");
        }
        if (!"kustomize.config.k8s.io/v1beta1".equals(k.path("apiVersion").asText())
                || !"Kustomization".equals(k.path("kind").asText())) {
            throw new IllegalStateException(file + ": apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization expected");
        }
        List<ObjectNode> objects = new ArrayList<>();
        for (JsonNode resource : k.path("resources")) {
            Path path = dir.resolve(resource.asText()).normalize();
            if (Files.isDirectory(path)) {
                objects.addAll(build(path));
            } else {
                objects.addAll(documents(path));
            }
        }
        for (JsonNode patch : k.path("patches")) {
            if (patch.size() != 1 || !patch.has("path")) {
                throw new IllegalStateException(file + ": a patch is a file ({path: ...}) here, was " + patch);
            }
            for (ObjectNode p : documents(dir.resolve(patch.get("path").asText()))) {
                merge(target(objects, p, file), p, "");
            }
        }
        if (k.hasNonNull("namespace")) {
            for (ObjectNode o : objects) {
                if (!CLUSTER_SCOPED.contains(o.path("kind").asText())) {
                    ((ObjectNode) o.get("metadata")).put("namespace", k.get("namespace").asText());
                }
            }
        }
        for (JsonNode image : k.path("images")) {
            for (ObjectNode o : objects) {
                JsonNode pod = o.path("spec").path("template").path("spec");
                for (String list : new String[] {"initContainers", "containers"}) {
                    for (JsonNode c : pod.path(list)) {
                        String replaced = image(c.path("image").asText(), image);
                        if (replaced != null) {
                            ((ObjectNode) c).put("image", replaced);
                        }
                    }
                }
            }
        }
        return objects;
    }

    /** The non-empty YAML documents of a file. */
    public static List<ObjectNode> documents(Path file) throws IOException {
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
    public static String id(JsonNode o) {
        JsonNode meta = o.path("metadata");
        return o.path("kind").asText() + "/" + meta.path("namespace").asText("") + "/" + meta.path("name").asText();
    }

    static ObjectNode target(List<ObjectNode> objects, ObjectNode patch, Path file) {
        List<ObjectNode> matches = objects.stream()
                .filter(o -> o.path("kind").asText().equals(patch.path("kind").asText())
                        && o.path("metadata").path("name").asText().equals(patch.path("metadata").path("name").asText()))
                .toList();
        if (matches.size() != 1) {
            throw new IllegalStateException(file + ": the patch of " + id(patch) + " matches " + matches.size() + " objects");
        }
        return matches.get(0);
    }

    /** Strategic merge patch, as far as these manifests use it. */
    static void merge(ObjectNode target, ObjectNode patch, String where) {
        Iterator<Map.Entry<String, JsonNode>> fields = patch.fields();
        while (fields.hasNext()) {
            Map.Entry<String, JsonNode> f = fields.next();
            String name = f.getKey();
            JsonNode value = f.getValue();
            JsonNode current = target.get(name);
            if (name.startsWith("$")) {
                throw new IllegalStateException("patch directive " + name + " at " + where + " is not implemented here");
            } else if (value.isNull()) {
                target.remove(name);
            } else if (value.isObject() && current != null && current.isObject()) {
                merge((ObjectNode) current, (ObjectNode) value, where + "/" + name);
            } else if (value.isArray() && current != null && current.isArray() && containsObjects((ArrayNode) value)) {
                String key = MERGE_KEYS.get(name);
                if (key == null) {
                    throw new IllegalStateException("a patch of the list " + where + "/" + name
                            + ": its strategic merge key is not known here (io.jobgate.support.Kustomize.MERGE_KEYS)");
                }
                mergeList((ArrayNode) current, (ArrayNode) value, key, where + "/" + name);
            } else {
                target.set(name, value.deepCopy());
            }
        }
    }

    static boolean containsObjects(ArrayNode list) {
        for (JsonNode item : list) {
            if (item.isObject()) {
                return true;
            }
        }
        return false;
    }

    static void mergeList(ArrayNode current, ArrayNode patch, String key, String where) {
        for (JsonNode item : patch) {
            JsonNode k = item.get(key);
            if (k == null) {
                throw new IllegalStateException(where + ": a patch item without its merge key " + key);
            }
            ObjectNode match = null;
            for (JsonNode c : current) {
                if (k.equals(c.get(key))) {
                    match = (ObjectNode) c;
                }
            }
            if (match == null) {
                current.add(item.deepCopy());
            } else {
                merge(match, (ObjectNode) item, where + "[" + k.asText() + "]");
            }
        }
    }

    /** The image after an {@code images:} entry, or null when the entry does not name it. */
    static String image(String image, JsonNode entry) {
        String name = image;
        String rest = "";
        int at = name.indexOf('@');
        if (at >= 0) {
            rest = name.substring(at);
            name = name.substring(0, at);
        }
        int colon = name.lastIndexOf(':');
        if (colon > name.lastIndexOf('/')) {
            rest = name.substring(colon) + rest;
            name = name.substring(0, colon);
        }
        if (!name.equals(entry.path("name").asText())) {
            return null;
        }
        if (entry.hasNonNull("newName")) {
            name = entry.get("newName").asText();
        }
        if (entry.hasNonNull("digest")) {
            rest = "@" + entry.get("digest").asText();
        } else if (entry.hasNonNull("newTag")) {
            rest = ":" + entry.get("newTag").asText();
        }
        return name + rest;
    }

    // --- a real kustomize, where one is installed ------------------------------------------------

    /**
     * A kustomize that can render these kustomizations (v4 or newer: {@code resources} naming folders,
     * {@code patches}), as the command line before the folder: {@code kustomize build} or
     * {@code kubectl kustomize}. Empty when neither is installed; {@code why} says what was found.
     */
    public static Optional<List<String>> command(StringBuilder why) {
        if (onPath("kustomize")) {
            String version = run(List.of("kustomize", "version"));
            Matcher m = Pattern.compile("v(\\d+)\\.\\d+").matcher(version);
            if (m.find() && Integer.parseInt(m.group(1)) >= 4) {
                return Optional.of(List.of("kustomize", "build"));
            }
            why.append("kustomize says its version is '").append(version.trim()).append("' (v4 or newer needed); ");
        }
        if (onPath("kubectl")) {
            String version = run(List.of("kubectl", "version", "--client"));
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

    /** What the real kustomize rendered: its objects, and what it said on stderr (warnings). */
    public record Render(List<ObjectNode> objects, String messages) {
    }

    /** The objects the real kustomize renders for a folder. */
    public static Render buildWith(List<String> command, Path dir) throws IOException {
        List<String> line = new ArrayList<>(command);
        line.add(dir.toString());
        Path out = Files.createTempFile("kustomize", ".yaml");
        try {
            String messages = run(line, out);
            return new Render(documents(out), messages);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    static String run(List<String> command) {
        try {
            Path out = Files.createTempFile("kustomize", ".txt");
            try {
                run(command, out);
                return Files.readString(out, StandardCharsets.UTF_8);
            } finally {
                Files.deleteIfExists(out);
            }
        } catch (IOException | IllegalStateException e) {
            return "";
        }
    }

    static String run(List<String> command, Path stdout) throws IOException {
        Path stderr = Files.createTempFile("kustomize", ".err");
        try {
            Process p = new ProcessBuilder(command).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
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
}
