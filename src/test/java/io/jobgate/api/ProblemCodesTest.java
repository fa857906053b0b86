package io.jobgate.api;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every problem code the source can answer with is documented: the HTTP codes in the Errors section
 * of docs/api.md, the JMS intake's own in docs/jms.md, the operator console's in docs/console.md. Read from the source, so a new code without
 * a row fails here (ErrorTableTest then asks for a request that produces it).
 */
class ProblemCodesTest {

    /** The first argument of a problem builder: ApiProblem.of(status, →code, …), tooManyRequests(→code, …), unavailable(→code). */
    static final Pattern BUILDER = Pattern.compile(
            "(?:ApiProblem\\.of\\(\\s*\\d+\\s*,|tooManyRequests\\(|unavailable\\()\\s*([^,)]*)");
    static final Pattern LITERAL = Pattern.compile("\"([a-z]+(?:_[a-z]+)*)\"");
    static final Pattern CODE = Pattern.compile("`(?:\\d{3} )?([a-z]+(?:_[a-z]+)*)`"); // `code` or `403 code`

    static Set<String> codesInSource() throws Exception {
        Set<String> codes = new TreeSet<>(Set.of("unauthorized", "invalid_input")); // ApiProblem's own helpers
        try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                Matcher call = BUILDER.matcher(Files.readString(file));
                while (call.find()) {
                    Matcher literal = LITERAL.matcher(call.group(1));
                    while (literal.find()) {
                        codes.add(literal.group(1));
                    }
                }
            }
        }
        return codes;
    }

    static Set<String> documented(String file, String from) throws Exception {
        String doc = Files.readString(Path.of(file));
        String section = doc.substring(doc.indexOf(from));
        int end = section.indexOf("\n## ", 3);
        Set<String> codes = new TreeSet<>();
        Matcher m = CODE.matcher(end < 0 ? section : section.substring(0, end));
        while (m.find()) {
            codes.add(m.group(1));
        }
        return codes;
    }

    @Test
    void everyCodeTheSourceAnswersWithIsDocumented() throws Exception {
        Set<String> source = codesInSource();
        assertThat(source).as("the scan finds the builders").contains("not_found", "method_not_allowed", "not_ready",
                "tenant_concurrency", "not_available", "starting", "shutting_down");

        Set<String> documented = new TreeSet<>(documented("docs/api.md", "## Errors"));
        documented.addAll(documented("docs/jms.md", "## JMS intake for legacy producers"));
        documented.addAll(documented("docs/console.md", "## Who may open it"));
        assertThat(documented).containsAll(source);
    }
}
