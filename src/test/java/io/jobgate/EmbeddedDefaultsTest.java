package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Samples;
import org.apache.camel.main.Main;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The default run: every part embedded (PostgreSQL binaries, Artemis from broker.xml, S3Proxy) in
 * one data directory. A restart on the same directory keeps jobs and stored uploads.
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
                "jobgate.tenants.files", "config/tenants.yaml");
        settings.forEach(System::setProperty);
        ApiClient api = new ApiClient(port);

        Main first = start();
        String jobId;
        String uploadId;
        try {
            assertThat(api.get(null, "/observe/health").status()).isEqualTo(200);
            uploadId = api.upload("dev-acme-key", "audio/wav", Samples.wav(800)).json().path("upload_id").asText();
            ApiClient.Response job = api.postJob("dev-acme-key", "restart-1",
                    "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + uploadId + "\"}");
            assertThat(job.status()).isEqualTo(202);
            jobId = job.json().path("job_id").asText();
        } finally {
            first.stop();
        }
        assertThat(dataDir.resolve("postgres/pgdata/PG_VERSION")).exists();
        assertThat(dataDir.resolve("artemis/journal")).isDirectory();
        assertThat(dataDir.resolve("objects/jobgate")).isDirectory();

        Main second = start();
        try {
            ApiClient.Response kept = api.get("dev-acme-key", "/v1/jobs/" + jobId);
            assertThat(kept.status()).isEqualTo(200);
            assertThat(kept.json().path("source").path("upload_id").asText()).isEqualTo(uploadId);
            ApiClient.Response replay = api.postJob("dev-acme-key", "restart-1",
                    "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + uploadId + "\"}");
            assertThat(replay.header("Idempotent-Replayed")).isEqualTo("true");
            assertThat(replay.json().path("job_id").asText()).isEqualTo(jobId);
            // The stored object survived too: uploading the same bytes finds the existing record.
            assertThat(api.upload("dev-acme-key", "audio/wav", Samples.wav(800)).status()).isEqualTo(200);
        } finally {
            second.stop();
        }
    }

    private static Main start() throws Exception {
        return App.startInBackground(Duration.ofSeconds(90));
    }
}
