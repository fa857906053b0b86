package io.jobgate.worker;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpServer;
import io.jobgate.Gateway;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.apache.camel.test.main.junit5.CamelMainTest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Admission first in the running gateway (real HTTP admission, relay, Artemis, PostgreSQL, S3 API, the
 * worker route): while jobs are being accepted, at most busy-concurrency attempts reach the provider at
 * once, every job is still done exactly once, and once admission stops the workers are back to full
 * concurrency within about a second. The provider is a small HTTP server that counts the calls it is
 * serving at once (each takes 150 ms).
 */
@CamelMainTest(mainClass = Gateway.class, propertyPlaceholderLocations = Gateway.SETTINGS)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdmissionFirstRouteTest {

    static final String[] KEYS = {"dev-acme-key", "dev-globex-key"};
    static final int FULL = 4;
    static final long CALL_MILLIS = 150;

    @BeanInject
    AdmissionFirst rule;

    ApiClient api;
    HttpServer provider;
    ExecutorService providerThreads;
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger peak = new AtomicInteger();
    final Map<String, AtomicInteger> callsPerJob = new ConcurrentHashMap<>();

    @BeforeAll
    void boot() throws Exception {
        byte[] reply = ("{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536))
                + "\"}]}").getBytes(StandardCharsets.UTF_8);
        provider = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
        providerThreads = Executors.newCachedThreadPool();
        provider.setExecutor(providerThreads);
        provider.createContext("/v1/images/generations", exchange -> {
            int now = inFlight.incrementAndGet();
            peak.accumulateAndGet(now, Math::max);
            try {
                exchange.getRequestBody().readAllBytes();
                callsPerJob.computeIfAbsent(String.valueOf(exchange.getRequestHeaders().getFirst("Idempotency-Key")),
                        k -> new AtomicInteger()).incrementAndGet();
                TimeUnit.MILLISECONDS.sleep(CALL_MILLIS); // the provider's work: what makes attempts overlap
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                inFlight.decrementAndGet(); // before the answer: the worker's next call cannot overlap this one
            }
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, reply.length);
            exchange.getResponseBody().write(reply);
            exchange.close();
        });
        provider.start();
        api = new ApiClient(GatewayTestSupport.prepare(Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.concurrency", Integer.toString(FULL)),
                Map.entry("jobgate.worker.admission-first.enabled", "true"),
                Map.entry("jobgate.worker.admission-first.busy-concurrency", "1"),
                // Busy from 5 jobs a second (3 in 600 ms), quiet once none came for 600 ms: a loaded machine's
                // client, slower than its 20 a second, keeps admission busy all the same.
                Map.entry("jobgate.worker.admission-first.busy-per-second", "5"),
                Map.entry("jobgate.worker.admission-first.window-ms", "600"),
                Map.entry("jobgate.worker.admission-first.quiet-ms", "300"),
                // The rate alone: whether this machine's CPUs are busy during the test is not the test's to
                // choose (the CPU condition is AdmissionFirstTest's).
                Map.entry("jobgate.worker.admission-first.busy-cpu-percent", "0"),
                // Refreshes meet this test's scrapes: a scrape never sees a refresh half done (SnapshotGauges).
                Map.entry("jobgate.metrics.gauge-period-ms", "200"),
                Map.entry("jobgate.provider.fakeimg.base-url", "http://127.0.0.1:" + provider.getAddress().getPort()),
                Map.entry("jobgate.provider.fakeimg.max-concurrency", "16"))));
    }

    @AfterAll
    void stopProvider() {
        provider.stop(0);
        providerThreads.shutdownNow();
    }

    UUID submit(String key) {
        ApiClient.Response r = api.postJob(key, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "fakeimg",
                 "inputs": {"supplier_name": "Admission First", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    @Test
    void whileAdmissionIsBusyOneAttemptRunsAtOnceNoneIsLostAndFullConcurrencyReturnsWhenItStops() throws Exception {
        List<UUID> jobs = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger next = new AtomicInteger();
        // Admission: 20 jobs a second (busy from 5), two tenants so that dispatch could feed all four workers.
        ScheduledExecutorService clients = Executors.newSingleThreadScheduledExecutor();
        ScheduledFuture<?> load = clients.scheduleAtFixedRate(() -> jobs.add(submit(KEYS[next.getAndIncrement() % 2])),
                0, 50, TimeUnit.MILLISECONDS);
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> rule.limit() == 1);
            // Attempts that started before the limit dropped run on; from when they are done, one at a time.
            await().atMost(Duration.ofSeconds(10)).until(() -> rule.running() <= 1 && inFlight.get() <= 1);
            peak.set(inFlight.get());
            int callsBefore = calls();
            // A backlog the four workers would run four at a time, for two seconds of busy admission.
            await().atMost(Duration.ofSeconds(10)).until(() -> openJobs() >= 2L * FULL);
            await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> rule.limit() == 1);
            assertThat(peak.get()).as("calls at the provider at once while admission was busy").isEqualTo(1);
            assertThat(calls()).as("processing goes on while admission is busy").isGreaterThan(callsBefore);
            assertThat(openJobs()).isGreaterThanOrEqualTo(FULL);
            await().atMost(Duration.ofSeconds(5)).until(() -> rule.waiting() >= 1); // workers held back, messages in hand
            assertThat(metrics()).containsPattern("(?m)^jobgate_worker_attempt_limit(\\{[^}]*\\})? 1\\.0$")
                    .containsPattern("(?m)^jobgate_worker_admission_first_yields_total(\\{[^}]*\\})? [1-9]");
        } finally {
            load.cancel(false);
            clients.shutdown();
            assertThat(clients.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        }
        long stopped = System.nanoTime();
        peak.set(inFlight.get());
        await().atMost(Duration.ofSeconds(5)).until(() -> rule.limit() == FULL);
        assertThat(Duration.ofNanos(System.nanoTime() - stopped)).as("back to full concurrency after admission stopped")
                .isLessThan(Duration.ofMillis(1500));
        await().atMost(Duration.ofSeconds(10)).until(() -> peak.get() >= FULL);

        // None lost, none twice: every accepted job succeeded after exactly one call and one attempt.
        await().atMost(Duration.ofSeconds(60)).until(() -> openJobs() == 0);
        assertThat(jobs).hasSizeGreaterThanOrEqualTo(2 * FULL);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND attempts = 1")).isEqualTo(jobs.size());
        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobs.size());
        assertThat(callsPerJob.keySet()).containsExactlyInAnyOrderElementsOf(jobs.stream().map(UUID::toString).toList());
        assertThat(callsPerJob.values()).allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
        assertThat(rule.running()).isZero();
        assertThat(rule.waiting()).isZero();
        assertThat(metrics()).containsPattern("(?m)^jobgate_worker_attempt_limit(\\{[^}]*\\})? " + FULL + "\\.0$");
    }

    static long openJobs() {
        return Db.count("SELECT count(*) FROM jobs WHERE finalized_at IS NULL");
    }

    int calls() {
        return callsPerJob.values().stream().mapToInt(AtomicInteger::get).sum();
    }

    String metrics() {
        ApiClient.Response r = api.get(null, "/observe/metrics");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        return r.text();
    }
}
