package io.jobgate;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code help} lists every command; {@code <command> --help} prints its usage and runs nothing. */
class AppHelpTest {

    @Test
    void helpListsEveryCommandWithOneLineEach() throws Exception {
        for (String help : new String[] {"help", "--help", "-h"}) {
            String out = run(help);
            for (App.Command c : App.COMMANDS) {
                assertThat(out).as(help).contains("  " + c.name()).contains(c.summary());
            }
        }
    }

    @Test
    void everyCommandsHelpPrintsItsUsageWithoutRunningIt() throws Exception {
        for (App.Command c : App.COMMANDS.stream().filter(c -> !c.name().equals("help")).toList()) {
            // Were it run, run would start a gateway, demo would post jobs, simulator would serve
            // until stopped and bench would start one: each returns here within a second instead.
            String out = run(c.name(), "--help");
            assertThat(out).as(c.name()).startsWith("usage: java -jar jobgate.jar").isEqualTo(c.usage() + System.lineSeparator());
        }
        assertThat(run("--help", "run")).contains("commands:");
    }

    private static String run(String... args) throws Exception {
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            CompletableFuture.runAsync(() -> {
                try {
                    App.main(args);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }).get(10, TimeUnit.SECONDS);
        } finally {
            System.setOut(original);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }
}
