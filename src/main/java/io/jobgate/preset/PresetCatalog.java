package io.jobgate.preset;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Presets from {@code config/presets/<id>/v<version>.yaml}. A version, once seen by the database,
 * is immutable: a changed file under a known version stops the gateway at start.
 */
public final class PresetCatalog {

    public static final List<String> ASPECT_CLASSES = List.of("square", "landscape", "portrait");

    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final Pattern FILE_NAME = Pattern.compile("v([1-9][0-9]*)\\.ya?ml");
    private static final int MAX_STRING_CAP = 4000;

    private final Map<String, NavigableMap<Integer, Preset>> presets;

    private PresetCatalog(Map<String, NavigableMap<Integer, Preset>> presets) {
        this.presets = presets;
    }

    public static PresetCatalog load(Path directory) throws IOException {
        Map<String, NavigableMap<Integer, Preset>> presets = new LinkedHashMap<>();
        if (!Files.isDirectory(directory)) {
            throw new IllegalStateException("preset directory " + directory + " does not exist");
        }
        try (Stream<Path> files = Files.walk(directory, 2)) {
            for (Path file : files.filter(Files::isRegularFile).sorted().toList()) {
                Matcher m = FILE_NAME.matcher(file.getFileName().toString());
                if (!m.matches()) {
                    continue;
                }
                String id = file.getParent().getFileName().toString();
                Preset preset = parse(id, Integer.parseInt(m.group(1)), file);
                presets.computeIfAbsent(id, k -> new TreeMap<>()).put(preset.version(), preset);
            }
        }
        if (presets.isEmpty()) {
            throw new IllegalStateException("no presets found under " + directory);
        }
        return new PresetCatalog(Collections.unmodifiableMap(presets));
    }

    /** Records each version's file digest; refuses a file whose content changed under its version. */
    public void verifyImmutable(JdbcTemplate jdbc) {
        for (NavigableMap<Integer, Preset> versions : presets.values()) {
            for (Preset p : versions.values()) {
                jdbc.update("INSERT INTO preset_versions (preset_id, version, kind, file_sha256) VALUES (?, ?, ?, ?) "
                        + "ON CONFLICT DO NOTHING", p.id(), p.version(), p.kind(), p.fileSha256());
                String recorded = jdbc.queryForObject(
                        "SELECT file_sha256 FROM preset_versions WHERE preset_id = ? AND version = ?",
                        String.class, p.id(), p.version());
                if (!p.fileSha256().equals(recorded)) {
                    throw new IllegalStateException("preset " + p.id() + " v" + p.version()
                            + " changed after it was published; presets are immutable: add v" + (versions.lastKey() + 1));
                }
            }
        }
    }

    /**
     * The aspect class of a request: one the preset declares, exactly (never rounded to a near one);
     * absent for presets without aspect classes (transcription).
     */
    public static AspectClass aspect(Preset preset, String requested) {
        if (preset.aspectClasses().isEmpty()) {
            if (requested != null) {
                throw ApiProblem.of(422, "invalid_aspect_class", "Preset '" + preset.id() + "' is not an image preset "
                        + "and takes no aspect class.").with("field", "aspect_class");
            }
            return null;
        }
        AspectClass aspect = requested == null ? null : preset.aspectClasses().get(requested);
        if (aspect == null) {
            throw ApiProblem.of(422, "invalid_aspect_class", (requested == null ? "An aspect class is required"
                            : "Preset '" + preset.id() + "' v" + preset.version() + " has no aspect class '" + requested + "'")
                            + "; allowed: " + String.join(", ", preset.aspectClasses().keySet()) + ".")
                    .with("field", "aspect_class").with("allowed", preset.aspectClasses().keySet());
        }
        return aspect;
    }

    /** Every preset version, for checks across presets (which providers serve which classes). */
    public List<Preset> all() {
        return presets.values().stream().flatMap(v -> v.values().stream()).toList();
    }

    /** Every preset id. */
    public List<String> ids() {
        return List.copyOf(presets.keySet());
    }

    /** The loaded versions of a preset, ascending (empty when there is no such preset). */
    public List<Integer> versions(String id) {
        NavigableMap<Integer, Preset> versions = presets.get(id);
        return versions == null ? List.of() : List.copyOf(versions.keySet());
    }

