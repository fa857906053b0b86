package io.jobgate;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.PackagedGateway;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The operator console (docs/console.md) in a real browser (issue 67): the packaged jar on its embedded defaults, the
 * README's quick start job and its demo, then Debian's headless chromium (driven by playwright-core,
 * src/test/browser/console-job.mjs) signs in with the admin key, finds the quick start's job by its idempotency key, sees
 * its attempts and its output, keyboard first and in dark mode; redrives the demo's failed job and sees it succeed; stops
 * a running canary candidate; each action confirmed first and recorded as the operator's. No key and a tenant's key are
 * refused. The gateway listens beyond loopback here (a reachable demo,
 * {@code jobgate.demo}): from this machine's own network address, the console is refused while the admin key is the
 * shipped demo key. The job's page is saved to target/console/ (the README's screenshot comes from it).
 *
 * <p>Needs Debian's chromium and {@code npm ci} in src/test/browser; skipped without them unless
 * JOBGATE_TEST_REQUIRE_BROWSER=true (.ci/run sets it), then it fails.
 */
class ConsoleBrowserIT {

    static final Path BROWSER = Path.of("src/test/browser");
    static final Path OUT = Path.of("target/console");
    /** The README's quick start request, as it is written there. */
    static final String QUICK_START = """
            {"preset_id": "invoice-clean", "aspect_class": "portrait",
             "inputs": {"supplier_name": "Acme GmbH", "invoice_id": "INV-42", "currency": "EUR",
                        "line_items": [{"description": "Consulting", "quantity": 3, "unit_price": 120.5}]}}""";

    @Test
    void anOperatorFindsTheQuickStartJobRedrivesAFailedDemoJobAndStopsACanary() throws Exception {
        String chromium = System.getenv().getOrDefault("JOBGATE_TEST_CHROMIUM", "/usr/bin/chromium");
        List<String> missing = new ArrayList<>();
        if (!Files.isExecutable(Path.of(chromium))) {
            missing.add(chromium + " (apt-get install chromium)");
        }
        if (!Files.isDirectory(BROWSER.resolve("node_modules/playwright-core"))) {
            missing.add("playwright-core (npm ci --prefix src/test/browser)");
        }
        if (!missing.isEmpty()) {
            assertThat("true".equals(System.getenv("JOBGATE_TEST_REQUIRE_BROWSER")))
                    .as("JOBGATE_TEST_REQUIRE_BROWSER is set, but missing: %s", missing).isFalse();
            Assumptions.abort("no browser to drive: " + missing);
        }

        Path dataDir = Files.createTempDirectory("jobgate-console-it");
        Path log = dataDir.resolve("gateway.log");
        int port = GatewayTestSupport.freePort();
        ProcessBuilder builder = PackagedGateway.builder(dataDir, port, log);
        builder.environment().put("CAMEL_SERVER_HOST", "0.0.0.0");
        builder.environment().put("JOBGATE_DEMO", "true");
        // A canary candidate of the simulator's adapter (docs/canary.md's example), running at a small share; its gates
        // never judge here (their sample is out of reach): the operator stops it.
        java.util.Properties shipped = new java.util.Properties();
        try (var in = Files.newBufferedReader(Path.of("config/application.properties"))) {
            shipped.load(in);
        }
        builder.environment().put("CAMEL_MAIN_ROUTES_INCLUDE_PATTERN", shipped.getProperty("camel.main.routes-include-pattern").trim()
                + ",file:examples/canary/*.camel.yaml");
        builder.environment().put("JOBGATE_PROVIDER_SIMULATOR_CANARY_SHARE", "1");
        builder.environment().put("JOBGATE_PROVIDER_SIMULATOR_CANARY_MIN_SAMPLE", "100000");
        // One attempt per job: the demo's job whose first submit meets a 503 fails (exhausted) instead of being retried,
        // for the operator to redrive. (The demo's job refused for an output of the wrong size would fail again: the
        // simulator, as a provider that deduplicates by the job's key, answers a redrive with the same prediction.)
        builder.environment().put("JOBGATE_LIMITS_MAX_ATTEMPTS", "1");
        Process gateway = builder.start();
        try {
            ApiClient api = new ApiClient(port);
            PackagedGateway.awaitHealthy(gateway, api, log, Duration.ofSeconds(120));
            ApiClient.Response accepted = api.postJob(ACME, "order-42", QUICK_START);
            assertThat(accepted.status()).as(accepted.text()).isEqualTo(202);
            String jobId = accepted.json().path("job_id").asText();
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
                    .until(() -> "succeeded".equals(api.get(ACME, "/v1/jobs/" + jobId).json().path("status").asText()));

            // The README's demo: a mixed batch of two tenants with faults, each on a job's first submit.
            Path demoLog = dataDir.resolve("demo.log");
            Process demo = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-jar", "target/jobgate.jar", "demo",
                    "--url", "http://127.0.0.1:" + port).redirectErrorStream(true).redirectOutput(demoLog.toFile()).start();
            assertThat(demo.waitFor(120, TimeUnit.SECONDS)).as("the demo ends").isTrue();
            assertThat(demo.exitValue()).as(Files.readString(demoLog)).isZero();
            com.fasterxml.jackson.databind.JsonNode failed = api.get(ADMIN, "/v1/admin/jobs?status=failed&category=exhausted").json()
                    .path("jobs");
            assertThat(failed).as("a demo job failed by a 503 on its one attempt").isNotEmpty();
            String failedId = failed.get(0).path("job_id").asText();

            // Beyond this machine, the shipped demo key does not open the console; loopback, the same key does.
            Optional<InetAddress> own = ownAddress();
            if (own.isPresent()) {
                HttpResponse<String> beyond = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://" + own.get().getHostAddress() + ":" + port + "/console/jobs"))
                        .header("Authorization", "Basic " + Base64.getEncoder().encodeToString(("operator:" + ADMIN).getBytes()))
                        .build(), HttpResponse.BodyHandlers.ofString());
                assertThat(beyond.statusCode()).as(beyond.body()).isEqualTo(403);
                assertThat(beyond.body()).contains("console_loopback_only").doesNotContain(jobId);
            } else if (Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_BROWSER"))) {
                // Where the whole test is required (CI), the refusal beyond loopback is part of it.
                throw new AssertionError("JOBGATE_TEST_REQUIRE_BROWSER is set but this machine has no network address beside"
                        + " loopback: the console's refusal beyond this machine went untested");
            } else {
                System.out.println("no network address but loopback on this machine: the refusal beyond it is left to ConsoleTest");
            }

