package io.jobgate.chaos;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.support.Samples;

/**
 * External workers of a pull member for the chaos soak (docs/workers.md): a few threads of the test process, each
 * speaking the HTTP protocol as a worker on another machine would, never touching the gateway's process. Each leases
 * one task at a time with a long poll, renders an image of the exact size and media type its {@code request} asks,
 * {@code PUT}s it to the lease's time-limited {@code output_url} (straight to the S3 API, no key) and completes the
 * task. Now and then a worker behaves as one killed with SIGKILL mid-task ({@link #abandon}: it drops the task, whose
 * lease runs out, and the next worker renders it under the same job and attempt), or fails the task as
 * {@code transient} ({@link #fail}). The gateway is killed and restarted under them: a call that finds no gateway is
 * tried again shortly, until {@link #RIDE_OUT} has passed; a complete whose lease ran out meanwhile hears
 * {@code 409} and changes nothing. {@link #stop()} and {@link #start()} take every worker away and bring them back.
 */
public final class ChaosWorkers implements AutoCloseable {

    /** How long a lease call waits for a task (the long poll), and so how long a stop may take. */
    static final int WAIT_SECONDS = 5;
    /** How long a worker keeps trying a call that finds no gateway (a restart takes a few seconds). */
    static final Duration RIDE_OUT = Duration.ofSeconds(60);
    static final Duration RETRY = Duration.ofMillis(500);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String base;
    private final String member;
    private final String key;
    private final int count;
    private final double abandon;
    private final double fail;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    /** The "model": one image per size and media type, made once (the output check reads its size and type). */
    private final Map<String, byte[]> images = new ConcurrentHashMap<>();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running;
    private int generation;

    private final AtomicLong leased = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong abandoned = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong noGateway = new AtomicLong();
    private final AtomicLong unexpected = new AtomicLong();
    private final List<String> unexpectedAnswers = java.util.Collections.synchronizedList(new ArrayList<>());

    /**
     * @param port    the gateway's port
     * @param member  the pull member the workers lease from
     * @param key     its worker key
     * @param count   how many workers
     * @param abandon the share of leased tasks a worker drops as if killed (its lease runs out)
     * @param fail    the share it fails as {@code transient}
     */
    public ChaosWorkers(int port, String member, String key, int count, double abandon, double fail) {
        this.base = "http://127.0.0.1:" + port;
        this.member = member;
        this.key = key;
        this.count = count;
        this.abandon = abandon;
        this.fail = fail;
    }