    /**
     * Where the version of a request that names none comes from: the operator's choice
     * ({@link PresetDefaults}), null for the latest.
     */
    public void useDefaults(java.util.function.Function<String, Integer> defaults) {
        this.defaults = defaults;
    }

    private volatile java.util.function.Function<String, Integer> defaults = id -> null;

    /** The requested version, or when {@code version} is null the default an operator chose, else the latest. */
    public Preset resolve(String id, Integer version) {
        NavigableMap<Integer, Preset> versions = presets.get(id);
        if (versions == null) {
            throw ApiProblem.of(422, "unknown_preset", "No preset '" + id + "'; known: " + String.join(", ", presets.keySet()) + ".")
                    .with("field", "preset_id");
        }
        Integer chosen = version == null ? defaults.apply(id) : null;
        if (chosen != null && !versions.containsKey(chosen)) {
            // The operator's choice is not loaded here: refuse rather than give the version it rolled back from.
            throw ApiProblem.of(422, "unknown_preset", "Preset '" + id + "' defaults to version " + chosen
                    + ", which this gateway has not loaded; name a version: " + versions.keySet() + ".").with("field", "preset_version");
        }
        Preset preset = version == null ? versions.get(chosen != null ? chosen : versions.lastKey()) : versions.get(version);
        if (preset == null) {
            throw ApiProblem.of(422, "unknown_preset", "Preset '" + id + "' has no version " + version
                    + "; versions: " + versions.keySet() + ".").with("field", "preset_version");
        }
        return preset;
    }

    private static Preset parse(String id, int version, Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        JsonNode root = YAML.readTree(bytes);
        String where = file.toString();
        if (!id.equals(root.path("id").asText()) || root.path("version").asInt() != version) {
            throw new IllegalStateException(where + ": id and version inside must match the path (" + id + " v" + version + ")");
        }
        String kind = root.path("kind").asText();
        if (!kind.equals("image") && !kind.equals("transcription") && !kind.equals(VideoOrder.KIND) && !kind.equals(Preset.SUMMARY)) {
            throw new IllegalStateException(where + ": kind must be image, transcription, video or summary");
        }
        Map<String, AspectClass> aspects = new LinkedHashMap<>();
        root.path("aspect_classes").fields().forEachRemaining(e -> {
            if (!ASPECT_CLASSES.contains(e.getKey())) {
                throw new IllegalStateException(where + ": unknown aspect class " + e.getKey());
            }
            aspects.put(e.getKey(), aspectClass(e.getValue(), where + ": aspect class " + e.getKey()));
        });
        if (aspects.isEmpty() && kind.equals("image")) {
            throw new IllegalStateException(where + ": an image preset declares at least one aspect class");
        }
        Map<String, InputField> inputs = fields(root.path("inputs"), where);
        JsonNode source = root.path("source");
        List<String> sourceTypes = strings(source.path("media_types"));
        String template = root.path("template").asText();
        if (template.isBlank()) {
            throw new IllegalStateException(where + ": template is empty");
        }
        Preset preset = new Preset(id, version, kind, root.path("title").asText(id), Collections.unmodifiableMap(aspects),
                inputs, source.path("required").asBoolean(false), sourceTypes, strings(root.path("output").path("media_types")),
                root.path("output").path("count").asInt(1), PromptTemplate.of(template, inputs.keySet()),
                hints(root.path("hints"), inputs, where), Digests.sha256Hex(bytes));
        if (kind.equals(VideoOrder.KIND)) {
            VideoOrder.verifyDeclared(preset, where);
        }
        return preset;
    }

    /**
     * {@code {ratio: "2:3", min_width: 768, min_height: 1152}}; a version published before classes were
     * ratios says {@code {width: 1024, height: 1536}}: that ratio, and that size as its minimum, so
     * its jobs never get less than they were promised.
     */
    private static AspectClass aspectClass(JsonNode spec, String where) {
        try {
            if (spec.hasNonNull("ratio")) {
                return AspectClass.ofRatio(spec.get("ratio").asText(), spec.path("min_width").asInt(0),
                        spec.path("min_height").asInt(0));
            }
            int w = spec.path("width").asInt();
            int h = spec.path("height").asInt();
            if (w <= 0 || h <= 0) {
                throw new IllegalArgumentException("needs a ratio (or, before ratios, width and height)");
            }
            return new AspectClass(w, h, w, h);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(where + ": " + e.getMessage());
        }
    }

