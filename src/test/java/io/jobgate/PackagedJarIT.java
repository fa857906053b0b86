package io.jobgate;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The README's run command for real: {@code java -jar target/jobgate.jar} as a process on embedded
 * defaults, configured only by environment variables (CAMEL_SERVER_PORT, JOBGATE_DATA_DIR), then
 * stopped with SIGTERM. Catches what the test classpath hides (a component missing from the jar).
 */
class PackagedJarIT {

    @Test
    void theShadedJarRunsOnEmbeddedDefaultsAndStopsCleanly() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-jar");
        Path log = dataDir.resolve("gateway.log");
        int port = GatewayTestSupport.freePort();
        ProcessBuilder pb = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-jar", "target/jobgate.jar")
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("CAMEL_SERVER_PORT", Integer.toString(port));
        pb.environment().put("JOBGATE_DATA_DIR", dataDir.toString());
        // In-VM only: a port picked here and bound later could be taken meanwhile (the embedded
        // PostgreSQL once took it on CI).
        pb.environment().put("JOBGATE_BROKER_EMBEDDED_PORT", "0");
        pb.environment().put("JOBGATE_SIMULATOR_PORT", "0");
        pb.environment().remove("JOBGATE_DB_URL");
        Process gateway = pb.start();
        try {
            ApiClient api = new ApiClient(port);
            await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(250)).until(() -> {
                assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log)).isTrue();
                try {
                    return api.get(null, "/observe/health").status() == 200;
                } catch (AssertionError notYet) {
                    return false;
                }
            });
            ApiClient.Response job = api.postJob("dev-acme-key", "jar-1", """
                    {"preset_id": "invoice-scan", "aspect_class": "portrait",
                     "inputs": {"supplier_name": "Jar KG", "invoice_id": "J-1", "currency": "CHF", "line_items": []}}""");
            assertThat(job.status()).as(job.text()).isEqualTo(202);
            assertThat(api.get("dev-acme-key", "/v1/jobs/" + job.json().path("job_id").asText()).status()).isEqualTo(200);
            assertThat(dataDir.resolve("postgres/pgdata/PG_VERSION")).exists();
        } finally {
            gateway.destroy(); // SIGTERM: Camel Main's shutdown hook stops routes, then the embedded parts
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        String output = Files.readString(log);
        assertThat(output).contains("Stopped embedded-postgres").doesNotContain(" ERROR ");
        assertThat(new File(dataDir.toFile(), "postgres/pgdata/postmaster.pid")).doesNotExist();
    }
}
