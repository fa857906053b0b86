package io.jobgate.bench;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.imageio.ImageIO;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A stand-in of OpenAI's Images API that takes as long as a real model: {@code POST /v1/images/generations}
 * answers after a fixed latency with a PNG of the size asked for ({@code data[0].b64_json}), as
 * gpt-image-1 does. A call held waiting is a scheduled reply, not a thread, so the stand-in itself never
 * limits how many calls are in flight. {@code GET /stats} tells how many calls it holds now, the most at
 * once, and how many it answered. Run in a JVM of its own by {@code bench --only inflight}
 * ({@code java -cp jobgate-bench.jar:jobgate.jar io.jobgate.bench.SlowProvider <port> <latency-ms>}), so its memory and
 * threads are not counted as the client's or the gateway's.
 */
public final class SlowProvider {

    /** {@code -Dslow-provider.images=noise}: pictures of a real image's size instead of blank ones. */
    private static final boolean NOISE = "noise".equals(System.getProperty("slow-provider.images"));

    private static final Pattern SIZE = Pattern.compile("\"size\"\\s*:\\s*\"(\\d+)x(\\d+)\"");

    final HttpServer server;
    private final ScheduledExecutorService replies = Executors.newScheduledThreadPool(2);
    /**
     * Each answer written on its own thread, as a provider's servers answer their connections side by side: written
     * by the two timer threads, a wave of real-size answers (2 MiB each, blocking writes) went out two at a time,
     * and the stand-in, not the gateway, set the pace at which they arrived.
     */
    private final java.util.concurrent.ExecutorService writers = Executors.newCachedThreadPool();
    private final Map<String, byte[]> replyBySize = new ConcurrentHashMap<>();
    private final AtomicInteger holding = new AtomicInteger();
    private final AtomicInteger most = new AtomicInteger();
    final AtomicLong answered = new AtomicLong();

    /** Calls started and answered per {@link #BUCKET_MS} since the last {@code /reset}: where a run's slots went idle. */
    static final int BUCKET_MS = 100;
    private final AtomicIntegerArray startedPerBucket = new AtomicIntegerArray(36_000);
    private final AtomicIntegerArray answeredPerBucket = new AtomicIntegerArray(36_000);
    private volatile long resetAtMillis = System.currentTimeMillis();

    /** 0: calls are answered; else every call is answered at once with this status ({@code GET /fault}). */
    private volatile int faultStatus;
    private volatile long retryAfterSeconds = 3600;

    /** How long each answer waits; {@code GET /latency?ms=N} changes it (the benches' warm-up runs short calls first). */
    private volatile long latencyMillis;

