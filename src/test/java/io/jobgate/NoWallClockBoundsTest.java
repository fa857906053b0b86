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
 * Speed is measured by the benches, not asserted by unit tests (issue 62): on a shared 2-core machine a
 * bound on how long something took fails correct code, and passes a broken feature that is merely fast.
 * A unit test waits on a condition, orders events, or reads the times the gateway recorded. This looks
 * for the plain forms of a timed assertion: JUnit's {@code assertTimeout}, and an assertion that reads
 * the machine's clock ({@code System.nanoTime()}, {@code System.currentTimeMillis()}) in its own
 * statement. Integration tests ({@code *IT}) and bench code may measure and report.
 */
class NoWallClockBoundsTest {

    static final Pattern CLOCK = Pattern.compile("System\\.nanoTime\\(\\)|System\\.currentTimeMillis\\(\\)");

    @Test
    void noUnitTestBoundsTheTimeItTook() throws Exception {
        List<String> timed = new ArrayList<>();
        try (Stream<Path> files = Files.walk(Path.of("src/test/java"))) {
            for (Path file : files.filter(NoWallClockBoundsTest::unitTestSource).sorted().toList()) {
                String text = Files.readString(file);
                // Statements, roughly: an assertion spread over lines is one piece up to its semicolon.
                for (String statement : text.split(";")) {
                    boolean asserts = statement.contains("assertThat(") || statement.contains("assertTimeout");
                    if (statement.contains("assertTimeout") || (asserts && CLOCK.matcher(statement).find())) {
                        timed.add(file + ": " + statement.strip().replaceAll("\\s+", " "));
                    }
                }
            }
        }
        assertThat(timed).as("unit tests asserting on wall-clock time").isEmpty();
    }

    static boolean unitTestSource(Path file) {
        String name = file.getFileName().toString();
        return name.endsWith(".java") && !name.endsWith("IT.java") && !name.equals("NoWallClockBoundsTest.java")
                && !file.toString().replace('\\', '/').contains("/io/jobgate/bench/");
    }
}
