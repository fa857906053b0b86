package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The commands docs/operating.md gives for a replicated broker pair and a PostgreSQL replica, read from the
 * page itself: each is the fenced block after a {@code <!-- FailoverIT: <name> -->} line. A test that runs
 * them runs what a reader follows, and fails when the page loses or renames a step.
 */
public final class DocumentedSteps {

    static final Path PAGE = Path.of("docs/operating.md");

    private DocumentedSteps() {
    }

    /** The block's text, its indentation (a list item's) removed. */
    public static String block(String name) throws Exception {
        List<String> lines = Files.readAllLines(PAGE);
        int marker = lines.indexOf(lines.stream().filter(l -> l.trim().equals("<!-- FailoverIT: " + name + " -->")).findFirst()
                .orElseThrow(() -> new IllegalStateException(PAGE + " has no step marked '" + name + "'")));
        int open = marker + 1;
        String fence = lines.get(open);
        if (!fence.trim().startsWith("```")) {
            throw new IllegalStateException(PAGE + ": the step '" + name + "' is not followed by a fenced block");
        }
        int indent = fence.indexOf('`');
        StringBuilder text = new StringBuilder();
        for (int i = open + 1; !lines.get(i).trim().equals("```"); i++) {
            String line = lines.get(i);
            text.append(line.startsWith(" ".repeat(indent)) ? line.substring(indent) : line.stripLeading()).append('\n');
        }
        return text.toString();
    }

    /** A documented command line: the environment it sets ({@code NAME=value} words) and the command after them. */
    public record Command(Map<String, String> environment, List<String> command) {
    }

    /** The block as one shell command line (continuations joined), its words unquoted; {@code $NAME} kept for {@link #expand}. */
    public static Command command(String name) throws Exception {
        String line = block(name).replace("\\\n", " ");
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (char c : line.toCharArray()) {
            if (quote != 0) {
                if (c == quote) {
                    quote = 0;
                } else {
                    word.append(c);
                }
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) {
                    words.add(word.toString());
                    word.setLength(0);
                    inWord = false;
                }
            } else {
                word.append(c);
                inWord = true;
            }
        }
        if (inWord) {
            words.add(word.toString());
        }
        Map<String, String> environment = new LinkedHashMap<>();
        int i = 0;
        for (; i < words.size() && words.get(i).matches("[A-Z_][A-Z0-9_]*=.*"); i++) {
            String w = words.get(i);
            environment.put(w.substring(0, w.indexOf('=')), w.substring(w.indexOf('=') + 1));
        }
        return new Command(environment, List.copyOf(words.subList(i, words.size())));
    }

    private static final Pattern VARIABLE = Pattern.compile("\\$\\{?([A-Z_][A-Z0-9_]*)}?");

    /** {@code $NAME} and {@code ${NAME}} replaced by the test's values; a name it has none for fails. */
    public static String expand(String value, Map<String, String> variables) {
        Matcher m = VARIABLE.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String v = variables.get(m.group(1));
            if (v == null) {
                throw new IllegalStateException("the documented value '" + value + "' names $" + m.group(1) + ", which the test does not set");
            }
            m.appendReplacement(out, Matcher.quoteReplacement(v));
        }
        m.appendTail(out);
        return out.toString();
    }
}
