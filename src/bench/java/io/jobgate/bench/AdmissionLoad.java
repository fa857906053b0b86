package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * Closed-loop HTTP load: N clients each post jobs back to back with fresh idempotency keys, random
 * UUIDs as real clients send them (each lands on its own page of the key index, as it would with a
 * large history, where sequential keys would all touch the same hot page).
 */
final class AdmissionLoad {

    static final String BODY = """
            {"preset_id": "invoice-clean", "aspect_class": "portrait",
             "inputs": {"supplier_name": "Bench GmbH", "invoice_id": "B-1", "currency": "EUR",
                        "line_items": [{"description": "Load", "quantity": 1, "unit_price": 10}]}}""";

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final URI uri;
    private final String apiKey;
    private final String body;

    AdmissionLoad(int port, String apiKey) {
        this(port, apiKey, BODY);
    }

    AdmissionLoad(int port, String apiKey, String body) {
        this.uri = URI.create("http://127.0.0.1:" + port + "/v1/jobs");
        this.apiKey = apiKey;
        this.body = body;
    }

    /** One admission; returns the job id. */
    String postOne() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(uri)
                .header("Authorization", "Bearer " + apiKey)
                .header("Idempotency-Key", randomKey())
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 202) {
            throw new IllegalStateException("admission answered " + r.statusCode() + ": " + r.body());
        }
        int at = r.body().indexOf("\"job_id\":\"") + 10;
        return r.body().substring(at, r.body().indexOf('"', at));
    }

    record Result(long requests, double perSecond, double p50Millis, double p99Millis, long errors, String firstError) {
    }

    Result run(int clients, Duration warmUp, Duration measure) throws InterruptedException {
        phase(clients, warmUp, false);
        return phase(clients, measure, true);
    }

    private Result phase(int clients, Duration length, boolean record) throws InterruptedException {
        long end = System.nanoTime() + length.toNanos();
        List<long[]> latencies = new ArrayList<>();
        long[] counts = new long[clients];
        long[] errors = new long[clients];
        String[] firstError = new String[1];
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            long[] mine = new long[2_000_000];
            latencies.add(mine);
            int index = i;
            Thread thread = new Thread(() -> {
                int n = 0;
                while (System.nanoTime() < end) {
                    HttpRequest request = HttpRequest.newBuilder(uri)
                            .header("Authorization", "Bearer " + apiKey)
                            .header("Idempotency-Key", randomKey())
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body)).build();
                    long t0 = System.nanoTime();
                    try {
                        HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
                        if (r.statusCode() != 202) {
                            errors[index]++;
                            firstError[0] = r.statusCode() + " " + r.body();
                        }
                    } catch (Exception e) {
                        errors[index]++;
                        firstError[0] = e.toString();
                    }
                    if (n < mine.length) {
                        mine[n++] = System.nanoTime() - t0;
                    }
                }
                counts[index] = n;
            }, "bench-client-" + i);
            thread.start();
            threads.add(thread);
        }
        for (Thread t : threads) {
            t.join();
        }
        if (!record) {
            return null;
        }
        long total = Arrays.stream(counts).sum();
        long[] all = new long[(int) total];
        int k = 0;
        for (int i = 0; i < clients; i++) {
            System.arraycopy(latencies.get(i), 0, all, k, (int) counts[i]);
            k += (int) counts[i];
        }
        Arrays.sort(all);
        return new Result(total, total / (length.toNanos() / 1e9), percentile(all, 0.50), percentile(all, 0.99),
                Arrays.stream(errors).sum(), firstError[0]);
    }

    private static double percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        return sorted[(int) Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] / 1e6;
    }

    static String randomKey() {
        return UUID.randomUUID().toString();
    }
}
