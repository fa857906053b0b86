package io.jobgate;

import java.nio.file.Files;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import io.jobgate.infra.EmbeddedPostgresServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Samples;
import org.apache.camel.main.Main;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The default run: every part embedded (PostgreSQL binaries, Artemis from broker.xml, S3Proxy) in
 * one data directory. A restart on the same directory keeps jobs and stored uploads, and the
 * embedded PostgreSQL writes durably unless told it holds throwaway data.
 */
class EmbeddedDefaultsTest {

    @Test
    void restartOnTheSameDataDirectoryKeepsEveryJobAndUpload() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-embedded");
        int port = GatewayTestSupport.freePort();
        Map<String, String> settings = Map.of(
                "camel.server.port", Integer.toString(port),
                "jobgate.data-dir", dataDir.toString(),
                "jobgate.db.url", "", "jobgate.broker.url", "", "jobgate.s3.endpoint", "",
                "jobgate.broker.embedded-port", Integer.toString(GatewayTestSupport.freePort()),
                "jobgate.simulator.port", Integer.toString(GatewayTestSupport.freePort()),
                "jobgate.tenants.files", "config/tenants.yaml");
        settings.forEach(System::setProperty);
        ApiClient api = new ApiClient(port);

        Main first = start();
        String jobId;
        String uploadId;
        try {
            assertThat(api.get(null, "/observe/health").status()).isEqualTo(200);
            // A 202 is a promise only if the commit reached the disk: the embedded server's defaults.
            DataSource db = first.getCamelContext().getRegistry().lookupByNameAndType("dataSource", DataSource.class);
            assertThat(show(db, "fsync")).isEqualTo("on");
            assertThat(show(db, "synchronous_commit")).isEqualTo("on");
            assertThat(show(db, "full_page_writes")).isEqualTo("on");
            // A second gateway on the same directory stops at once and says why, instead of waiting
            // for ever on the journal's live lock as an Artemis backup would.
            assertThatThrownBy(EmbeddedDefaultsTest::start).hasStackTraceContaining("is in use by another running gateway");
            uploadId = api.upload(ACME, "audio/wav", Samples.wav(800)).json().path("upload_id").asText();
            ApiClient.Response job = api.postJob(ACME, "restart-1",
                    "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + uploadId + "\"}");
            assertThat(job.status()).isEqualTo(202);
            jobId = job.json().path("job_id").asText();
        } finally {
            first.stop();
        }
        assertThat(dataDir.resolve("postgres/pgdata/PG_VERSION")).exists();
        assertThat(dataDir.resolve("artemis/journal")).isDirectory();
        assertThat(dataDir.resolve("objects/jobgate")).isDirectory();

        // Clients keep asking for the job while the gateway starts again: the port is closed, or the
        // answer is a JSON document (503 starting, or the job) — never a 404, never HTML.
        // Read while the client thread adds: a copy-on-write list, whose streams never see a change midway.
        java.util.List<String> answers = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicBoolean asking = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread client = new Thread(() -> {
            while (asking.get()) {
                try {
                    ApiClient.Response r = api.get(ACME, "/v1/jobs/" + jobId);
                    answers.add(r.status() + " " + r.contentType());
                } catch (AssertionError portClosed) {
                    java.util.concurrent.locks.LockSupport.parkNanos(2_000_000); // a client's pause before it retries
                }
            }
        }, "asking-while-starting");
        client.start();
        Main second = start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> answers.stream().anyMatch(a -> a.startsWith("200")));
            asking.set(false);
            client.join();
            assertThat(answers).isNotEmpty().allSatisfy(a -> assertThat(a).matches("(200 application/json.*|503 application/problem\\+json)"))
                    .as("the port opens before the routes exist: those requests were told to retry")
                    .anyMatch(a -> a.startsWith("503"));
            ApiClient.Response kept = api.get(ACME, "/v1/jobs/" + jobId);
            assertThat(kept.status()).isEqualTo(200);
            assertThat(kept.json().path("source").path("upload_id").asText()).isEqualTo(uploadId);
            ApiClient.Response replay = api.postJob(ACME, "restart-1",
                    "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + uploadId + "\"}");
            assertThat(replay.header("Idempotent-Replayed")).isEqualTo("true");
            assertThat(replay.json().path("job_id").asText()).isEqualTo(jobId);
            // The stored object survived too: uploading the same bytes finds the existing record.
            assertThat(api.upload(ACME, "audio/wav", Samples.wav(800)).status()).isEqualTo(200);
        } finally {
            second.stop();
        }
    }

    @Test
    void throwawayDurabilityIsForDemosOnlyAndSaysSo() throws Exception {
        EmbeddedPostgresServer pg = EmbeddedPostgresServer.start(Files.createTempDirectory("jobgate-throwaway"), 0,
                EmbeddedPostgresServer.Durability.of("throwaway"));
        try {
            DataSource db = new DriverManagerDataSource(pg.jdbcUrl());
            assertThat(show(db, "fsync")).isEqualTo("off");
            assertThat(show(db, "synchronous_commit")).isEqualTo("off");
        } finally {
            pg.stop();
        }
        assertThatThrownBy(() -> EmbeddedPostgresServer.Durability.of("fast"))
                .hasMessageContaining("jobgate.db.embedded-durability");
    }

    /** The settings this class set as system properties: the next class must not inherit them. */
    @org.junit.jupiter.api.AfterAll
    static void clearSettings() {
        java.util.List.of("camel.server.port", "jobgate.data-dir", "jobgate.db.url", "jobgate.broker.url", "jobgate.s3.endpoint",
                "jobgate.broker.embedded-port", "jobgate.simulator.port", "jobgate.tenants.files").forEach(System::clearProperty);
    }

    private static String show(DataSource db, String setting) throws Exception {
        try (Connection c = db.getConnection(); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private static Main start() throws Exception {
        return Gateway.startInBackground(Duration.ofSeconds(90));
    }
}
