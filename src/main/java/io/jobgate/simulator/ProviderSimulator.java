package io.jobgate.simulator;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.jobgate.common.Json;
import io.jobgate.common.WebhookSignature;
import io.jobgate.upload.MediaTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bundled, offline provider: an async predictions API in the shape of Replicate's (submit →
 * task id → status → result file, plus signed webhooks and cancel), rendering real invoice images,
 * simple transcripts and real MP4 clips of an invoice. Fault knobs, per request ({@code X-Simulator-Fault}, first submit of a key only) or
 * by rate in settings, drive every error class a real provider shows.
 */
public final class ProviderSimulator implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ProviderSimulator.class);

    /** The fault knobs (stable names). */
    public static final String[] FAULTS = {"rate_limit_seconds", "rate_limit_date", "rate_limit_no_header", "server_error",
        "slow", "wrong_media_type", "wrong_size", "wrong_duration", "prose", "lose_reply", "garbled_totals"};

    /** Settings of one simulator. */
    public record Config(int port, Duration processing, Duration slow, String webhookSecret, Map<String, Double> faultRates) {
    }

    private final Config config;
    private final HttpServer server;
    private final ScheduledExecutorService work = Executors.newScheduledThreadPool(2, r -> {
        Thread t = new Thread(r, "simulator-render");
        t.setDaemon(true);
        return t;
    });
    private final HttpClient webhooks = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Task> tasks = new ConcurrentHashMap<>();
    private final Map<String, String> byKey = new ConcurrentHashMap<>();
    private final java.util.Set<String> faulted = ConcurrentHashMap.newKeySet();

    /**
     * The bytes of outputs already read that stay readable: beyond it the oldest read ones expire (their file answers
     * 404, as a provider's expired output does; the task still says what it rendered). Every output was kept before,
     * and the simulator running in the gateway filled its heap (4,467 renders, 169 MB of bytes, in a 512 MB heap: the
     * pool bench's gateway spent its time collecting).
     */
    static final long READ_OUTPUTS_KEPT_BYTES = 64L << 20;
    /** How long a task is kept at all (Replicate keeps an API prediction and its output for an hour). */
    static final Duration TASKS_KEPT = Duration.ofHours(1);

    /** The clean invoices rendered last, by what decides their bytes. */
    private final RecentRenders cleanRenders = new RecentRenders(CLEAN_RENDERS_KEPT);
    /** How many clean renders are kept (a few hundred kilobytes: a PNG invoice is tens of kilobytes). */
    static final int CLEAN_RENDERS_KEPT = 16;

    private final java.util.Queue<Task> readOutputs = new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** {@link #READ_OUTPUTS_KEPT_BYTES}, smaller in a test. */
    volatile long readOutputsKeptBytes = READ_OUTPUTS_KEPT_BYTES;
    private final java.util.concurrent.atomic.AtomicLong readOutputBytes = new java.util.concurrent.atomic.AtomicLong();

    private static final class Task {
        final String id;
        final String key;
        final String webhook;
        final String fault;
        /** The request's envelope until the render read it. */
        volatile JsonNode input;
        volatile String status = "starting";
        volatile byte[] output;
        volatile String mediaType;
        /** Its output was rendered and has since expired. */
        volatile boolean expired;
        final java.util.concurrent.atomic.AtomicBoolean read = new java.util.concurrent.atomic.AtomicBoolean();

        Task(String id, String key, JsonNode input, String webhook, String fault) {
            this.id = id;
            this.key = key;
            this.input = input;
            this.webhook = webhook;
            this.fault = fault;
        }
    }

    private ProviderSimulator(Config config) throws IOException {
        this.config = config;
        this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", config.port()), 64);
        server.setExecutor(Executors.newFixedThreadPool(8, r -> {
            Thread t = new Thread(r, "simulator-http");
            t.setDaemon(true);
            return t;
        }));
        server.createContext("/v1/predictions", this::predictions);
        server.createContext("/files/", this::file);
    }

    public static ProviderSimulator start(Config config) throws IOException {
        System.setProperty("sun.net.httpserver.nodelay", "true");
        ProviderSimulator simulator = new ProviderSimulator(config);
        simulator.server.start();
        LOG.info("Provider simulator on http://127.0.0.1:{} (processing {} ms, fault rates {})", simulator.port(),
                config.processing().toMillis(), config.faultRates());
        return simulator;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    private void predictions(HttpExchange http) throws IOException {
        try (http) {
            String path = http.getRequestURI().getPath();
            if (http.getRequestMethod().equals("POST") && path.equals("/v1/predictions")) {
                submit(http);
            } else if (http.getRequestMethod().equals("GET") && path.startsWith("/v1/predictions/by-key/")) {
                Task task = tasks.get(byKey.getOrDefault(path.substring("/v1/predictions/by-key/".length()), ""));
                reply(http, task == null ? 404 : 200, task == null ? Map.of("detail", "Not found.") : view(task));
            } else if (http.getRequestMethod().equals("POST") && path.startsWith("/v1/predictions/") && path.endsWith("/cancel")) {
                Task task = tasks.get(path.substring("/v1/predictions/".length(), path.length() - "/cancel".length()));
                if (task != null && !task.status.equals("succeeded") && !task.status.equals("failed")) {
                    task.status = "canceled"; // a render in progress stops; nothing is delivered
                }
                reply(http, task == null ? 404 : 200, task == null ? Map.of("detail", "Not found.") : view(task));
            } else if (http.getRequestMethod().equals("GET") && path.startsWith("/v1/predictions/")) {
                Task task = tasks.get(path.substring("/v1/predictions/".length()));
                reply(http, task == null ? 404 : 200, task == null ? Map.of("detail", "Not found.") : view(task));
            } else {
                reply(http, 405, Map.of("detail", "Method not allowed."));
            }
        }
    }

    private void submit(HttpExchange http) throws IOException {
        JsonNode body;
        try (InputStream in = http.getRequestBody()) {
            body = Json.MAPPER.readTree(in.readAllBytes());
        } catch (IOException e) {
            reply(http, 400, Map.of("detail", "Body is not JSON."));
            return;
        }
        String key = http.getRequestHeaders().getFirst("Idempotency-Key");
        Task existing = key == null ? null : tasks.get(byKey.getOrDefault(key, ""));
        if (existing != null) {
            reply(http, 200, view(existing)); // the same request again: the same prediction
            return;
        }
        String fault = http.getRequestHeaders().getFirst("X-Simulator-Fault");
        if (fault != null) {
            fault = fault.split("[-.:/]")[0]; // sim-fault-<knob>-<anything> arrives as <knob>-<anything>
            if (key != null && !faulted.add(key)) {
                fault = null; // a requested fault hits the first submit of a key only: its retry goes through
            }
        }
        if (fault == null || fault.isBlank()) {
            fault = randomFault();
        }
        switch (fault == null ? "" : fault) {
            case "rate_limit_seconds" -> {
                http.getResponseHeaders().add("Retry-After", "2");
                reply(http, 429, Map.of("detail", "Request was throttled. Your rate limit resets in ~2s."));
                return;
            }
            case "rate_limit_date" -> {
                http.getResponseHeaders().add("Retry-After", DateTimeFormatter.RFC_1123_DATE_TIME
                        .format(Instant.now().plusSeconds(3).atOffset(ZoneOffset.UTC)));
                reply(http, 429, Map.of("detail", "Request was throttled."));
                return;
            }
            case "rate_limit_no_header" -> {
                reply(http, 429, Map.of("detail", "Request was throttled."));
                return;
            }
            case "server_error" -> {
                reply(http, 503, Map.of("detail", "Service temporarily unavailable."));
                return;
            }
            case "prose" -> {
                byte[] prose = "I'm sorry, I can't render that invoice right now. Please try again later."
                        .getBytes(StandardCharsets.UTF_8);
                http.getResponseHeaders().add("Content-Type", "text/plain");
                http.sendResponseHeaders(200, prose.length);
                http.getResponseBody().write(prose);
                return;
            }
            default -> { }
        }
        Task task = new Task("sim_" + UUID.randomUUID().toString().replace("-", "").substring(0, 20), key, body.path("input"),
                body.path("webhook").asText(null), fault);
        tasks.put(task.id, task);
        if (key != null) {
            byKey.put(key, task.id);
        }
        work.schedule(() -> forget(task), TASKS_KEPT.toMillis(), TimeUnit.MILLISECONDS);
        work.schedule(() -> complete(task), config.processing().toMillis(), TimeUnit.MILLISECONDS);
        if ("lose_reply".equals(fault) || "slow".equals(fault)) {
            sleep(config.slow()); // the caller's deadline passes; the task exists all the same
            if ("lose_reply".equals(fault)) {
                return; // closed without an answer
            }
        }
        http.getResponseHeaders().add("x-request-id", "req_" + task.id);
        reply(http, 201, view(task));
    }

    private void complete(Task task) {
        try {
            JsonNode envelope = task.input;
            task.input = null; // read once: a task kept for its lookups keeps no request
            String kind = envelope.path("kind").asText("image");
            if (task.status.equals("canceled")) {
                return;
            }
            if (kind.equals("video")) {
                int width = envelope.path("width").asInt(1280);
                int seconds = envelope.path("duration_seconds").asInt(4);
                if ("wrong_size".equals(task.fault)) {
                    width += 64;
                }
                if ("wrong_duration".equals(task.fault)) {
                    seconds += 2;
                }
                byte[] clip = VideoRenderer.render(envelope.path("inputs"), width, envelope.path("height").asInt(720), seconds);
                if (task.status.equals("canceled")) {
                    return;
                }
                task.output = clip;
                task.mediaType = MediaTypes.MP4;
            } else if (kind.equals("summary")) {
                // A call's summary: what a chat model would answer, from the facts the envelope carries.
                task.output = Transcripts.summary(envelope.path("inputs").path("focus").asText("overview"),
                        envelope.path("source").path("bytes").asLong(0));
                task.mediaType = "application/json";
            } else if (kind.equals("transcription")) {
                long bytes = envelope.path("source").path("bytes").asLong(16_000);
                task.output = Transcripts.render(envelope.path("inputs").path("language").asText("en"),
                        envelope.path("inputs").path("speakers").asInt(2), bytes);
                task.mediaType = "application/json";
            } else {
                String mediaType = envelope.path("output_media_types").path(0).asText("image/png");
                int width = envelope.path("width").asInt(1024);
                int height = envelope.path("height").asInt(1024);
                if ("wrong_media_type".equals(task.fault)) {
                    mediaType = mediaType.equals("image/png") ? "image/jpeg" : "image/png";
                }
                if ("wrong_size".equals(task.fault)) {
                    width += 64;
                }
                boolean scan = envelope.path("preset_id").asText().contains("scan");
                boolean garbled = "garbled_totals".equals(task.fault);
                if (scan) {
                    task.output = InvoiceRenderer.render(envelope.path("inputs"), width, height, mediaType, true, task.id.hashCode(), garbled);
                } else {
                    // A clean invoice depends on nothing but these (no noise): the bytes of the last ones rendered are
                    // served again. The stand-in's PNG encoder shared two cores with the gateway it stands beside, and at
                    // 20 renders a second its queue, not the gateway, set the pool bench's latency.
                    int w = width;
                    int h = height;
                    String type = mediaType;
                    task.output = cleanRenders.get(envelope.path("inputs").toString() + "|" + w + "x" + h + "|" + type + "|" + garbled,
                            () -> InvoiceRenderer.render(envelope.path("inputs"), w, h, type, false, 0, garbled));
                }
                task.mediaType = mediaType;
            }
            task.status = "succeeded";
        } catch (RuntimeException e) {
            LOG.warn("simulator could not render {}: {}", task.id, e.toString());
            task.status = "failed";
        }
        if (task.webhook != null && !task.webhook.isBlank()) {
            sendWebhook(task);
        }
    }

    private void sendWebhook(Task task) {
        String id = "msg_" + task.id;
        String timestamp = Long.toString(Instant.now().getEpochSecond());
        byte[] body = Json.write(view(task)).getBytes(StandardCharsets.UTF_8);
        String signature = "v1," + Base64.getEncoder().encodeToString(WebhookSignature.sign(config.webhookSecret(), id,
                timestamp, body));
        HttpRequest request = HttpRequest.newBuilder(URI.create(task.webhook)).timeout(Duration.ofSeconds(10))
                .header("Content-Type", "application/json").header("webhook-id", id).header("webhook-timestamp", timestamp)
                .header("webhook-signature", signature).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
        webhooks.sendAsync(request, HttpResponse.BodyHandlers.discarding()).whenComplete((r, e) -> {
            if (e != null || r.statusCode() / 100 != 2) {
                LOG.debug("webhook for {} not delivered ({}); the gateway's poller will ask", task.id,
                        e != null ? e.toString() : r.statusCode());
            }
        });
    }

    private void file(HttpExchange http) throws IOException {
        try (http) {
            String name = http.getRequestURI().getPath().substring("/files/".length());
            Task task = tasks.get(name.replaceFirst("\\.[a-z0-9]+$", ""));
            if (task == null || task.output == null) {
                reply(http, 404, Map.of("detail", "Not found."));
                return;
            }
            byte[] output = task.output;
            http.getResponseHeaders().add("Content-Type", task.mediaType);
            http.sendResponseHeaders(200, output.length);
            http.getResponseBody().write(output);
            if (task.read.compareAndSet(false, true)) {
                readOutputs.add(task);
                expireReadOutputsBeyond(readOutputsKeptBytes, readOutputBytes.addAndGet(output.length));
            }
        }
    }

    /** The oldest outputs already read expire until those kept fit in {@code budget}. */
    private void expireReadOutputsBeyond(long budget, long kept) {
        while (kept > budget) {
            Task oldest = readOutputs.poll();
            if (oldest == null) {
                return;
            }
            byte[] output = oldest.output;
            oldest.expired = true;
            oldest.output = null;
            kept = readOutputBytes.addAndGet(output == null ? 0 : -output.length);
        }
    }

    /** A task past {@link #TASKS_KEPT}: gone, its key free (a submit with it renders anew). */
    private void forget(Task task) {
        tasks.remove(task.id, task);
        if (task.key != null) {
            byKey.remove(task.key, task.id);
        }
        if (task.read.get() && readOutputs.remove(task)) {
            byte[] output = task.output;
            readOutputBytes.addAndGet(output == null ? 0 : -output.length);
        }
    }

    /** How many outputs it holds and their bytes (a test's view of what it keeps). */
    long[] outputsHeld() {
        long count = 0;
        long bytes = 0;
        for (Task task : tasks.values()) {
            byte[] output = task.output;
            if (output != null) {
                count++;
                bytes += output.length;
            }
        }
        return new long[] {count, bytes};
    }

    private Map<String, Object> view(Task task) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("id", task.id);
        v.put("status", task.status);
        v.put("output", task.output == null && !task.expired ? null : java.util.List.of("http://127.0.0.1:" + port() + "/files/"
                + task.id + MediaTypes.extension(task.mediaType)));
        v.put("error", task.status.equals("failed") ? "render failed" : null);
        v.put("metrics", task.status.equals("succeeded") ? Map.of("predict_time", config.processing().toMillis() / 1000.0)
                : Map.of());
        v.put("urls", Map.of("get", "http://127.0.0.1:" + port() + "/v1/predictions/" + task.id));
        return v;
    }

    private String randomFault() {
        double roll = ThreadLocalRandom.current().nextDouble();
        double sum = 0;
        for (Map.Entry<String, Double> rate : config.faultRates().entrySet()) {
            sum += rate.getValue();
            if (roll < sum) {
                return rate.getKey();
            }
        }
        return null;
    }

    private static void reply(HttpExchange http, int status, Object body) throws IOException {
        byte[] bytes = Json.write(body).getBytes(StandardCharsets.UTF_8);
        http.getResponseHeaders().add("Content-Type", "application/json");
        http.sendResponseHeaders(status, bytes.length);
        http.getResponseBody().write(bytes);
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Fault rates from a setting: {@code server_error:0.05,rate_limit_seconds:0.02}. */
    public static Map<String, Double> rates(String setting) {
        Map<String, Double> rates = new LinkedHashMap<>();
        if (setting == null || setting.isBlank()) {
            return rates;
        }
        for (String part : setting.split(",")) {
            String[] kv = part.trim().split(":");
            if (kv.length != 2 || java.util.Arrays.stream(FAULTS).noneMatch(kv[0]::equals)) {
                throw new IllegalStateException("jobgate.simulator.faults: '" + part + "' is not <fault>:<rate>; faults: "
                        + String.join(", ", FAULTS));
            }
            rates.put(kv[0], Double.parseDouble(kv[1]));
        }
        return rates;
    }

    @Override
    public void close() {
        server.stop(0);
        work.shutdownNow();
    }
}