            Files.createDirectories(OUT);
            Files.deleteIfExists(OUT.resolve("console-job.png"));
            Path scriptLog = OUT.resolve("console-job.log");
            ProcessBuilder node = new ProcessBuilder("node", "console-job.mjs").directory(BROWSER.toFile())
                    .redirectErrorStream(true).redirectOutput(scriptLog.toFile());
            node.environment().put("GATEWAY_URL", "http://127.0.0.1:" + port);
            node.environment().put("ADMIN_KEY", ADMIN);
            node.environment().put("TENANT_KEY", ACME);
            node.environment().put("IDEMPOTENCY_KEY", "order-42");
            node.environment().put("JOB_ID", jobId);
            node.environment().put("OUT_DIR", OUT.toAbsolutePath().toString());
            node.environment().put("CHROMIUM", chromium);
            node.environment().put("FAILED_JOB_ID", failedId);
            node.environment().put("CANARY_PROVIDER", "simulator");
            Process script = node.start();
            if (!script.waitFor(90, TimeUnit.SECONDS)) {
                script.destroyForcibly();
                throw new AssertionError("the browser script did not finish in 90 s:\n" + Files.readString(scriptLog));
            }
            String output = Files.readString(scriptLog);
            assertThat(script.exitValue()).as("%s%ngateway log:%n%s", output, Files.readString(log)).isZero();
            // The simulator answers a submit as an asynchronous provider does: the attempt is pending, its webhook ends the job.
            assertThat(output).contains("\"status\":\"succeeded\"").contains("\"outcome\":\"pending\"")
                    .contains("\"image\":\"1024x1536\"").containsPattern("\"revision\":\"simulator-1@[0-9a-f]+\\s*\\(stable\\)\"").contains("\"no key\":401").contains("\"tenant key\":401");
            assertThat(output).contains("\"canary\":\"stopped\"").containsPattern("\"redriven\":\"[^\"]*redrive by oncall-alice")
                    .contains("\"confirmations\":2");
            assertThat(api.get(ACME, "/v1/jobs/" + failedId).status() == 200
                    ? api.get(ACME, "/v1/jobs/" + failedId) : api.get(io.jobgate.support.TestTenants.GLOBEX, "/v1/jobs/" + failedId))
                    .satisfies(r -> assertThat(r.json().path("status").asText()).isEqualTo("succeeded"));
            com.fasterxml.jackson.databind.JsonNode canaries = api.get(ADMIN, "/v1/admin/canaries").json().path("canaries");
            assertThat(canaries.get(0).path("status").asText()).isEqualTo("stopped");
            assertThat(canaries.get(0).path("changed_by").asText()).isEqualTo("oncall-alice");
            assertThat(Files.size(OUT.resolve("console-job.png"))).isGreaterThan(10_000);
            assertThat(Files.size(OUT.resolve("console-job-dark.png"))).isGreaterThan(10_000);
        } finally {
            gateway.destroy();
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
    }

    /** An IPv4 address of this machine that is not loopback, if it has one. */
    static Optional<InetAddress> ownAddress() throws Exception {
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!nic.isUp() || nic.isLoopback()) {
                continue;
            }
            for (InetAddress address : Collections.list(nic.getInetAddresses())) {
                if (address instanceof Inet4Address && !address.isLoopbackAddress()) {
                    return Optional.of(address);
                }
            }
        }
        return Optional.empty();
    }
}
