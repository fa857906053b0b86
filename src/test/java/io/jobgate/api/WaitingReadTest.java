package io.jobgate.api;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.GatewayTestBase;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code GET /v1/jobs/{id}?wait=N} over real HTTP against the real gateway: it answers when the job
 * ends (any path that ends it; here the tenant's cancel, which tells the waiting reads nothing: they
 * find out from PostgreSQL as they would for a job another instance ended), or after N seconds, with
 * the body a plain read gives; and it holds no thread while it waits. No worker runs in this class, so
 * a job stays queued until it is cancelled.
 */
class WaitingReadTest extends GatewayTestBase {

    /** This class's cap of waiting reads: the many-waiters test fills it exactly. */
    static final int CAP = 40;

    final ExecutorService clients = Executors.newCachedThreadPool();

    @BeanInject("waitingReads")
    WaitingReads waitingReads;

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.api.max-waiting-reads", Integer.toString(CAP));
    }

    @AfterAll
    void stopClients() {
        clients.shutdownNow();
    }

    private String newJob(String apiKey) {
        Response r = api.postJob(apiKey, "wait-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Waiting GmbH", "invoice_id": "INV-2026-040", "currency": "EUR",
                            "line_items": [{"description": "Consulting", "quantity": 1, "unit_price": 10}]}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return r.json().path("job_id").asText();
    }

    /** A read in the background, with how long it took. */
    record Timed(Response response, Duration took) {
    }

    private CompletableFuture<Timed> readInBackground(String apiKey, String path) {
        return CompletableFuture.supplyAsync(() -> {
            long start = System.nanoTime();
            Response r = api.send(api.request(path, apiKey).timeout(Duration.ofSeconds(60)).GET().build());
            return new Timed(r, Duration.ofNanos(System.nanoTime() - start));
        }, clients);
    }

    private Timed read(String apiKey, String path) {
        return readInBackground(apiKey, path).join();
    }

    private void awaitWaiting(int count) {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> waitingReads.waiting() == count);
    }

    @Test
    void aWaitingReadAnswersAsSoonAsTheJobEndsWithThePlainReadsBody() throws Exception {
        String id = newJob(ACME);
        CompletableFuture<Timed> waiting = readInBackground(ACME, "/v1/jobs/" + id + "?wait=5");
        awaitWaiting(1);
        assertThat(waiting).isNotDone();

        Response cancel = api.post(ACME, "/v1/jobs/" + id + "/cancel");
        assertThat(cancel.status()).as(cancel.text()).isEqualTo(200);

        Timed answered = waiting.get(10, TimeUnit.SECONDS);
        assertThat(answered.response().status()).as(answered.response().text()).isEqualTo(200);
        assertThat(answered.response().contentType()).startsWith("application/json");
        assertThat(answered.response().json().path("status").asText()).isEqualTo("cancelled");
        // Exactly the body a plain read gives (the job is terminal: it never changes again).
        assertThat(answered.response().text()).isEqualTo(api.get(ACME, "/v1/jobs/" + id).text());
        // Answered on the job's end (a check every 250 ms), not at the end of its 5 s.
        assertThat(answered.took()).isLessThan(Duration.ofMillis(4500));
        awaitWaiting(0);
    }

    @Test
    void aJobThatDoesNotEndIsAnsweredAfterItsWaitAsItIs() {
        String id = newJob(ACME);
        Timed answered = read(ACME, "/v1/jobs/" + id + "?wait=2");

        assertThat(answered.response().status()).as(answered.response().text()).isEqualTo(200);
        assertThat(answered.response().json().path("status").asText()).isEqualTo("queued");
        assertThat(answered.took()).isGreaterThanOrEqualTo(Duration.ofMillis(1900)).isLessThan(Duration.ofSeconds(10));
        assertThat(answered.response().text()).isEqualTo(api.get(ACME, "/v1/jobs/" + id).text());
        assertThat(waitingReads.waiting()).isZero();
    }

    @Test
    void aTerminalJobAndAReadWithoutWaitAreAnsweredAtOnce() {
        String id = newJob(ACME);
        Response plain = api.get(ACME, "/v1/jobs/" + id);
        assertThat(plain.status()).isEqualTo(200);
        assertThat(plain.json().path("status").asText()).isEqualTo("queued");

        api.post(ACME, "/v1/jobs/" + id + "/cancel");
        Timed ended = read(ACME, "/v1/jobs/" + id + "?wait=30");
        assertThat(ended.response().status()).isEqualTo(200);
        assertThat(ended.response().json().path("status").asText()).isEqualTo("cancelled");
        assertThat(ended.took()).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void aWaitThatIsNotOneWholeNumberFrom1To30IsRefusedWith422() {
        String id = newJob(ACME);
        for (String query : List.of("wait=0", "wait=31", "wait=-1", "wait=abc", "wait=1.5", "wait=", "wait=05", "wait=%2B5",
                "wait=5s", "wait=1&wait=2", "wait=99999999999")) {
            Timed refused = read(ACME, "/v1/jobs/" + id + "?" + query);
            assertThat(refused.response().status()).as(query + ": " + refused.response().text()).isEqualTo(422);
            assertThat(refused.response().code()).as(query).isEqualTo("invalid_input");
            assertThat(refused.response().json().path("field").asText()).as(query).isEqualTo("wait");
            assertThat(refused.response().contentType()).startsWith("application/problem+json");
            assertThat(refused.took()).as(query).isLessThan(Duration.ofSeconds(5));
        }
        assertThat(waitingReads.waiting()).isZero();
    }

    @Test
    void anotherTenantsJobAnUnknownJobAndABadKeyAreAnsweredAtOnceAsWithoutWait() {
        String globexJob = newJob(GLOBEX);
        for (String path : List.of("/v1/jobs/" + globexJob + "?wait=30", "/v1/jobs/" + UUID.randomUUID() + "?wait=30",
                "/v1/jobs/not-a-uuid?wait=30")) {
            Timed notYours = read(ACME, path);
            assertThat(notYours.response().status()).as(path).isEqualTo(404);
            assertThat(notYours.response().code()).isEqualTo("job_not_found");
            assertThat(notYours.took()).as(path).isLessThan(Duration.ofSeconds(5));
        }
        Timed badKey = read("no-such-key", "/v1/jobs/" + globexJob + "?wait=30");
        assertThat(badKey.response().status()).isEqualTo(401);
        assertThat(badKey.response().code()).isEqualTo("unauthorized");
        assertThat(badKey.took()).isLessThan(Duration.ofSeconds(5));
        // Its own tenant waits for it.
        CompletableFuture<Timed> own = readInBackground(GLOBEX, "/v1/jobs/" + globexJob + "?wait=30");
        awaitWaiting(1);
        api.post(GLOBEX, "/v1/jobs/" + globexJob + "/cancel");
        assertThat(own.join().response().json().path("status").asText()).isEqualTo("cancelled");
        awaitWaiting(0);
    }

    /**
     * Twice the Vert.x worker pool (20) waits at once, and the API still answers meanwhile: the cancels
     * that end their jobs need workers of that pool, and would queue behind the waiters until their 30 s
     * ran out if each waiter held one. One more waiting read beyond the cap answers at once.
     */
    @Test
    void moreWaitersThanTheWorkerPoolHoldNoThreadAndAllAnswerOnceTheirJobsEnd() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < CAP; i++) {
            ids.add(newJob(ACME));
        }
        List<CompletableFuture<Timed>> waiting = ids.stream()
                .map(id -> readInBackground(ACME, "/v1/jobs/" + id + "?wait=30")).toList();
        awaitWaiting(CAP);
        // No Vert.x worker is inside Camel or jobgate code (an idle one waits on its pool's queue).
        List<String> busy = Thread.getAllStackTraces().entrySet().stream()
                .filter(e -> e.getKey().getName().startsWith("vert.x-worker-thread"))
                .filter(e -> java.util.Arrays.stream(e.getValue()).anyMatch(f -> f.getClassName().startsWith("org.apache.camel")
                        || f.getClassName().startsWith("io.jobgate")))
                .map(e -> e.getKey().getName()).toList();
        assertThat(busy).as("Vert.x workers busy while %d reads wait", CAP).isEmpty();

        // Over the cap: answered at once with the job as it is.
        String over = newJob(ACME);
        Timed overCap = read(ACME, "/v1/jobs/" + over + "?wait=30");
        assertThat(overCap.response().status()).isEqualTo(200);
        assertThat(overCap.response().json().path("status").asText()).isEqualTo("queued");
        assertThat(overCap.took()).isLessThan(Duration.ofSeconds(5));

        long start = System.nanoTime();
        List<CompletableFuture<Response>> cancels = ids.stream()
                .map(id -> CompletableFuture.supplyAsync(() -> api.post(ACME, "/v1/jobs/" + id + "/cancel"), clients)).toList();
        for (CompletableFuture<Response> cancel : cancels) {
            assertThat(cancel.get(20, TimeUnit.SECONDS).status()).isEqualTo(200);
        }
        for (int i = 0; i < CAP; i++) {
            Timed answered = waiting.get(i).get(20, TimeUnit.SECONDS);
            assertThat(answered.response().status()).isEqualTo(200);
            assertThat(answered.response().json().path("job_id").asText()).isEqualTo(ids.get(i));
            assertThat(answered.response().json().path("status").asText()).isEqualTo("cancelled");
        }
        // All ended well before the 30 s any of them would have held a worker for.
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
        awaitWaiting(0);
        api.post(ACME, "/v1/jobs/" + over + "/cancel");
    }

    @Test
    void aWaiterWhoseClientGoesAwayIsDropped() throws Exception {
        String id = newJob(ACME);
        try (Socket socket = new Socket("127.0.0.1", java.net.URI.create(api.base()).getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write(("GET /v1/jobs/" + id + "?wait=30 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + ACME
                    + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            awaitWaiting(1);
        }
        awaitWaiting(0); // long before its 30 s
        // The job is still there and readable; nothing was answered to nobody.
        assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("status").asText()).isEqualTo("queued");
        api.post(ACME, "/v1/jobs/" + id + "/cancel");
    }
}
