package io.jobgate.worker;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.extension.ResponseDefinitionTransformerV2;
import com.github.tomakehurst.wiremock.http.ResponseDefinition;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;

/**
 * Issue 35: how many calls are in flight is the provider's {@code max-concurrency}, nothing else. Here
 * two dispatch consumers (jobgate.worker.concurrency) and a provider allowing 30 calls, more than the
 * HTTP library's default of 20 connections per host, against a stand-in that holds its answers until
 * told: all 30 calls reach it at once, as the stand-in itself counts them, never one more, each job
 * succeeds on its first attempt, and no lease runs out while a call waits. An answer waiting to be
 * finished holds no slot: the provider's next calls start meanwhile, and with the budget of outputs in
 * memory at 0 its output waits on disk and comes back whole.
 */
class CallsInFlightTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";
    static final int ALLOWED = 30;
    static final String KEY = "wide-tenant-key";

    WireMockServer fake;

    /** The stand-in's own count of the calls at it: the gateway's counters are not the evidence here. */
    final HeldCalls held = new HeldCalls();

    @BeanInject
    ProviderCalls calls;

    @BeanInject
    Worker worker;

    @BeanInject
    AnswersInMemory answersInMemory;

    /** An image of about 150 KiB: over the size below which outputs always stay in memory. */
    static final byte[] IMAGE = io.jobgate.support.Samples.noisyPng(1024, 1536, 100);
    static final String IMAGE_REPLY = "{\"created\": 1, \"data\": [{\"b64_json\": \""
            + java.util.Base64.getEncoder().encodeToString(IMAGE) + "\"}]}";

    @Override
    protected Map<String, String> settings() throws Exception {
        // Delays served without a thread each, so the stand-in itself is no limit.
        // A held call holds one of the stand-in's threads: 64 leave room for every call the provider allows and more.
        fake = stopAfterAll(new WireMockServer(options().dynamicPort().bindAddress("127.0.0.1").containerThreads(64)
                .extensions(held)));
        fake.start();
        Path tenants = Files.createTempFile("jobgate-wide-tenant", ".yaml");
        Files.writeString(tenants, """
                tenants:
                  - id: wide
                    api_key_sha256: %s
                    max_open_jobs: 1000
                    max_running_jobs: 100
                    credit_grants: {initial: 100000000}
                """.formatted(Digests.sha256Hex(KEY)));
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.concurrency", "2"),
                // One answer finished at a time, so answers arriving together wait for a place.
                Map.entry("jobgate.worker.finish-concurrency", "1"),
                // Every output over the smallest set aside waits on disk.
                Map.entry("jobgate.worker.answers-in-memory-max-bytes", "0"),
                Map.entry("jobgate.worker.lease-margin-seconds", "2"),
                Map.entry("jobgate.sweeper.enabled", "true"),
                Map.entry("jobgate.sweeper.period-ms", "200"),
                Map.entry("jobgate.tenants.files", "config/tenants.yaml," + tenants),
                Map.entry("jobgate.provider.fakeimg.base-url", fake.baseUrl()),
                Map.entry("jobgate.provider.fakeimg.max-concurrency", Integer.toString(ALLOWED)),
                Map.entry("jobgate.provider.fakeimg.call-deadline-ms", "20000"),
                Map.entry("jobgate.providers.dirs", "config/providers,src/test/resources/providers"));
    }

    @Test
    void everyCallTheProviderAllowsIsInFlightAtOnceWithoutLosingALease() {
        String tag = Jobs.tag();
        held.holdUntilOpened();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(WorkerTest.pngReply()).withTransformers(HeldCalls.NAME)));
        try {
            List<UUID> ids = postJobs(tag, ALLOWED + 5);

            // No answer comes back until the test says so: all the provider allows reach the stand-in at once,
            // and the jobs beyond it wait without an attempt. Had the gateway called more, they would be held
            // here as well, and counted.
            await().atMost(Duration.ofSeconds(60)).until(() -> held.atOnce() == ALLOWED);
            assertThat(held.most()).as("calls at the stand-in at once, as it counted them").isEqualTo(ALLOWED);
            assertThat(held.arrived()).as("calls that reached the stand-in (its journal logs a call once answered)").isEqualTo(ALLOWED);
            assertThat(withAnAttempt(ids)).isEqualTo(ALLOWED);
            assertThat(calls.inFlight()).isEqualTo(ALLOWED);
            assertThat(heldSlots()).isEqualTo(ALLOWED);

            held.open();
            await().atMost(Duration.ofSeconds(40)).until(() -> ids.stream().allMatch(id -> "succeeded".equals(Jobs.status(id))));
            assertThat(held.most()).as("never more at once than the provider allows").isEqualTo(ALLOWED);
            assertThat(requests(tag)).isEqualTo(ALLOWED + 5);
            assertThat(attemptsNotSucceeded(ids)).isZero();
            assertThat(calls.peak()).isGreaterThanOrEqualTo(ALLOWED);
        } finally {
            held.open();
        }
    }

    @Test
    void answersWaitingToBeFinishedLetTheProvidersNextCallsStart() throws Exception {
        String tag = Jobs.tag();
        // The stand-in answers once all the provider allows are at it at once, and at once after that.
        held.holdUntil(ALLOWED);
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(IMAGE_REPLY).withTransformers(HeldCalls.NAME)));
        // The first answer to reach its place holds the only one until released: every other answer waits.
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.atomic.AtomicBoolean first = new java.util.concurrent.atomic.AtomicBoolean(true);
        worker.injectFaults(step -> {
            if ("called".equals(step) && first.getAndSet(false)) {
                try {
                    release.await(30, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        long setAsideBefore = answersInMemory.setAsideTotal();
        try {
            List<UUID> ids = postJobs(tag, ALLOWED + 3);
            // The provider answered the first 30 calls; their answers wait behind the one held, yet they gave
            // the provider's slots back: the jobs beyond its limit are called while no answer was recorded.
            await().atMost(Duration.ofSeconds(15)).until(() -> requests(tag) == ALLOWED + 3);
            assertThat(ids.stream().filter(id -> "succeeded".equals(Jobs.status(id)))).isEmpty();
            assertThat(held.most()).as("calls at the stand-in at once, as it counted them").isEqualTo(ALLOWED);
            // Every call answered, none finished: only the answer at its place still holds its slot.
            await().atMost(Duration.ofSeconds(15)).until(() -> held.atOnce() == 0 && heldSlots() == 1);
            assertThat(ids.stream().filter(id -> "succeeded".equals(Jobs.status(id)))).isEmpty();
            // The waiting answers' outputs wait on disk, none in memory beyond the one held at its place.
            await().atMost(Duration.ofSeconds(15)).until(() -> calls.waitingToFinish() >= ALLOWED);
            assertThat(answersInMemory.onDiskBytes()).isGreaterThanOrEqualTo((long) ALLOWED * IMAGE.length);
            assertThat(answersInMemory.heldBytes()).isZero();

            release.countDown();
            await().atMost(Duration.ofSeconds(40)).until(() -> ids.stream().allMatch(id -> "succeeded".equals(Jobs.status(id))));
            assertThat(attemptsNotSucceeded(ids)).isZero();
            assertThat(answersInMemory.setAsideTotal() - setAsideBefore).as("every answer's output waited on disk")
                    .isGreaterThanOrEqualTo(ALLOWED + 3);
            await().atMost(Duration.ofSeconds(5)).until(() -> answersInMemory.onDiskBytes() == 0 && answersInMemory.heldBytes() == 0);
            for (UUID id : List.of(ids.get(0), ids.get(ids.size() - 1))) {
                assertThat(api.getBytes(KEY, "/v1/jobs/" + id + "/output")).as("the output as the provider sent it").isEqualTo(IMAGE);
            }
            // Each call's slot and its provider's share of the window came back once: none held, none given twice.
            await().atMost(Duration.ofSeconds(5)).until(() -> heldSlots() == 0);
            assertThat(Db.count("SELECT coalesce(sum(running), 0) FROM provider_window WHERE provider = 'fakeimg'")).isZero();
        } finally {
            release.countDown();
            held.open();
            worker.injectFaults(step -> { });
        }
    }

    /** {@code n} image jobs of the stand-in provider, each accepted. */
    List<UUID> postJobs(String tag, int n) {
        List<UUID> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ApiClient.Response r = api.postJob(KEY, tag + "-" + i, """
                    {"preset_id": "invoice-clean", "preset_version": 1, "aspect_class": "portrait", "provider": "fakeimg",
                     "inputs": {"supplier_name": "%s", "invoice_id": "INV-%d", "currency": "EUR",
                                "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}""".formatted(tag, i));
            assertThat(r.status()).as(r.text()).isEqualTo(202);
            ids.add(UUID.fromString(r.json().path("job_id").asText()));
        }
        return ids;
    }

    /** Jobs of {@code ids} that started an attempt. */
    static long withAnAttempt(List<UUID> ids) {
        return Db.count("SELECT count(*) FROM jobs WHERE job_id = ANY (?::uuid[]) AND attempts > 0",
                (Object) ids.stream().map(UUID::toString).toArray(String[]::new));
    }

    /** The stand-in provider's slots held by a call now. */
    static long heldSlots() {
        return Db.count("SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NOT NULL");
    }

    static long attemptsNotSucceeded(List<UUID> ids) {
        return Db.count("SELECT count(*) FROM attempts WHERE job_id = ANY (?::uuid[]) AND outcome <> 'succeeded'",
                (Object) ids.stream().map(UUID::toString).toArray(String[]::new));
    }

    int requests(String tag) {
        return fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag))).size();
    }

    /**
     * The stand-in's side of the calls: each answer is held from the request's arrival until the gate opens
     * (by the test, or by itself once {@code openAt} calls are held together), and the stand-in counts the
     * calls it holds now and the most it ever held at once. A call counts until its answer is let go, before
     * it is sent: the gateway frees a slot only once it has the answer, so the count never runs ahead of it.
     */
    static final class HeldCalls implements ResponseDefinitionTransformerV2 {
        static final String NAME = "held-calls";

        private final AtomicInteger atOnce = new AtomicInteger();
        private final AtomicInteger most = new AtomicInteger();
        private final AtomicInteger arrived = new AtomicInteger();
        private volatile CountDownLatch gate = new CountDownLatch(0);
        private volatile int openAt = Integer.MAX_VALUE;

        /** From now on answers wait for {@link #open}. */
        void holdUntilOpened() {
            holdUntil(Integer.MAX_VALUE);
        }

        /** From now on answers wait until {@code calls} are held at once, then go, and later ones at once. */
        void holdUntil(int calls) {
            most.set(atOnce.get());
            arrived.set(0);
            openAt = calls;
            gate = new CountDownLatch(1);
        }

        void open() {
            gate.countDown();
        }

        int atOnce() {
            return atOnce.get();
        }

        int most() {
            return most.get();
        }

        /** Calls that reached the stand-in since the last {@link #holdUntil}. */
        int arrived() {
            return arrived.get();
        }

        @Override
        public String getName() {
            return NAME;
        }

        @Override
        public boolean applyGlobally() {
            return false;
        }

        @Override
        public ResponseDefinition transform(ServeEvent event) {
            CountDownLatch waitFor = gate;
            arrived.incrementAndGet();
            int now = atOnce.incrementAndGet();
            most.accumulateAndGet(now, Math::max);
            try {
                if (now >= openAt) {
                    waitFor.countDown();
                }
                // Bounded so that a failed test leaves no thread behind for ever; the test opens it long before.
                waitFor.await(120, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                atOnce.decrementAndGet();
            }
            return event.getResponseDefinition();
        }
    }
}
