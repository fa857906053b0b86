package io.jobgate.bench;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import javax.imageio.ImageIO;
import javax.sql.DataSource;

import com.sun.net.httpserver.HttpServer;
import org.apache.camel.CamelContext;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;

/**
 * Worker figures on an idle gateway: a job's time from accept (the client's POST) to the moment
 * the provider receives the call, and on to the recorded success, with a local HTTP provider that
 * answers at once (so the figures are jobgate's own overhead: relay, broker, lease, gate, adapter).
 */
final class WorkerBench {

    static final String PROVIDER = "benchfake";
    static final String BODY = AdmissionLoad.BODY.replace("{\"preset_id\"", "{\"provider\": \"" + PROVIDER + "\", \"preset_id\"");

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

    private final Map<String, CompletableFuture<Long>> arrivals = new ConcurrentHashMap<>();
    private final HttpServer server;

    /** Starts the fake provider and writes its settings into {@code providersDir}, before the gateway starts. */
    WorkerBench(Path providersDir) throws IOException {
        byte[] reply = ("{\"b64\": \"" + Base64.getEncoder().encodeToString(png(1024, 1536)) + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        // Without TCP_NODELAY the JDK server's separate header and body writes meet delayed ACKs (~40 ms).
        System.setProperty("sun.net.httpserver.nodelay", "true");
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        server.setExecutor(Executors.newFixedThreadPool(8));
        server.createContext("/generate", exchange -> {
            long at = System.nanoTime();
            String job = exchange.getRequestHeaders().getFirst("X-Jobgate-Job");
            try (InputStream in = exchange.getRequestBody()) {
                in.readAllBytes();
            }
            if (job != null) {
                arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).complete(at);
            }
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, reply.length);
            exchange.getResponseBody().write(reply);
            exchange.close();
        });
        server.start();
        Files.createDirectories(providersDir);
        Files.writeString(providersDir.resolve(PROVIDER + ".properties"), """
                jobgate.provider.benchfake.kinds = image
                jobgate.provider.benchfake.base-url = http://127.0.0.1:%d
                jobgate.provider.benchfake.max-concurrency = 64
                jobgate.provider.benchfake.call-deadline-ms = 10000
                jobgate.provider.benchfake.price.image-micros = 1
                """.formatted(server.getAddress().getPort()));
    }

    void run(CamelContext context, AdmissionLoad load, int samples, int warmUpSeconds) throws Exception {
        PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.fromString("benchfake.camel.yaml", ADAPTER));
        context.getRouteController().startRoute("worker");
        DataSource ds = context.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        try {
            // Warm the JIT on this path first (on two cores C2 needs tens of seconds).
            long warmUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(warmUpSeconds);
            int warmJobs = 0;
            while (System.nanoTime() < warmUntil) {
                measure(load, ds, 20);
                warmJobs += 20;
            }
            double[][] figures = measure(load, ds, samples);
            System.out.printf("%nWorker, idle gateway, one job at a time (%d jobs after %d warm-up jobs; provider answers at once):%n",
                    samples, warmJobs);
            System.out.printf("  accept -> provider call:   p50 %.2f ms  p99 %.2f ms%n", figures[0][0], figures[0][1]);
            System.out.printf("  provider call -> succeeded: p50 %.2f ms  p99 %.2f ms%n", figures[1][0], figures[1][1]);
            System.out.println("  (accept = the client starts POST /v1/jobs; succeeded = the job row is final)");
        } finally {
            context.getRouteController().stopRoute("worker");
            server.stop(0);
        }
    }

    private double[][] measure(AdmissionLoad load, DataSource ds, int samples) throws Exception {
        List<Double> toCall = new ArrayList<>();
        List<Double> toFinal = new ArrayList<>();
        try (Connection c = ds.getConnection();
             PreparedStatement finalized = c.prepareStatement("SELECT status FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL")) {
            for (int i = 0; i < samples; i++) {
                long t0 = System.nanoTime();
                String job = load.postOne();
                long called = arrivals.computeIfAbsent(job, k -> new CompletableFuture<>()).get(30, TimeUnit.SECONDS);
                toCall.add((called - t0) / 1e6);
                finalized.setObject(1, UUID.fromString(job));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (true) {
                    try (ResultSet rs = finalized.executeQuery()) {
                        if (rs.next()) {
                            if (!"succeeded".equals(rs.getString(1))) {
                                throw new IllegalStateException("bench job " + job + " ended " + rs.getString(1));
                            }
                            break;
                        }
                    }
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("bench job " + job + " did not finish within 30 s");
                    }
                    java.util.concurrent.locks.LockSupport.parkNanos(250_000); // poll without burning a core
                }
                toFinal.add((System.nanoTime() - called) / 1e6);
                arrivals.remove(job);
            }
        }
        return new double[][] {percentiles(toCall), percentiles(toFinal)};
    }

    private static double[] percentiles(List<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[] {sorted[sorted.length / 2], sorted[Math.min(sorted.length - 1, (int) Math.ceil(0.99 * sorted.length) - 1)]};
    }

    private static byte[] png(int width, int height) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB), "png", out);
        return out.toByteArray();
    }
}
