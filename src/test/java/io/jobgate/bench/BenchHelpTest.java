package io.jobgate.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/** {@code --help} prints the bench's usage, runs nothing, and names every option the bench reads. */
class BenchHelpTest {

    @Test
    void helpPrintsTheUsageAndRunsNothing() throws Exception {
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            Bench.main(new String[] {"--help"});
        } finally {
            System.setOut(original);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).isEqualTo(Bench.USAGE);
    }

    @Test
    void theUsageNamesEveryOptionTheBenchReads() throws Exception {
        Pattern read = Pattern.compile("opts\\.(?:get|getOrDefault|containsKey)\\(\"([a-z-]+)\"");
        Set<String> options = new TreeSet<>();
        try (Stream<Path> sources = Files.walk(Path.of("src/bench/java"))) {
            for (Path source : sources.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = read.matcher(Files.readString(source));
                while (m.find()) {
                    options.add(m.group(1));
                }
            }
        }
        assertThat(options).contains("only", "peers", "latency-seconds");
        for (String option : options) {
            assertThat(Bench.USAGE).as("--" + option).containsPattern("--" + Pattern.quote(option) + "\\b");
        }
    }
}