    SlowProvider(int port, long latencyMillis) throws IOException {
        this.latencyMillis = latencyMillis;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 8192);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/v1/images/generations", exchange -> {
            String body;
            try (InputStream in = exchange.getRequestBody()) {
                body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
            int faultStatus = this.faultStatus;
            if (faultStatus != 0) {
                // A provider in trouble answers at once: 503 (down), or 429 with its Retry-After (throttled).
                if (faultStatus == 429) {
                    exchange.getResponseHeaders().add("Retry-After", Long.toString(retryAfterSeconds));
                }
                send(exchange, faultStatus, ("{\"error\": {\"message\": \"" + (faultStatus == 429 ? "Rate limit reached"
                        : "The server is temporarily unavailable") + "\", \"type\": \"" + (faultStatus == 429 ? "requests" : "server_error")
                        + "\"}}").getBytes(StandardCharsets.UTF_8));
                return;
            }
            Matcher size = SIZE.matcher(body);
            String wxh = size.find() ? size.group(1) + "x" + size.group(2) : "1024x1024";
            most.accumulateAndGet(holding.incrementAndGet(), Math::max);
            count(startedPerBucket);
            replies.schedule(() -> writers.execute(() -> answer(exchange, wxh)), this.latencyMillis, TimeUnit.MILLISECONDS);
        });
        server.createContext("/latency", exchange -> {
            String query = exchange.getRequestURI().getQuery();
            this.latencyMillis = Long.parseLong(query.substring(query.indexOf("ms=") + 3));
            send(exchange, 200, "{}".getBytes(StandardCharsets.UTF_8));
        });
        server.createContext("/fault", exchange -> {
            // GET /fault?status=503, ?status=429&retry-after=3600, ?status=0 (answer again): the pool bench's schedule.
            Map<String, String> query = new java.util.HashMap<>();
            for (String pair : String.valueOf(exchange.getRequestURI().getQuery()).split("&")) {
                int eq = pair.indexOf('=');
                if (eq > 0) {
                    query.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
            }
            this.retryAfterSeconds = Long.parseLong(query.getOrDefault("retry-after", "3600"));
            this.faultStatus = Integer.parseInt(query.getOrDefault("status", "0"));
            send(exchange, 200, "{}".getBytes(StandardCharsets.UTF_8));
        });
        server.createContext("/stats", exchange -> send(exchange, 200, ("{\"holding\": " + holding.get() + ", \"most\": "
                + most.get() + ", \"answered\": " + answered.get() + "}").getBytes(StandardCharsets.UTF_8)));
        server.createContext("/timeline", exchange -> {
            StringBuilder csv = new StringBuilder("reset_at_ms=" + resetAtMillis + "\n");
            for (int b = 0; b < startedPerBucket.length(); b++) {
                if (startedPerBucket.get(b) != 0 || answeredPerBucket.get(b) != 0) {
                    csv.append(b).append(',').append(startedPerBucket.get(b)).append(',').append(answeredPerBucket.get(b)).append('\n');
                }
            }
            send(exchange, 200, csv.toString().getBytes(StandardCharsets.UTF_8));
        });
        server.createContext("/reset", exchange -> {
            most.set(holding.get());
            answered.set(0);
            for (int b = 0; b < startedPerBucket.length(); b++) {
                startedPerBucket.set(b, 0);
                answeredPerBucket.set(b, 0);
            }
            resetAtMillis = System.currentTimeMillis();
            send(exchange, 200, "{}".getBytes(StandardCharsets.UTF_8));
        });
    }

    private void answer(HttpExchange exchange, String wxh) {
        try {
            send(exchange, 200, replyBySize.computeIfAbsent(wxh, SlowProvider::reply));
            answered.incrementAndGet();
            count(answeredPerBucket);
        } catch (IOException e) {
            exchange.close(); // the caller gave up (its deadline): nothing to answer
        } finally {
            holding.decrementAndGet();
        }
    }

    private void count(AtomicIntegerArray perBucket) {
        int bucket = (int) ((System.currentTimeMillis() - resetAtMillis) / BUCKET_MS);
        if (bucket >= 0 && bucket < perBucket.length()) {
            perBucket.incrementAndGet(bucket);
        }
    }

    private static void send(HttpExchange exchange, int status, byte[] body) throws IOException {
        exchange.getResponseHeaders().add("Content-Type", "application/json");
        exchange.sendResponseHeaders(status, body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
    }

    private static byte[] reply(String wxh) {
        String[] parts = wxh.split("x");
        try {
            ByteArrayOutputStream png = new ByteArrayOutputStream();
            BufferedImage image = new BufferedImage(Integer.parseInt(parts[0]), Integer.parseInt(parts[1]), BufferedImage.TYPE_INT_RGB);
            if (NOISE) {
                // A picture's worth of bytes: noise does not compress, so a 1024x1024 PNG is ~1.5 MiB, about what
                // gpt-image-1 returns (a blank one is a few KiB, which hides what answers cost in memory).
                java.util.Random random = new java.util.Random(42);
                for (int y = 0; y < image.getHeight(); y++) {
                    for (int x = 0; x < image.getWidth(); x++) {
                        image.setRGB(x, y, random.nextInt() & 0x0f0f0f);
                    }
                }
            }
            ImageIO.write(image, "png", png);
            return ("{\"created\": " + System.currentTimeMillis() / 1000 + ", \"data\": [{\"b64_json\": \""
                    + Base64.getEncoder().encodeToString(png.toByteArray()) + "\"}], \"usage\": {\"input_tokens\": 20, "
                    + "\"output_tokens\": 1056, \"total_tokens\": 1076}}").getBytes(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void main(String[] args) throws IOException {
        // Without TCP_NODELAY the JDK server's separate header and body writes meet delayed ACKs (~40 ms);
        // thousands of callers keep their connections between calls.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        System.setProperty("sun.net.httpserver.maxIdleConnections", "10000");
        SlowProvider provider = new SlowProvider(Integer.parseInt(args[0]), Long.parseLong(args[1]));
        provider.server.start();
        System.out.println("slow provider listening on " + provider.server.getAddress().getPort() + ", answering after "
                + args[1] + " ms");
    }
}
