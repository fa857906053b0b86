package io.jobgate;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.URL;
import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import com.networknt.schema.i18n.MessageSource;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every route file the gateway ships is valid against the YAML DSL schema of the Camel version it runs
 * on: the schema inside the camel-yaml-dsl jar on the classpath (so a Camel upgrade brings its own),
 * never one fetched from the internet. Camel's loader is more lenient than its schema (it takes a
 * placeholder where the schema wants a boolean), but Kaoto and the editors' YAML tooling check the schema
 * and show such files as broken: this keeps the files what those tools expect.
 */
class RouteSchemaTest {

    /** Where route files live: the gateway's routes, drop-in examples, and any under resources or config. */
    static final List<Path> ROOTS = List.of(Path.of("routes"), Path.of("examples"), Path.of("src/main/resources"), Path.of("config"));

    static final String SCHEMA = "schema/camelYamlDsl.json";

    record Finding(Path file, String path, String message) {
        @Override
        public String toString() {
            return file + " " + path + ": " + message;
        }
    }

    /** Route files: {@code *.camel.yaml} anywhere under the roots, and any YAML under routes/. */
    static List<Path> routeFiles() throws IOException {
        List<Path> files = new ArrayList<>();
        for (Path root : ROOTS) {
            if (!Files.isDirectory(root)) {
                continue;
            }
            try (Stream<Path> walk = Files.walk(root)) {
                walk.filter(Files::isRegularFile).filter(f -> {
                    String name = f.getFileName().toString();
                    return name.endsWith(".camel.yaml") || root.equals(Path.of("routes")) && (name.endsWith(".yaml") || name.endsWith(".yml"));
                }).sorted().forEach(files::add);
            }
        }
        return files;
    }

    static Schema schema() throws IOException {
        try (InputStream in = RouteSchemaTest.class.getClassLoader().getResourceAsStream(SCHEMA)) {
            assertThat(in).as("%s on the classpath (camel-yaml-dsl's jar)", SCHEMA).isNotNull();
            MessageSource messages = validatorMessages();
            // The schema declares draft-04 itself; the default only matters if it stopped saying so.
            return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_4, b -> b.schemaRegistryConfig(
                    SchemaRegistryConfig.builder().messageSource(messages).build())).getSchema(in, InputFormat.JSON);
        }
    }

    /**
     * The validator's messages from its own jar: wiremock-standalone (a test dependency) carries an older
     * validator's {@code jsv-messages.properties} under the same name, and whichever comes first on the
     * classpath wins, which leaves the arguments unfilled ("{2} expected").
     */
    static MessageSource validatorMessages() throws IOException {
        URL jar = Schema.class.getProtectionDomain().getCodeSource().getLocation();
        Properties messages = new Properties();
        try (InputStream in = new URL("jar:" + jar + "!/jsv-messages.properties").openStream()) {
            messages.load(in);
        }
        return new MessageSource() {
            @Override
            public String getMessage(String key, Supplier<String> defaultMessage, Locale locale, Object... arguments) {
                String pattern = messages.getProperty(key);
                return pattern == null ? (defaultMessage == null ? key : defaultMessage.get())
                        : new MessageFormat(pattern, Locale.ROOT).format(arguments);
            }
        };
    }

    /**
     * The file as Camel reads it: parsed by snakeyaml-engine (YAML 1.2, Camel's own parser), so a quoted
     * {@code "true"} stays a string and {@code 429} a number, exactly as the loader and the tooling see them.
     */
    static JsonNode read(Path file) throws IOException {
        Object yaml = new Load(LoadSettings.builder().setLabel(file.toString()).build()).loadFromString(Files.readString(file));
        return new ObjectMapper().valueToTree(yaml);
    }

    /**
     * One finding per place in the file. A value that fits none of a {@code oneOf}'s branches fails every
     * branch at its parent too (some thirty lines for one wrong constant): the deepest place that fails
     * says what is wrong, so a failure at a place that holds another failing place is left out.
     */
    static List<Finding> findings(Schema schema, Path file) throws IOException {
        List<Error> errors = schema.validate(read(file));
        Map<String, Set<String>> byPath = new LinkedHashMap<>();
        for (Error error : errors) {
            boolean explainedDeeper = errors.stream().anyMatch(other -> other.getInstanceLocation().getNameCount()
                    > error.getInstanceLocation().getNameCount() && other.getInstanceLocation().startsWith(error.getInstanceLocation()));
            if (!explainedDeeper) {
                byPath.computeIfAbsent(error.getInstanceLocation().toString(), k -> new LinkedHashSet<>()).add(error.getMessage());
            }
        }
        List<Finding> findings = new ArrayList<>();
        byPath.forEach((path, messages) -> findings.add(new Finding(file, path, String.join("; ", messages))));
        return findings;
    }

    @Test
    void everyRouteFileIsValidAgainstTheSchemaOfTheCamelInUse() throws IOException {
        Schema schema = schema();
        List<Path> files = routeFiles();
        assertThat(files).as("route files found").hasSizeGreaterThanOrEqualTo(24)
                .contains(Path.of("routes/api.camel.yaml"), Path.of("routes/providers/simulator.camel.yaml"));
        List<Finding> findings = new ArrayList<>();
        for (Path file : files) {
            findings.addAll(findings(schema, file));
        }
        assertThat(findings).as("findings of the camel-yaml-dsl schema (%s from the classpath) in %d route files:%n%s",
                SCHEMA, files.size(), String.join(System.lineSeparator(), findings.stream().map(Finding::toString).toList()))
                .isEmpty();
    }

    /** The check itself: a value of the wrong type, the kind of mistake it is here for, is found and named. */
    @Test
    void aValueOfTheWrongTypeIsFoundWithItsFileAndPath() throws IOException {
        Path file = Files.createTempFile("planted", ".camel.yaml");
        try {
            Files.writeString(file, """
                    - route:
                        id: planted
                        autoStartup: "{{some.switch}}"
                        from:
                          uri: direct:planted
                          steps:
                            - setProperty: {name: status, constant: 429}
                    """);
            List<Finding> findings = findings(schema(), file);
            assertThat(findings).extracting(Finding::path).contains("/0/route/autoStartup");
            assertThat(findings).extracting(Finding::path).containsExactly("/0/route/autoStartup", "/0/route/from/steps/0/setProperty/constant");
            assertThat(findings.get(0).message()).contains("boolean");
            assertThat(findings).allSatisfy(f -> assertThat(f.file()).isEqualTo(file));
        } finally {
            Files.delete(file);
        }
    }
}
