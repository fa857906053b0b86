package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Our routes use none of the Simple operators Camel 4.18 deprecates (each logs a WARN at start):
 * {@code startsWith}, {@code endsWith}, {@code !contains}, {@code !regex}, {@code !in}, {@code !is},
 * {@code !range} instead of the spelled-out forms.
 */
class RoutesOperatorsTest {

    /** The deprecated spellings, as Camel's BinaryOperatorType names them in its warning. */
    static final Pattern DEPRECATED = Pattern.compile("\\} (starts with|ends with|not contains|not regex|not in|not is|not range) ");

    @Test
    void noRouteUsesADeprecatedSimpleOperator() throws Exception {
        List<String> found = new ArrayList<>();
        for (String dir : List.of("routes", "src/test/resources/adapters", "src/test/resources/example-provider")) {
            try (Stream<Path> files = Files.walk(Path.of(dir))) {
                for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).toList()) {
                    List<String> lines = Files.readAllLines(file);
                    for (int i = 0; i < lines.size(); i++) {
                        if (DEPRECATED.matcher(lines.get(i)).find()) {
                            found.add(file + ":" + (i + 1) + ": " + lines.get(i).strip());
                        }
                    }
                }
            }
        }
        assertThat(found).isEmpty();
    }
}