    /** Starts the workers (again, after {@link #stop()}): each under a worker id of its own. */
    public synchronized void start() {
        running = true;
        generation++;
        for (int i = 1; i <= count; i++) {
            String id = "chaos-worker-" + i + "." + generation;
            Random random = new Random(31L * generation + i);
            Thread t = new Thread(() -> work(id, random), id);
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
    }

    /** Takes every worker away at once, as a box losing power: a lease in hand is dropped and runs out. */
    public synchronized void stop() throws InterruptedException {
        running = false;
        threads.forEach(Thread::interrupt);
        for (Thread t : threads) {
            t.join(Duration.ofSeconds(WAIT_SECONDS + 10).toMillis());
        }
        threads.clear();
    }

    @Override
    public void close() throws InterruptedException {
        stop();
    }

    private void work(String id, Random random) {
        String ask = "{\"worker_id\": \"" + id + "\", \"max\": 1, \"wait_seconds\": " + WAIT_SECONDS + "}";
        while (running) {
            HttpResponse<String> answer = call("/v1/workers/" + member + "/leases", ask);
            if (answer == null) {
                return; // stopped
            }
            if (answer.statusCode() != 200) {
                note("lease", answer);
                pause();
                continue;
            }
            JsonNode leases = read(answer.body()).path("leases");
            if (leases.isEmpty()) {
                continue; // none came within the wait: ask again
            }
            JsonNode lease = leases.get(0);
            leased.incrementAndGet();
            double roll = random.nextDouble();
            if (!running || roll < abandon) {
                abandoned.incrementAndGet(); // as if killed mid-render: nobody calls again, the lease runs out
                continue;
            }
            String task = lease.path("task_id").asText();
            String token = "{\"lease_token\": \"" + lease.path("lease_token").asText() + "\"";
            if (roll < abandon + fail) {
                end(call("/v1/workers/tasks/" + task + "/fail", token + ", \"category\": \"transient\", "
                        + "\"message\": \"the worker's device reset (chaos)\"}"), failed);
                continue;
            }
            JsonNode request = lease.path("request");
            String mediaType = request.path("output_media_types").path(0).asText("image/png");
            int width = request.path("width").asInt();
            int height = request.path("height").asInt();
            byte[] image = images.computeIfAbsent(mediaType + " " + width + "x" + height,
                    k -> mediaType.equals("image/jpeg") ? Samples.jpeg(width, height) : Samples.png(width, height));
            if (!store(lease.path("output_url").asText(), mediaType, image)) {
                abandoned.incrementAndGet();
                continue;
            }
            end(call("/v1/workers/tasks/" + task + "/complete", token + ", \"media_type\": \"" + mediaType + "\"}"), completed);
        }
    }

    /** The task's end as the gateway took it: 200 counts; 409 (the lease ran out while the gateway was down) changes nothing. */
    private void end(HttpResponse<String> answer, AtomicLong counter) {
        if (answer == null) {
            abandoned.incrementAndGet(); // stopped, or no gateway within the ride-out: the lease runs out
        } else if (answer.statusCode() == 200) {
            counter.incrementAndGet();
        } else if (answer.statusCode() == 409) {
            refused.incrementAndGet();
        } else {
            note("end", answer);
        }
    }

    /** The output, straight to the S3 API at the lease's time-limited URL: its signature is the only credential. */
    private boolean store(String url, String mediaType, byte[] image) {
        try {
            HttpResponse<String> put = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30))
                    .header("Content-Type", mediaType).PUT(HttpRequest.BodyPublishers.ofByteArray(image)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (put.statusCode() == 200) {
                return true;
            }
            note("output_url", put);
        } catch (IOException e) {
            unexpectedAnswers.add("output_url: " + e);
            unexpected.incrementAndGet();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return false;
    }

    /**
     * A call with the member's key, tried again while no gateway answers (killed, restarting, stopping: connection
     * refused or reset, 503) for up to {@link #RIDE_OUT}; null when the worker was stopped or the gateway stayed away.
     */
    private HttpResponse<String> call(String path, String body) {
        long deadline = System.nanoTime() + RIDE_OUT.toNanos();
        while (running && System.nanoTime() < deadline) {
            try {
                HttpResponse<String> answer = http.send(HttpRequest.newBuilder(URI.create(base + path))
                        .timeout(Duration.ofSeconds(WAIT_SECONDS + 20)).header("Authorization", "Bearer " + key)
                        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (answer.statusCode() != 503) {
                    return answer;
                }
                noGateway.incrementAndGet();
            } catch (IOException e) {
                noGateway.incrementAndGet();
            } catch (InterruptedException e) {
                return null;
            }
            if (!pause()) {
                return null;
            }
        }
        return null;
    }

    private boolean pause() {
        try {
            Thread.sleep(RETRY.toMillis());
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    private void note(String call, HttpResponse<String> answer) {
        unexpected.incrementAndGet();
        if (unexpectedAnswers.size() < 20) {
            unexpectedAnswers.add(call + ": " + answer.statusCode() + " " + answer.body());
        }
    }

    private static JsonNode read(String body) {
        try {
            return JSON.readTree(body);
        } catch (IOException e) {
            throw new IllegalStateException("a lease answer that is not JSON: " + body, e);
        }
    }

    public long leased() {
        return leased.get();
    }

    public long completed() {
        return completed.get();
    }

    public long abandoned() {
        return abandoned.get();
    }

    /** Answers no worker expects (neither 200, 409 nor a missing gateway): a few of them, for the report. */
    public List<String> unexpectedAnswers() {
        return List.copyOf(unexpectedAnswers);
    }

    /** The workers' own count: leased, completed, failed as transient, abandoned, refused (409), calls that found no gateway. */
    public String figures() {
        return ("%d workers: %d tasks leased, %d completed, %d failed as transient, %d abandoned (lease left to run out), "
                + "%d ends refused with 409 (lease lost while the gateway was away), %d calls that found no gateway (tried again), "
                + "%d unexpected answers").formatted(count, leased.get(), completed.get(), failed.get(), abandoned.get(),
                refused.get(), noGateway.get(), unexpected.get());
    }
}
