package io.jobgate.bench;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code bench --peers}: db-scheduler and JobRunr run from target/bench-peers (built by the pom
 * before the tests), never from the gateway's class path, enqueue and drain on the test PostgreSQL
 * in schemas they drop again; without that folder the command says what to do.
 */
class PeerBenchTest {

    @Test
    void thePeersAreNotOnTheGatewaysClassPath() {
        for (String name : List.of("com.github.kagkarlsson.scheduler.Scheduler", "org.jobrunr.configuration.JobRunr",
                "io.jobgate.benchpeers.DbSchedulerPeer")) {
            assertThatThrownBy(() -> Class.forName(name)).as(name).isInstanceOf(ClassNotFoundException.class);
        }
    }

    @Test
    void withoutTheFolderItSaysHowToBuildIt() throws Exception {
        Path missing = Files.createTempDirectory("no-bench-peers").resolve("bench-peers");
        assertThatThrownBy(() -> PeerBench.locate(null, missing.toString()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(missing.toAbsolutePath().toString())
                .hasMessageContaining("mvn package");
        assertThatThrownBy(() -> PeerBench.locate("db-scheduler,quartz", null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown peer quartz");
    }

    @Test
    void eachPeerEnqueuesAndDrainsInASchemaItDropsAndIsPrintedBesideTheGateway() throws Exception {
        PeerBench bench = PeerBench.locate("all", null);
        PrintStream original = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        List<PeerBench.Figures> figures;
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            figures = bench.run(TestDatabase.url(), TestDatabase.user(), TestDatabase.password(), 300, 50, 4);
            PeerBench.printRatios(figures, 1000.0, "64", null,
                    List.of(new DrainFloor.Figures("the call and the puts alone", 5000, 2.0, 1.5, null)));
        } finally {
            System.setOut(original);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        System.out.print(out);
        // Each named with the version of the jar it ran from.
        assertThat(figures).extracting(PeerBench.Figures::name).hasSize(3);
        assertThat(figures.get(0).name()).matches("db-scheduler \\d+\\.\\d+\\.\\d+");
        assertThat(figures.get(1).name()).matches("db-scheduler \\d+\\.\\d+\\.\\d+ \\(lock-and-fetch\\)");
        assertThat(figures.get(2).name()).matches("JobRunr \\d+\\.\\d+\\.\\d+");
        for (PeerBench.Figures f : figures) {
            assertThat(f.enqueuePerSecond()).as(f.name()).isPositive();
            assertThat(f.drainPerSecond()).as(f.name()).isPositive();
        }
        // The admission ratio is printed, the drain's is n/a (not run).
        assertThat(out).contains(String.format("%.2f", 1000.0 / figures.get(0).enqueuePerSecond())).contains("n/a");
        // The drain's floor (2,500 jobs/s here) over each peer's drain.
        assertThat(out).contains("the call and the puts alone")
                .contains(String.format("%.2f", 2500.0 / figures.get(2).drainPerSecond()));
        List<String> left = new ArrayList<>();
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jobgate_peer%'")) {
            while (rs.next()) {
                left.add(rs.getString(1));
            }
        }
        assertThat(left).as("schemas left by the peers").isEmpty();
    }
}
