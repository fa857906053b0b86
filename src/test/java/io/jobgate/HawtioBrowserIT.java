package io.jobgate;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
 * The hawtio command as an operator meets it: the packaged gateway and {@code java -jar
 * target/jobgate.jar hawtio} as processes, then headless chromium (src/test/browser/hawtio-routes.mjs,
 * playwright-core) opens the console and finds jobgate's routes with exchange counts and a route
 * diagram, offline; screenshots land in target/hawtio/. The gateway trusts no loopback here, so the
 * console reaches Jolokia only with the admin key it was given (JOBGATE_ADMIN_API_KEY), and neither an
 * outsider nor the console can write through Jolokia.
 *
 * <p>Needs Debian's chromium and {@code npm ci} in src/test/browser; skipped without them unless
 * JOBGATE_TEST_REQUIRE_BROWSER=true (.ci/run sets it), then it fails.
 */
class HawtioBrowserIT {

    static final Path BROWSER = Path.of("src/test/browser");
    static final Path OUT = Path.of("target/hawtio");
    static final Pattern LISTENING = Pattern.compile("Hawtio on http://127\\.0\\.0\\.1:(\\d+)/hawtio/");

    @Test
    void theConsoleShowsTheRoutesWithCountsAndADiagram() throws Exception {
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

        Path dataDir = Files.createTempDirectory("jobgate-hawtio-it");
        Path gatewayLog = dataDir.resolve("gateway.log");
        Path hawtioLog = dataDir.resolve("hawtio.log");
        int port = GatewayTestSupport.freePort();
        ProcessBuilder gatewayBuilder = PackagedGateway.builder(dataDir, port, gatewayLog);
        gatewayBuilder.environment().put("JOBGATE_MANAGEMENT_ALLOW_LOOPBACK", "false");
        Process gateway = gatewayBuilder.start();
        // The console starts beside the gateway (it needs it only once a page asks).
        ProcessBuilder hawtioBuilder = new ProcessBuilder(System.getProperty("java.home") + "/bin/java", "-jar", "target/jobgate.jar",
                "hawtio", "--port", "0", "--gateway", "http://127.0.0.1:" + port)
                .redirectErrorStream(true).redirectOutput(hawtioLog.toFile());
        hawtioBuilder.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_"));
        hawtioBuilder.environment().put("JOBGATE_ADMIN_API_KEY", ADMIN);
        Process hawtio = hawtioBuilder.start();
        try {
            int hawtioPort = awaitListening(hawtio, hawtioLog);
            ApiClient api = new ApiClient(port);
            PackagedGateway.awaitHealthy(gateway, api, gatewayLog, Duration.ofSeconds(120));
            // One exchange on create-job for the routes table to count.
            ApiClient.Response job = api.postJob(ACME, "hawtio-1", """
                    {"preset_id": "invoice-scan", "aspect_class": "portrait",
                     "inputs": {"supplier_name": "Hawtio AG", "invoice_id": "H-1", "currency": "CHF", "line_items": []}}""");
            assertThat(job.status()).as(job.text()).isEqualTo(202);

            // Jolokia writes: an outsider is refused at the door, the console (with the key) by the policy.
            String write = """
                    {"type": "write", "mbean": "org.apache.camel:context=jobgate,type=context,name=\\"jobgate\\"",
                     "attribute": "Tracing", "value": true}""";
            ApiClient.Response outsider = api.send(HttpRequest.newBuilder(URI.create(api.base() + "/observe/jolokia/"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(write)).build());
            assertThat(outsider.status()).as(outsider.text()).isEqualTo(401);
            ApiClient console = new ApiClient(hawtioPort);
            ApiClient.Response viaConsole = console.send(HttpRequest.newBuilder(URI.create(console.base() + "/hawtio/jolokia/"))
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(write)).build());
            assertThat(viaConsole.json().path("status").asInt()).as(viaConsole.text()).isEqualTo(403);
            // A page of another site in the operator's browser gets nothing through the console.
            String suspend = """
                    {"type": "exec", "mbean": "org.apache.camel:context=jobgate,type=routes,name=\\"create-job\\"", "operation": "suspend()"}""";
            ApiClient.Response crossSite = console.send(HttpRequest.newBuilder(URI.create(console.base() + "/hawtio/jolokia/"))
                    .header("Origin", "https://elsewhere.example").header("Content-Type", "text/plain")
                    .POST(HttpRequest.BodyPublishers.ofString(suspend)).build());
            assertThat(crossSite.status()).as(crossSite.text()).isEqualTo(403);

            Files.createDirectories(OUT);
            Files.deleteIfExists(OUT.resolve("routes.png"));
            Path scriptLog = OUT.resolve("hawtio-routes.log");
            ProcessBuilder node = new ProcessBuilder("node", "hawtio-routes.mjs").directory(BROWSER.toFile())
                    .redirectErrorStream(true).redirectOutput(scriptLog.toFile());
            node.environment().put("HAWTIO_URL", "http://127.0.0.1:" + hawtioPort);
            node.environment().put("OUT_DIR", OUT.toAbsolutePath().toString());
            node.environment().put("ROUTE", "create-job");
            node.environment().put("CHROMIUM", chromium);
            Process script = node.start();
            if (!script.waitFor(90, TimeUnit.SECONDS)) {
                script.destroyForcibly();
                throw new AssertionError("the browser script did not finish in 90 s:\n" + Files.readString(scriptLog));
            }
            String output = Files.readString(scriptLog);
            assertThat(script.exitValue()).as("%s%nhawtio log:%n%s", output, Files.readString(hawtioLog)).isZero();
            assertThat(output).contains("\"route\":\"create-job\"");
            for (String png : new String[] {"routes.png", "route-diagram.png"}) {
                assertThat(OUT.resolve(png)).exists();
                assertThat(Files.size(OUT.resolve(png))).as(png).isGreaterThan(10_000);
            }
        } finally {
            hawtio.destroy();
            gateway.destroy();
            assertThat(hawtio.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).isTrue();
        }
    }

    /** The port the console printed it listens on; fails at once, with its log, if it exits. */
    private static int awaitListening(Process hawtio, Path log) {
        int[] port = new int[1];
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).until(() -> {
            String text = readQuietly(log);
            assertThat(hawtio.isAlive()).as("hawtio exited:\n%s", text).isTrue();
            Matcher m = LISTENING.matcher(text);
            if (m.find()) {
                port[0] = Integer.parseInt(m.group(1));
                return true;
            }
            return false;
        });
        return port[0];
    }

    private static String readQuietly(Path log) {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "";
        }
    }
}
