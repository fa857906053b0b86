package io.jobgate;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each package's package-info says what it may use; its code uses nothing else of jobgate. The
 * gateway's own code (everything but the commands) uses none of the bench, simulator, demo and hawtio.
 */
class PackageDependenciesTest {

    static final Path ROOT = Path.of("src/main/java/io/jobgate");
    static final Set<String> COMMANDS = Set.of("bench", "simulator", "demo", "hawtio");
    static final Pattern USE = Pattern.compile("io\\.jobgate\\.([a-z]+)\\.[A-Z]");

    static Set<String> used(Path dir) throws IOException {
        Set<String> packages = new TreeSet<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java") && !p.endsWith("package-info.java")).toList()) {
                Matcher m = USE.matcher(Files.readString(f));
                while (m.find()) {
                    packages.add(m.group(1));
                }
            }
        }
        packages.remove(dir.getFileName().toString());
        return packages;
    }

    static Set<String> allowed(Path dir) throws IOException {
        String info = Files.readString(dir.resolve("package-info.java"));
        Matcher m = Pattern.compile("May use: ([^.]*)\\.").matcher(info);
        assertThat(m.find()).as(dir + "/package-info.java says what it may use").isTrue();
        return Arrays.stream(m.group(1).split(",")).map(String::trim).map(s -> s.split("[ (]")[0])
                .collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void eachPackageUsesOnlyWhatItsPackageInfoAllows() throws IOException {
        Map<String, Set<String>> beyond = new LinkedHashMap<>();
        try (Stream<Path> dirs = Files.list(ROOT)) {
            for (Path dir : dirs.filter(Files::isDirectory).sorted().toList()) {
                Set<String> allowed = allowed(dir);
                if (allowed.contains("anything")) {
                    continue;
                }
                Set<String> extra = used(dir);
                extra.removeAll(allowed);
                if (!extra.isEmpty()) {
                    beyond.put(dir.getFileName().toString(), extra);
                }
            }
        }
        assertThat(beyond).as("packages using more than their package-info allows").isEmpty();
    }

    /** The bench is its own source set (src/bench/java) and jar: the gateway's sources neither hold nor name it. */
    @Test
    void theBenchIsNotPartOfTheGateway() throws IOException {
        assertThat(ROOT.resolve("bench")).doesNotExist();
        assertThat(Path.of("src/bench/java/io/jobgate/bench/Bench.java")).exists();
        try (Stream<Path> files = Files.walk(ROOT)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                assertThat(Files.readString(f)).as(f.toString()).doesNotContain("io.jobgate.bench.");
            }
        }
    }

    @Test
    void theGatewaysOwnCodeImportsNoCommand() throws IOException {
        Map<String, Set<String>> offenders = new LinkedHashMap<>();
        try (Stream<Path> dirs = Files.list(ROOT)) {
            for (Path dir : dirs.filter(Files::isDirectory).filter(d -> !COMMANDS.contains(d.getFileName().toString())).toList()) {
                Set<String> commands = used(dir);
                commands.retainAll(COMMANDS);
                if (!commands.isEmpty()) {
                    offenders.put(dir.getFileName().toString(), commands);
                }
            }
        }
        Matcher configuration = USE.matcher(Files.readString(ROOT.resolve("JobgateConfiguration.java"))
                + Files.readString(ROOT.resolve("Gateway.java")));
        while (configuration.find()) {
            if (COMMANDS.contains(configuration.group(1))) {
                offenders.computeIfAbsent("Gateway/JobgateConfiguration", k -> new TreeSet<>()).add(configuration.group(1));
            }
        }
        assertThat(offenders).isEmpty();
    }
}
