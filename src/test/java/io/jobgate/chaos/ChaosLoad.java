package io.jobgate.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The clients of a chaos run, as a product's backend would be: jobs submitted at a steady rate with
 * an idempotency key each, open-loop (each arrival is sent at its planned time by a client of its own,
 * whatever the gateway is doing: a kill does not pause the traffic, as it would not in production), sent again (same key, same body) whenever no answer came or the gateway
 * said 503, and one in ten sent twice on purpose; readers polling jobs all along. Every answer is
 * kept in the book: what a client must never see (a 404 for a path that exists, a body that is not
 * JSON, a terminal state that later changes, a duplicate answered with another job) is a violation.
 */
public final class ChaosLoad implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final List<String> PRESETS = List.of("invoice-clean", "invoice-scan");
    private static final List<String> CLASSES = List.of("square", "landscape", "portrait");
    private static final Duration GIVE_UP = Duration.ofSeconds(240);
    /** How late an arrival's first POST may leave and still be on the clock (thread start, a GC pause). */
    static final Duration ON_TIME = Duration.ofSeconds(1);

    /** A job the gateway accepted: the key the client sent, the tenant's API key, the job id answered. */
    public record Accepted(String idempotencyKey, String apiKey, String jobId) {
    }

    /** A terminal state as a reader saw it first. */
    public record Read(String status, String finalizedAt) {
    }

    private final String base;
    private final List<String> apiKeys;
    /** Tenants (by API key) whose jobs name a provider of their own: OpenAI's square images, as its stand-in answers them. */
    private final Map<String, String> providerOf;
    /** Tenants (by API key) whose jobs name a pool instead of a provider: any preset and aspect class, as the default's. */
    private final Map<String, String> poolOf;
    private final int perSecond;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final ScheduledExecutorService pace = Executors.newSingleThreadScheduledExecutor();
    /** A client per arrival in flight: a fixed pool would hold arrivals back while its clients retry through a kill. */
    private final ExecutorService clients = Executors.newCachedThreadPool();
    private final ExecutorService readers = Executors.newFixedThreadPool(2);
    private final AtomicBoolean reading = new AtomicBoolean(true);
    private final AtomicInteger next = new AtomicInteger();
    private final AtomicInteger pending = new AtomicInteger();

    private final Map<String, Accepted> acceptedByKey = new ConcurrentHashMap<>();
    private final List<Accepted> accepted = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, Read> firstTerminalRead = new ConcurrentHashMap<>();
    private final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    private final Map<String, AtomicLong> answers = new ConcurrentHashMap<>();
    private final AtomicLong noAnswer = new AtomicLong();
    private final AtomicLong duplicatesAnswered = new AtomicLong();
    /** Arrivals whose first POST left more than {@link #ON_TIME} after their planned time: the load was not open-loop. */
    private final Map<Integer, Long> lateArrivals = new ConcurrentHashMap<>();
    private final AtomicLong latestFirstSendMillis = new AtomicLong();
    private final AtomicInteger mostPending = new AtomicInteger();
    private long startNanos;

    public ChaosLoad(int port, List<String> apiKeys, int perSecond) {
        this(port, apiKeys, perSecond, Map.of());
    }

    /** @param providerOf the provider the jobs of these API keys' tenants name (the rest: the default provider) */
    public ChaosLoad(int port, List<String> apiKeys, int perSecond, Map<String, String> providerOf) {
        this(port, apiKeys, perSecond, providerOf, Map.of());
    }

    /**
     * @param providerOf the provider the jobs of these API keys' tenants name
     * @param poolOf     the pool the jobs of these API keys' tenants name (the rest: the default provider)
     */
    public ChaosLoad(int port, List<String> apiKeys, int perSecond, Map<String, String> providerOf, Map<String, String> poolOf) {
        this.base = "http://127.0.0.1:" + port;
        this.apiKeys = List.copyOf(apiKeys);
        this.providerOf = Map.copyOf(providerOf);
        this.poolOf = Map.copyOf(poolOf);
        this.perSecond = perSecond;
    }

    public void start() {
        long period = 1_000_000_000L / perSecond;
        startNanos = System.nanoTime();
        pace.scheduleAtFixedRate(() -> {
            int index = next.getAndIncrement();
            mostPending.accumulateAndGet(pending.incrementAndGet(), Math::max);
            long planned = startNanos + index * period;
            clients.execute(() -> {
                try {
                    long lateMillis = (System.nanoTime() - planned) / 1_000_000;
                    latestFirstSendMillis.accumulateAndGet(lateMillis, Math::max);
                    if (lateMillis > ON_TIME.toMillis()) {
                        lateArrivals.put(index, lateMillis);
                    }
                    submit(index);
                } catch (RuntimeException e) {
                    violation("job " + index + ": " + e);
                } finally {
                    pending.decrementAndGet();
                }
            });
        }, 0, period, TimeUnit.NANOSECONDS);
        for (int r = 0; r < 2; r++) {
            readers.execute(this::readAll);
        }
    }

    /** The idempotency key of arrival {@code index}. */
    public static String key(int index) {
        return "chaos-" + index;
    }

    /** The invoice number in arrival {@code index}'s inputs: in the prompt a provider is sent, so its calls name their job. */
    public static String invoiceId(int index) {
        return "CH-" + index;
    }

    /** No new jobs from now on; answers when every submitted job was accepted or given up on. */
    public void stopSubmitting() throws InterruptedException {
        pace.shutdownNow();
        pace.awaitTermination(10, TimeUnit.SECONDS);
        clients.shutdown();
        if (!clients.awaitTermination(GIVE_UP.toSeconds() + 30, TimeUnit.SECONDS)) {
            violation(pending.get() + " submissions still unanswered when the load stopped");
        }
    }

    private void submit(int index) {
        String apiKey = apiKeys.get(index % apiKeys.size());
        String key = key(index);
        String provider = providerOf.get(apiKey);
        String pool = poolOf.get(apiKey);
        String target = provider != null ? "\"provider\": \"" + provider + "\", " : pool != null ? "\"pool\": \"" + pool + "\", " : "";
        String body = """
                {%s"preset_id": "%s", "aspect_class": "%s",
                 "inputs": {"supplier_name": "Chaos GmbH", "invoice_id": "%s", "currency": "EUR",
                            "line_items": [{"description": "Soak", "quantity": %d, "unit_price": 3}]}}"""
                .formatted(target, provider == null ? PRESETS.get(index % 2)
                        : "invoice-clean", provider == null ? CLASSES.get(index % 3) : "square", invoiceId(index), 1 + index % 5);
        String jobId = postUntilAnswered(apiKey, key, body);
        if (jobId == null) {
            return;
        }
        Accepted job = new Accepted(key, apiKey, jobId);
        acceptedByKey.put(key, job);
        accepted.add(job);
        if (index % 10 == 3) {
            // The browser retry the idempotency key exists for: same key, same body, same job.
            String again = postUntilAnswered(apiKey, key, body);
            duplicatesAnswered.incrementAndGet();
            if (again != null && !again.equals(jobId)) {
                violation("duplicate of " + key + " answered job " + again + ", first " + jobId);
            }
        }
    }

    /** POSTs until the gateway answers 202/200 with a job; a 503 or no answer is sent again. */
    private String postUntilAnswered(String apiKey, String key, String body) {
        long deadline = System.nanoTime() + GIVE_UP.toNanos();
        while (System.nanoTime() < deadline) {
            HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/jobs")).timeout(Duration.ofSeconds(30))
                    .header("Authorization", "Bearer " + apiKey).header("Idempotency-Key", key)
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
            HttpResponse<String> answer = send(request);
            if (answer == null) {
                pause(200);
                continue;
            }
            JsonNode json = book("POST /v1/jobs", answer);
            if ((answer.statusCode() == 202 || answer.statusCode() == 200) && json != null && json.hasNonNull("job_id")) {
                return json.path("job_id").asText();
            }
            if (answer.statusCode() == 503 || answer.statusCode() == 429) {
                pause(250);
                continue;
            }
            violation("POST " + key + " answered " + answer.statusCode() + " " + answer.body());
            return null;
        }
        violation("POST " + key + " not accepted within " + GIVE_UP.toSeconds() + " s");
        return null;
    }

    private void readAll() {
        while (reading.get()) {
            Accepted job;
            synchronized (accepted) {
                job = accepted.isEmpty() ? null : accepted.get(ThreadLocalRandom.current().nextInt(accepted.size()));
            }
            if (job == null) {
                pause(50);
                continue;
            }
            HttpResponse<String> answer = send(HttpRequest.newBuilder(URI.create(base + "/v1/jobs/" + job.jobId()))
                    .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + job.apiKey()).GET().build());
            if (answer == null) {
                pause(100);
                continue;
            }
            JsonNode json = book("GET /v1/jobs/{id}", answer);
            if (answer.statusCode() == 200 && json != null) {
                String status = json.path("status").asText();
                if (status.equals("succeeded") || status.equals("failed") || status.equals("cancelled")) {
                    Read read = new Read(status, json.path("finalized_at").asText());
                    Read first = firstTerminalRead.putIfAbsent(job.jobId(), read);
                    if (first != null && !first.equals(read)) {
                        violation("job " + job.jobId() + " was read as " + first + ", later as " + read);
                    }
                }
            } else if (answer.statusCode() != 503) {
                violation("GET job " + job.jobId() + " answered " + answer.statusCode() + " " + answer.body());
            }
            pause(40);
        }
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            noAnswer.incrementAndGet(); // port closed, connection reset by a kill, or no answer in time
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Counts the answer; a 404 or a body that is not JSON is a violation. Answers its JSON, or null. */
    private JsonNode book(String what, HttpResponse<String> answer) {
        String type = answer.headers().firstValue("Content-Type").orElse("");
        answers.computeIfAbsent(what + " " + answer.statusCode(), k -> new AtomicLong()).incrementAndGet();
        if (answer.statusCode() == 404) {
            violation(what + " answered 404: " + answer.body());
        }
        if (!type.startsWith("application/json") && !type.startsWith("application/problem+json")) {
            violation(what + " answered " + answer.statusCode() + " as '" + type + "': " + abbreviate(answer.body()));
            return null;
        }
        if (answer.statusCode() == 503 && answer.headers().firstValue("Retry-After").isEmpty()) {
            violation(what + " answered 503 without Retry-After: " + answer.body());
        }
        try {
            return JSON.readTree(answer.body());
        } catch (IOException e) {
            violation(what + " answered " + answer.statusCode() + " with a body that does not parse: " + abbreviate(answer.body()));
            return null;
        }
    }

    private void violation(String what) {
        violations.add(what);
    }

    private static String abbreviate(String text) {
        return text.length() > 200 ? text.substring(0, 200) + "…" : text;
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis); // a client's back-off between tries, not a test waiting
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public List<Accepted> accepted() {
        synchronized (accepted) {
            return List.copyOf(accepted);
        }
    }

    public int submitted() {
        return next.get();
    }

    public Map<String, Read> firstTerminalReads() {
        return Map.copyOf(firstTerminalRead);
    }

    public List<String> violations() {
        synchronized (violations) {
            return List.copyOf(violations);
        }
    }

    public Map<String, Long> answers() {
        Map<String, Long> counts = new java.util.TreeMap<>();
        answers.forEach((k, v) -> counts.put(k, v.get()));
        return counts;
    }

    public long noAnswer() {
        return noAnswer.get();
    }

    public long duplicatesAnswered() {
        return duplicatesAnswered.get();
    }

    /** Arrivals (index → milliseconds late) whose first POST left later than {@link #ON_TIME} after their planned time. */
    public Map<Integer, Long> lateArrivals() {
        return Map.copyOf(lateArrivals);
    }

    /** The latest any arrival's first POST left after its planned time, in milliseconds. */
    public long latestFirstSendMillis() {
        return latestFirstSendMillis.get();
    }

    /** The most arrivals that were waiting for the gateway at once (a kill's downtime shows here). */
    public int mostPending() {
        return mostPending.get();
    }

    @Override
    public void close() throws InterruptedException {
        reading.set(false);
        pace.shutdownNow();
        clients.shutdownNow();
        readers.shutdown();
        readers.awaitTermination(40, TimeUnit.SECONDS);
    }
}
