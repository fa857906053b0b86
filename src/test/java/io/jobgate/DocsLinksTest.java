package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README and docs/ hold together: every relative link names a file that is there (and a heading
 * that is there, for a #fragment), every page of docs/ is linked from the docs index, and the
 * README's first screen shows what jobgate is, its flow and the two commands.
 */
class DocsLinksTest {

    static final Pattern LINK = Pattern.compile("\\]\\(([^)\\s]+)\\)");
    /** Pages other branches are adding; the index links them ahead of time. */
    static final Set<String> COMING = Set.of("docs/video.md", "docs/hawtio.md");

    static List<Path> pages() throws Exception {
        List<Path> pages = new ArrayList<>(List.of(Path.of("README.md")));
        try (Stream<Path> docs = Files.list(Path.of("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
        }
        return pages;
    }

    /** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
    static String anchor(String heading) {
        return heading.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9 _-]", "").replace(' ', '-');
    }

    static Set<String> anchors(Path page) throws Exception {
        Set<String> anchors = new HashSet<>();
        boolean code = false;
        for (String line : Files.readAllLines(page)) {
            code ^= line.startsWith("```");
            if (!code && line.matches("#{1,6} .*")) {
                anchors.add(anchor(line.replaceFirst("#+ ", "").trim()));
            }
        }
        return anchors;
    }

    @Test
    void everyRelativeLinkResolves() throws Exception {
        List<String> broken = new ArrayList<>();
        for (Path page : pages()) {
            Matcher m = LINK.matcher(Files.readString(page));
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("[a-z]+:.*")) {
                    continue; // http(s), mailto: not ours to check here
                }
                String file = target.contains("#") ? target.substring(0, target.indexOf('#')) : target;
                String fragment = target.contains("#") ? target.substring(target.indexOf('#') + 1) : null;
                Path resolved = file.isEmpty() ? page : page.resolveSibling(file).normalize();
                if (COMING.contains(resolved.toString().replace('\\', '/'))) {
                    continue;
                }
                if (!Files.exists(resolved)) {
                    broken.add(page + " -> " + target + " (no such file)");
                } else if (fragment != null && !anchors(resolved).contains(fragment)) {
                    broken.add(page + " -> " + target + " (no such heading)");
                }
            }
        }
        assertThat(broken).isEmpty();
    }

    @Test
    void theDocsIndexLinksEveryPageAndTheComingOnes() throws Exception {
        String index = Files.readString(Path.of("docs/README.md"));
        for (Path page : pages()) {
            if (page.startsWith("docs") && !page.getFileName().toString().equals("README.md")) {
                assertThat(index).as("docs/README.md links " + page).contains("](" + page.getFileName() + ")");
            }
        }
        assertThat(index).contains("Video jobs: [video.md](video.md)").contains("Hawtio console: [hawtio.md](hawtio.md)");
    }

    @Test
    void theReadmesFirstScreenShowsWhatItIsTheFlowAndTheTwoCommands() throws Exception {
        List<String> lines = Files.readAllLines(Path.of("README.md"));
        String firstScreen = String.join("\n", lines.subList(0, Math.min(60, lines.size())));
        assertThat(firstScreen).contains("durable job boundary").contains("POST /v1/jobs").contains("outbox relay")
                .contains("mvn -q -DskipTests package && java -Xmx512m -XX:+ExitOnOutOfMemoryError -XX:SharedArchiveFile=target/jobgate.jsa -jar target/jobgate.jar").contains("mvn -B verify")
                .contains("jobgate ready in");
        assertThat(Files.readString(Path.of("README.md"))).doesNotContain("../shared/");
    }
}
