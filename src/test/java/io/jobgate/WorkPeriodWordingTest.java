package io.jobgate;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The repository speaks of the product, not of the periods it was worked on: a figure carries its date,
 * machine and commit, a change is found in the history (`git log`), never as a numbered or relative
 * "session" of work. The word stays in its technical senses (a JMS or PostgreSQL session, an HTTP
 * session, a pool's session settings, an advisory lock held for the session), which none of these
 * phrasings match. Every text file of the docs, sources, configuration, routes, deployment, examples
 * and CI is read; a file:line is named for each phrasing found.
 */
class WorkPeriodWordingTest {

    static final List<String> ROOTS = List.of("README.md", "docs", "src", "config", "routes", "deploy",
            "examples", ".ci", "artemis", "compose.yaml", "pom.xml");

    /** Nouns that make the word technical when they follow it (its lock, its settings, its plan): not a period of work. */
    static final String TECHNICAL = "(?:lock|locks|advisory|settings?|variables?|options?|timeout|cookie|token|id|pool|plans?|"
            + "cache|state|role|user|commits?|transactions?|backend|connection)\\b";

    static final List<Pattern> WORK_PERIODS = List.of(
            // a numbered period (the word, then a number), one or several
            Pattern.compile("(?i)\\bsessions? \\d"),
            // one period's belongings (its end, its build, its runs), unless a technical noun follows
            Pattern.compile("(?i)\\bsession['\u2019]s\\b(?! " + TECHNICAL + ")"),
            // relative periods (this one, the last, the next, some ago, across several)
            Pattern.compile("(?i)\\b(?:this|last|next|previous|earlier|later|same|current|following|prior) sessions?\\b(?!['\u2019]s " + TECHNICAL + ")(?! " + TECHNICAL + ")"),
            Pattern.compile("(?i)\\bsessions? ago\\b"),
            Pattern.compile("(?i)\\b(?:across|over|between|in earlier|in later|in previous) sessions\\b"));

    static List<Path> textFiles() throws Exception {
        List<Path> files = new ArrayList<>();
        for (String root : ROOTS) {
            Path path = Path.of(root);
            if (!Files.exists(path)) {
                continue;
            }
            try (Stream<Path> walk = Files.walk(path)) {
                // Installed packages (npm's node_modules under src/test) are other projects' words, not ours.
                walk.filter(Files::isRegularFile)
                        .filter(file -> java.util.stream.StreamSupport.stream(file.spliterator(), false)
                                .noneMatch(part -> part.toString().equals("node_modules")))
                        .sorted().forEach(files::add);
            }
        }
        return files;
    }

    /** The file's lines, or none for a file that is not UTF-8 text (images, archives). */
    static List<String> lines(Path file) throws Exception {
        byte[] bytes = Files.readAllBytes(file);
        for (byte b : bytes) {
            if (b == 0) {
                return List.of();
            }
        }
        try {
            String text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(java.nio.ByteBuffer.wrap(bytes)).toString();
            return text.lines().toList();
        } catch (CharacterCodingException e) {
            return List.of();
        }
    }

    static List<String> findings(String name, List<String> lines) {
        List<String> found = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            for (Pattern p : WORK_PERIODS) {
                var m = p.matcher(lines.get(i));
                if (m.find()) {
                    found.add(name + ":" + (i + 1) + ": \"" + m.group() + "\" in: " + lines.get(i).strip());
                    break;
                }
            }
        }
        return found;
    }

    @Test
    void noTextOfTheRepositorySpeaksOfSessionsOfWork() throws Exception {
        List<String> found = new ArrayList<>();
        int read = 0;
        for (Path file : textFiles()) {
            List<String> lines = lines(file);
            read += lines.isEmpty() ? 0 : 1;
            found.addAll(findings(file.toString().replace('\\', '/'), lines));
        }
        assertThat(read).as("text files read").isGreaterThan(100);
        assertThat(found).as("work-period wording (give the date and commit instead)").isEmpty();
    }

    /** The word written as {@code ~} here, so that this file's own lines carry none of the phrasings. */
    static String w(String text) {
        return text.replace("~", "ses" + "sion");
    }

    @Test
    void thePhrasingsAreFoundAndTheTechnicalSensesAreLeftAlone() {
        List<String> workPeriods = List.of("## ~ 12: the relay's claim", "~s 17 and 18", "Benchmarks: ~ 35's last rounds",
                "at the ~'s end", "this ~'s build", "measured in this ~", "noted for the next ~", "two ~s ago",
                "across ~s the runs spread", "the last ~");
        for (String line : workPeriods) {
            assertThat(findings("x", List.of(w(line)))).as(w(line)).hasSize(1);
        }
        List<String> technical = List.of("~ s = c.create~(false, ~.AUTO_ACKNOWLEDGE);",
                "the relay pool's ~s plan without merge joins", "a JMS ~ opens", "SET ~_replication_role = replica",
                "idle_in_transaction_~_timeout = 5", "a ~ advisory lock", "probed from another ~",
                "the admission writer's ~", "aws-~-token", "the first blocking ~'s state and statement",
                "this ~'s lock is released at its end", "Each instance holds a ~", "~ settings of the relay's pool");
        for (String line : technical) {
            assertThat(findings("x", List.of(w(line)))).as(w(line)).isEmpty();
        }
    }
}
