package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.support.DocumentedSteps;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/operating.md's commands carry no password of their own: every password a command sets or creates is
 * a variable the reader makes ({@code "$BROKER_PASSWORD"}), never a value anyone who read the page knows.
 * And the steps FailoverIT runs are all on the page, marked.
 */
class OperatingDocsTest {

    /** A password given as a setting, an option or SQL, and what follows it. */
    static final Pattern PASSWORD = Pattern.compile("(?i)(password[A-Z_]*\\s*=\\s*|password\\s+|--password[ =])(\\S+)");

    @Test
    void noDocumentedCommandCarriesAPassword() throws Exception {
        List<String> literal = new ArrayList<>();
        boolean fenced = false;
        for (String line : Files.readAllLines(Path.of("docs/operating.md"))) {
            if (line.trim().startsWith("```")) {
                fenced = !fenced;
                continue;
            }
            if (!fenced) {
                continue;
            }
            Matcher m = PASSWORD.matcher(line);
            while (m.find()) {
                String value = m.group(2).replaceAll("^[\"']+", "");
                if (!value.startsWith("$")) {
                    literal.add(line.trim());
                }
            }
        }
        assertThat(literal).as("documented commands with a password of their own").isEmpty();
    }

    @Test
    void everyStepFailoverItRunsIsOnThePage() throws Exception {
        for (String step : List.of("broker-primary", "broker-backup", "gateway-broker", "pg-primary", "pg-replica",
                "pg-synchronous", "pg-promote")) {
            assertThat(DocumentedSteps.block(step)).as(step).isNotBlank();
        }
        assertThat(DocumentedSteps.command("broker-primary").environment()).containsEntry("JOBGATE_BROKER_HA", "primary")
                .containsEntry("JOBGATE_BROKER_PASSWORD", "$BROKER_PASSWORD");
        assertThat(DocumentedSteps.command("broker-backup").environment()).containsEntry("JOBGATE_BROKER_HA", "backup");
        assertThat(DocumentedSteps.block("pg-synchronous")).contains("synchronous_standby_names = '*'");
        assertThat(DocumentedSteps.block("pg-promote")).contains("promote", "synchronous_standby_names = ''");
    }
}
