package io.jobgate.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.TestDatabase;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bench --only sustained --peers}' runner (target/bench-peers, a JVM of its own): each peer
 * takes open-loop arrivals at stepped rates against the stand-in, every job's call is made, and its
 * lines say per step what arrived and finished, on the test PostgreSQL in a schema it drops again.
 */
class SustainedPeerTest {

    @ParameterizedTest
    @ValueSource(strings = {"db-scheduler", "jobrunr"})
    void aPeerTakesEveryArrivalOfItsStepsAndSaysSo(String peer) throws Exception {
        SlowProvider provider = new SlowProvider(0, 0);
        provider.server.start();
        Path log = Files.createTempFile("sustained-peer", ".log");
        try {
            Path peers = PeerBench.defaultDir();
            String url = TestDatabase.url().replaceAll("\\?.*$", "");
            String standIn = "http://127.0.0.1:" + provider.server.getAddress().getPort();
            Process process = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-cp",
                    peers.resolve("classes") + ":" + peers.resolve("lib") + "/*", "io.jobgate.benchpeers.SustainedPeer", peer, url,
                    TestDatabase.user(), TestDatabase.password() == null ? "" : TestDatabase.password(), "jobgate_peer_sustained_test",
                    standIn, "10,20", "2", "1", "8").redirectErrorStream(true).redirectOutput(log.toFile()).start();
            assertThat(process.waitFor(3, TimeUnit.MINUTES)).as("the peer ended").isTrue();
            List<String> lines = Files.readAllLines(log);
            assertThat(process.exitValue()).as(String.join("\n", lines)).isZero();

            assertThat(lines).contains("STEP-START 0", "STEP-END 0", "STEP-START 1", "STEP-END 1");
            assertThat(lines.stream().filter(l -> l.startsWith("NAME ")).findFirst().orElseThrow())
                    .matches("NAME (JobRunr|db-scheduler) \\d+\\.\\d+\\.\\d+");
            List<String> steps = lines.stream().filter(l -> l.startsWith("STEP ")).toList();
            assertThat(steps).hasSize(2);
            assertThat(steps.get(0)).startsWith("STEP 0 rate=10 accepted=20 failed=0 ");
            assertThat(steps.get(1)).startsWith("STEP 1 rate=20 accepted=40 failed=0 ");
            for (String step : steps) {
                assertThat(step).as("every job of the step done").doesNotContain("never").containsPattern("p99=\\d+ ");
            }
            // The warm-up's 20 jobs (1 s at 20 jobs/s) and the steps' 60: every one a call to the stand-in.
            assertThat(provider.answered.get()).isEqualTo(80);
        } finally {
            provider.server.stop(0);
        }
        List<String> left = new ArrayList<>();
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT nspname FROM pg_namespace WHERE nspname = 'jobgate_peer_sustained_test'")) {
            while (rs.next()) {
                left.add(rs.getString(1));
            }
        }
        assertThat(left).as("the peer's schema, dropped").isEmpty();
    }
}
