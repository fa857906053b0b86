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
 *
 * <p>Why a wait ended is read from the gateway's own count ({@code jobgate_api_waiting_reads_ended_total}),
 * never from how long the answer took: a read that ignored its job's end would still answer the same
 * body once its time ran out, only as {@code timed_out}. Each read is given more time than its longest
 * wait, so that what decides is why it ended, not the machine's speed.
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

    /** Longer than any wait (30 s): a read that waits its full time still answers within it. */
    static final long ANSWERED_WITHIN_SECONDS = 60;

    private CompletableFuture<Response> readInBackground(String apiKey, String path) {
        return CompletableFuture.supplyAsync(
                () -> api.send(api.request(path, apiKey).timeout(Duration.ofSeconds(ANSWERED_WITHIN_SECONDS)).GET().build()), clients);
    }

    private Response read(String apiKey, String path) {
        return readInBackground(apiKey, path).join();
    }

    /** Waits of this instance ended so far, by why: final, timed_out, over_cap, disconnected, stopped. */
    private Map<String, Long> endedWaits() {
        String metrics = api.send(api.request("/observe/metrics", null).GET().build()).text();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(
                "(?m)^jobgate_api_waiting_reads_ended_total\\{[^}]*ended=\"([a-z_]+)\"[^}]*\\} ([0-9.Ee+]+)$").matcher(metrics);
        Map<String, Long> ended = new java.util.HashMap<>();
        while (m.find()) {
            ended.put(m.group(1), (long) Double.parseDouble(m.group(2)));
        }
        return ended;
    }

    /** How many more waits ended for each reason since {@code before}; reasons that did not move left out. */
    private Map<String, Long> endedSince(Map<String, Long> before) {
        Map<String, Long> since = new java.util.TreeMap<>();
        endedWaits().forEach((why, n) -> {
            long more = n - before.getOrDefault(why, 0L);
            if (more != 0) {
                since.put(why, more);
            }
        });
        return since;
    }

    private void awaitWaiting(int count) {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> waitingReads.waiting() == count);
    }

    @Test
    void aWaitingReadAnswersAsSoonAsTheJobEndsWithThePlainReadsBody() throws Exception {
        String id = newJob(ACME);
        Map<String, Long> before = endedWaits();
        CompletableFuture<Response> waiting = readInBackground(ACME, "/v1/jobs/" + id + "?wait=30");
        awaitWaiting(1);
        assertThat(waiting).isNotDone();

        Response cancel = api.post(ACME, "/v1/jobs/" + id + "/cancel");
        assertThat(cancel.status()).as(cancel.text()).isEqualTo(200);

        Response answered = waiting.get(ANSWERED_WITHIN_SECONDS, TimeUnit.SECONDS);
        assertThat(answered.status()).as(answered.text()).isEqualTo(200);
        assertThat(answered.contentType()).startsWith("application/json");
        assertThat(answered.json().path("status").asText()).isEqualTo("cancelled");
        // Exactly the body a plain read gives (the job is terminal: it never changes again).
        assertThat(answered.text()).isEqualTo(api.get(ACME, "/v1/jobs/" + id).text());
        // Answered because the job ended (a check every 250 ms), not because its 30 s ran out.
        assertThat(endedSince(before)).isEqualTo(Map.of("final", 1L));
        awaitWaiting(0);
    }

    /**
     * A read asking for 1 s, parked after one asking for 30 s, is answered as its time runs out while the
     * other still waits: each wait keeps its own N, neither answered at once nor held to the longest.
     */
    @Test
    void aJobThatDoesNotEndIsAnsweredAfterItsWaitAsItIs() throws Exception {
        String longer = newJob(ACME);
        String id = newJob(ACME);
        Map<String, Long> before = endedWaits();
        CompletableFuture<Response> waitingLonger = readInBackground(ACME, "/v1/jobs/" + longer + "?wait=30");
        awaitWaiting(1);
        Response answered = read(ACME, "/v1/jobs/" + id + "?wait=1");

        assertThat(answered.status()).as(answered.text()).isEqualTo(200);
        assertThat(answered.json().path("status").asText()).isEqualTo("queued");
        assertThat(answered.text()).isEqualTo(api.get(ACME, "/v1/jobs/" + id).text());
        assertThat(endedSince(before)).as("it waited, and ended with its time").isEqualTo(Map.of("timed_out", 1L));
        assertThat(waitingLonger).as("the 30 s read parked before it").isNotDone();
        assertThat(waitingReads.waiting()).isEqualTo(1);

        api.post(ACME, "/v1/jobs/" + longer + "/cancel");
        assertThat(waitingLonger.get(ANSWERED_WITHIN_SECONDS, TimeUnit.SECONDS).json().path("status").asText()).isEqualTo("cancelled");
        awaitWaiting(0);
        api.post(ACME, "/v1/jobs/" + id + "/cancel");
    }

    @Test
    void aTerminalJobAndAReadWithoutWaitAreAnsweredAtOnce() {
        String id = newJob(ACME);
        Response plain = api.get(ACME, "/v1/jobs/" + id);
        assertThat(plain.status()).isEqualTo(200);
        assertThat(plain.json().path("status").asText()).isEqualTo("queued");

        api.post(ACME, "/v1/jobs/" + id + "/cancel");
        Map<String, Long> before = endedWaits();
        Response ended = read(ACME, "/v1/jobs/" + id + "?wait=30");
        assertThat(ended.status()).isEqualTo(200);
        assertThat(ended.json().path("status").asText()).isEqualTo("cancelled");
        // Answered by the route at once: it never waited, so no wait ended.
        assertThat(endedSince(before)).isEmpty();
    }

    @Test
    void aWaitThatIsNotOneWholeNumberFrom1To30IsRefusedWith422() {
        String id = newJob(ACME);
        Map<String, Long> before = endedWaits();
        for (String query : List.of("wait=0", "wait=31", "wait=-1", "wait=abc", "wait=1.5", "wait=", "wait=05", "wait=%2B5",
                "wait=5s", "wait=1&wait=2", "wait=99999999999")) {
            Response refused = read(ACME, "/v1/jobs/" + id + "?" + query);
            assertThat(refused.status()).as(query + ": " + refused.text()).isEqualTo(422);
            assertThat(refused.code()).as(query).isEqualTo("invalid_input");
            assertThat(refused.json().path("field").asText()).as(query).isEqualTo("wait");
            assertThat(refused.contentType()).startsWith("application/problem+json");
        }
        // Refused without waiting first: no wait began, so none ended.
        assertThat(endedSince(before)).isEmpty();
        assertThat(waitingReads.waiting()).isZero();
    }

    @Test
    void anotherTenantsJobAnUnknownJobAndABadKeyAreAnsweredAtOnceAsWithoutWait() {
        String globexJob = newJob(GLOBEX);
        Map<String, Long> before = endedWaits();
        for (String path : List.of("/v1/jobs/" + globexJob + "?wait=30", "/v1/jobs/" + UUID.randomUUID() + "?wait=30",
                "/v1/jobs/not-a-uuid?wait=30")) {
            Response notYours = read(ACME, path);
            assertThat(notYours.status()).as(path).isEqualTo(404);
            assertThat(notYours.code()).isEqualTo("job_not_found");
        }
        Response badKey = read("no-such-key", "/v1/jobs/" + globexJob + "?wait=30");
        assertThat(badKey.status()).isEqualTo(401);
        assertThat(badKey.code()).isEqualTo("unauthorized");
        // All answered by the route without waiting first: no wait began, so none ended.
        assertThat(endedSince(before)).isEmpty();
        // Its own tenant waits for it.
        CompletableFuture<Response> own = readInBackground(GLOBEX, "/v1/jobs/" + globexJob + "?wait=30");
        awaitWaiting(1);
        api.post(GLOBEX, "/v1/jobs/" + globexJob + "/cancel");
        assertThat(own.join().json().path("status").asText()).isEqualTo("cancelled");
        assertThat(endedSince(before)).isEqualTo(Map.of("final", 1L));
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
        Map<String, Long> before = endedWaits();
        List<CompletableFuture<Response>> waiting = ids.stream()
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
        Response overCap = read(ACME, "/v1/jobs/" + over + "?wait=30");
        assertThat(overCap.status()).isEqualTo(200);
        assertThat(overCap.json().path("status").asText()).isEqualTo("queued");
        // Answered at once, as it was: the waiters that filled the cap all still wait.
        assertThat(endedSince(before)).isEqualTo(Map.of("over_cap", 1L));
        assertThat(waiting).noneMatch(CompletableFuture::isDone);
        assertThat(waitingReads.waiting()).isEqualTo(CAP);

        List<CompletableFuture<Response>> cancels = ids.stream()
                .map(id -> CompletableFuture.supplyAsync(() -> api.post(ACME, "/v1/jobs/" + id + "/cancel"), clients)).toList();
        for (CompletableFuture<Response> cancel : cancels) {
            assertThat(cancel.get(ANSWERED_WITHIN_SECONDS, TimeUnit.SECONDS).status()).isEqualTo(200);
        }
        for (int i = 0; i < CAP; i++) {
            Response answered = waiting.get(i).get(ANSWERED_WITHIN_SECONDS, TimeUnit.SECONDS);
            assertThat(answered.status()).isEqualTo(200);
            assertThat(answered.json().path("job_id").asText()).isEqualTo(ids.get(i));
            assertThat(answered.json().path("status").asText()).isEqualTo("cancelled");
        }
        // Every waiter ended on its job's end, none by its 30 s: had the waiters held the workers, the cancels
        // would have queued behind them until their time ran out, and each read answered the job still queued.
        assertThat(endedSince(before)).isEqualTo(Map.of("over_cap", 1L, "final", (long) CAP));
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