    private static ProviderHints hints(JsonNode spec, Map<String, InputField> inputs, String where) {
        if (spec.isMissingNode() || spec.isNull()) {
            return inputs.containsKey("language") ? new ProviderHints("language", null, 0) : ProviderHints.NONE;
        }
        String language = spec.hasNonNull("language") ? spec.get("language").asText() : null;
        JsonNode vocabulary = spec.path("vocabulary");
        String field = vocabulary.hasNonNull("field") ? vocabulary.get("field").asText() : null;
        int cap = vocabulary.path("max_chars").asInt(0);
        for (String name : java.util.Arrays.asList(language, field)) {
            if (name != null && !inputs.containsKey(name)) {
                throw new IllegalStateException(where + ": hints name undeclared field '" + name + "'");
            }
        }
        if (field != null && (cap <= 0 || cap > ProviderHints.MAX_VOCABULARY_CHARS)) {
            throw new IllegalStateException(where + ": hints.vocabulary.max_chars must be between 1 and "
                    + ProviderHints.MAX_VOCABULARY_CHARS);
        }
        return new ProviderHints(language, field, cap);
    }

    private static Map<String, InputField> fields(JsonNode node, String where) {
        Map<String, InputField> fields = new LinkedHashMap<>();
        node.fields().forEachRemaining(e -> fields.put(e.getKey(), field(e.getKey(), e.getValue(), where)));
        return Collections.unmodifiableMap(fields);
    }

    private static InputField field(String name, JsonNode spec, String where) {
        if (!name.matches("[a-z][a-z0-9_]*")) {
            throw new IllegalStateException(where + ": field name '" + name + "' must be snake_case");
        }
        InputField.Type type = InputField.Type.parse(spec.path("type").asText("string"));
        int maxLength = spec.path("max_length").asInt(0);
        int maxItems = spec.path("max_items").asInt(0);
        if (type == InputField.Type.STRING && (maxLength <= 0 || maxLength > MAX_STRING_CAP)) {
            throw new IllegalStateException(where + ": string field " + name + " needs max_length between 1 and " + MAX_STRING_CAP);
        }
        if (type == InputField.Type.ARRAY && (maxItems <= 0 || !spec.path("items").isObject())) {
            throw new IllegalStateException(where + ": array field " + name + " needs max_items and items");
        }
        if (type == InputField.Type.ENUM && !spec.path("values").isArray()) {
            throw new IllegalStateException(where + ": enum field " + name + " needs values");
        }
        // A whole number may instead come from an allowed set (video durations): never rounded to one of them.
        boolean integerSet = type == InputField.Type.INTEGER && spec.path("values").isArray();
        if (integerSet) {
            for (JsonNode v : spec.path("values")) {
                if (!v.isIntegralNumber()) {
                    throw new IllegalStateException(where + ": integer field " + name + " has values that are not whole numbers");
                }
            }
        }
        if ((type == InputField.Type.INTEGER || type == InputField.Type.NUMBER) && !integerSet
                && (!spec.hasNonNull("min") || !spec.hasNonNull("max"))) {
            throw new IllegalStateException(where + ": number field " + name + " needs min and max (or, whole numbers, values)");
        }
        return new InputField(name, type, spec.path("required").asBoolean(false), maxLength,
                spec.hasNonNull("pattern") ? java.util.regex.Pattern.compile(spec.get("pattern").asText()) : null, strings(spec.path("values")),
                spec.hasNonNull("min") ? new BigDecimal(spec.get("min").asText()) : null,
                spec.hasNonNull("max") ? new BigDecimal(spec.get("max").asText()) : null,
                maxItems, type == InputField.Type.ARRAY ? fields(spec.path("items"), where) : Map.of());
    }

    private static List<String> strings(JsonNode array) {
        List<String> values = new ArrayList<>();
        array.forEach(v -> values.add(v.asText()));
        return List.copyOf(values);
    }
}
