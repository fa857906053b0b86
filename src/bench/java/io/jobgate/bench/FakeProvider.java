package io.jobgate.bench;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.function.Consumer;
import java.util.concurrent.Executors;

import javax.imageio.ImageIO;

import com.sun.net.httpserver.HttpServer;
import org.apache.camel.CamelContext;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;

/**
 * A local image provider that answers at once with a small valid PNG at the adapter's portrait
 * size, and its adapter route: the worker and drain figures are then jobgate's own overhead.
 */
final class FakeProvider {

    static final String NAME = "benchfake";
    /** An image job of this provider (the bench's preset, portrait). */
    static final String BODY = AdmissionLoad.BODY.replace("{\"preset_id\"", "{\"provider\": \"" + NAME + "\", \"preset_id\"");

    private static final String ADAPTER = """
            - route:
                id: provider-benchfake
                routeConfigurationId: provider-adapter
                from:
                  uri: direct:provider-benchfake
                  steps:
                    - removeHeaders: {pattern: "*"}
                    - setHeader: {name: CamelHttpMethod, constant: POST}
                    - setHeader: {name: X-Jobgate-Job, simple: "${exchangeProperty.JobgateJobId}"}
                    - setBody: {simple: '{"prompt":${exchangeProperty.JobgatePromptJson}}'}
                    - to: "{{jobgate.provider.benchfake.base-url}}/generate?throwExceptionOnFailure=false"
                    - convertBodyTo: {type: String}
                    - filter:
                        simple: "${header.CamelHttpResponseCode} == 200"
                        steps:
                          - setProperty: {name: JobgateOutputBase64, jsonpath: "$.b64"}
                          - setProperty: {name: JobgateOutcome, constant: succeeded}
            """;

    /** The {@code Retry-After} (seconds) of the 429 a throttled job's first call gets. */
    static final int RETRY_AFTER_SECONDS = 1;

    private final HttpServer server;
    private volatile Consumer<String> onCall = job -> { };
    /** While set, each job's first call is answered 429 + Retry-After, its next ones at once. */
    private volatile boolean throttleFirstCalls;
    private final java.util.Set<String> throttled = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private boolean loaded;

    /** Starts the provider and writes its settings into {@code providersDir}, before the gateway starts. */
    FakeProvider(Path providersDir) throws IOException {
        byte[] reply = ("{\"b64\": \"" + Base64.getEncoder().encodeToString(png(1024, 1536)) + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        // Without TCP_NODELAY the JDK server's separate header and body writes meet delayed ACKs (~40 ms).
        System.setProperty("sun.net.httpserver.nodelay", "true");
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
        server.setExecutor(Executors.newFixedThreadPool(8));
        server.createContext("/generate", exchange -> {
            String job = exchange.getRequestHeaders().getFirst("X-Jobgate-Job");
            try (InputStream in = exchange.getRequestBody()) {
                in.readAllBytes();
            }
            if (job != null) {
                onCall.accept(job);
                if (throttleFirstCalls && throttled.add(job)) {
                    byte[] busy = "{\"error\": \"rate limited\"}".getBytes(StandardCharsets.UTF_8);
                    exchange.getResponseHeaders().add("Content-Type", "application/json");
                    exchange.getResponseHeaders().add("Retry-After", Integer.toString(RETRY_AFTER_SECONDS));
                    exchange.sendResponseHeaders(429, busy.length);
                    exchange.getResponseBody().write(busy);
                    exchange.close();
                    return;
                }
            }
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, reply.length);
            exchange.getResponseBody().write(reply);
            exchange.close();
        });
        server.start();
        Files.createDirectories(providersDir);
        Files.writeString(providersDir.resolve(NAME + ".properties"), """
                jobgate.provider.benchfake.kinds = image
                jobgate.provider.benchfake.size.portrait = 1024x1536
                jobgate.provider.benchfake.base-url = %s
                jobgate.provider.benchfake.max-concurrency = 64
                jobgate.provider.benchfake.call-deadline-ms = 10000
                jobgate.provider.benchfake.price.image-micros = 1
                """.formatted(baseUrl()));
    }

    /** Where it answers: {@code http://127.0.0.1:<port>}. */
    String baseUrl() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Told the job id of every call as it arrives. */
    void onCall(Consumer<String> listener) {
        this.onCall = listener;
    }

    /**
     * While on, every job's first call is answered {@code 429} with {@code Retry-After: 1} (the gateway
     * writes the retry's due time and closes the gate until then), its later calls at once.
     */
    void throttleFirstCalls(boolean on) {
        throttleFirstCalls = on;
        if (!on) {
            throttled.clear();
        }
    }

    /** Loads the adapter route into the running gateway (once). */
    synchronized void loadAdapter(CamelContext context) throws Exception {
        if (!loaded) {
            PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.fromString("benchfake.camel.yaml", ADAPTER));
            loaded = true;
        }
    }

    void stop() {
        server.stop(0);
    }

    private static byte[] png(int width, int height) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB), "png", out);
        return out.toByteArray();
    }
}
