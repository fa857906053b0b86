package io.jobgate.workers;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.api.LeaseWaits;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.PrometheusText;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Workers' long polls (docs/workers.md, "Long polls"): a lease with {@code wait_seconds} on a member with nothing to
 * lease waits, holding no thread, and leases as soon as a task is written here, or a lease runs out (found by the
 * periodic check, as a task written on another instance is); with nothing by its time it answers an empty list.
 * Beyond the cap a poll leases at once; a poll the route would refuse is refused at once.
 */
class LeaseWaitsTest extends GatewayTestBase {

    static final String WORKER_KEY = io.jobgate.support.TestTenants.GPUBOX_WORKER;
    /** This class's cap of waiting polls: the many-polls test fills it exactly. */
    static final int CAP = 120;

    final io.jobgate.support.MovableClock clock = movableClock();
    final ExecutorService clients = Executors.newCachedThreadPool();
    /** This test's jobs, and the key of the tenant that owns each. */
    final Map<UUID, String> jobs = new java.util.LinkedHashMap<>();

    @BeanInject("leaseWaits")
    LeaseWaits leaseWaits;

    @Override
    protected Map<String, String> settings() throws Exception {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml",
                "jobgate.workers.max-waiting-leases", Integer.toString(CAP),
                "jobgate.workers.lease-waits-period-ms", "100"));
    }

    @AfterEach
    void cancelThisTestsJobs() {
        clock.reset();
        for (var job : jobs.entrySet()) {
            UUID id = job.getKey();
            api.post(job.getValue(), "/v1/jobs/" + id + "/cancel"); // its task ends: the next test starts with none open
            Jobs.awaitStatus(id, "cancelled");
        }
        // A cancelled job's task ends with its provider's cancel, just after: none may be left for the next test's polls.
        await().atMost(Duration.ofSeconds(20)).until(() -> io.jobgate.support.Db.count(
                "SELECT count(*) FROM worker_tasks WHERE status IN ('waiting', 'leased')") == 0);
        jobs.clear();
    }

    @AfterAll
    void stopClients() {
        clients.shutdownNow();
    }

    @Test
    void aWaitingPollLeasesATaskAsSoonAsOneIsWritten() {
        assertThat(leases(poll("w-1", 1, 5).join())).as("nothing to lease: answered at once, the member known idle").isEmpty();
        Map<String, Double> before = ended();
        CompletableFuture<ApiClient.Response> waiting = poll("w-1", 1, 30);
        awaitWaiting(1);

        UUID id = submit();
        List<JsonNode> leased = leases(waiting.join());
        assertThat(leased).hasSize(1);
        assertThat(leased.get(0).path("job_id").asText()).isEqualTo(id.toString());
        assertThat(leaseWaits.waiting()).isZero();
        assertThat(endedSince(before)).as("answered with the task as it was written").containsExactly(Map.entry("handed", 1.0));
    }

    /**
     * A task written while polls wait here is leased, in the statement that writes it, to the poll that has waited
     * longest, and that poll is answered with it: no lease call, no wake of the others.
     */
    @Test
    void aTaskWrittenIsLeasedAsItIsWrittenToThePollThatWaitedLongest() {
        poll("w-first", 1, 1).join(); // the member known idle here
        Map<String, Double> before = ended();
        CompletableFuture<ApiClient.Response> first = poll("w-first", 1, 30);
        awaitWaiting(1);
        CompletableFuture<ApiClient.Response> second = poll("w-second", 1, 5);
        awaitWaiting(2);

        UUID id = submit();
        List<JsonNode> leased = leases(first.join());
        assertThat(leased).extracting(l -> l.path("job_id").asText()).containsExactly(id.toString());
        assertThat(leased.get(0).path("request").path("preset_id").asText()).as("the request as the adapter rendered it")
                .isEqualTo("invoice-clean");
        assertThat(second).as("the other poll still waits").isNotDone();
        assertThat(leaseWaits.waiting()).isEqualTo(1);
        assertThat(io.jobgate.support.Db.rows("SELECT worker_id, leases, status, lease_token::text AS token, updated_at = created_at AS "
                + "as_written FROM worker_tasks WHERE job_id = '" + id + "'"))
                .extracting(t -> t.get("worker_id") + " " + t.get("leases") + " " + t.get("status") + " " + t.get("token") + " " + t.get("as_written"))
                .containsExactly("w-first 1 leased " + leased.get(0).path("lease_token").asText() + " true");
        assertThat(leases(second.join())).as("its time ran out").isEmpty();
        assertThat(endedSince(before)).containsOnly(Map.entry("handed", 1.0), Map.entry("timed_out", 1.0));
    }

    /**
     * The member's limit holds for tasks handed as they are written: with all its places leased, a task written while a
     * poll waits is not leased to it; it waits to be leased, and the poll is answered by the lease call (none to take).
     */
    @Test
    void aTaskIsNotHandedToAWaitingPollBeyondTheMembersLimit() {
        int limit = 8; // gpubox's max-concurrency (src/test/resources/workers/providers)
        List<UUID> first = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            first.add(submit(io.jobgate.support.TestTenants.BULK)); // a tenant that may run them all at once
        }
        first.forEach(id -> Jobs.awaitStatus(id, "provider_pending")); // their submits' waits ran out: their places free
        assertThat(leases(poll("w-full", limit, 0).join())).hasSize(limit);
        assertThat(leases(poll("w-beyond", 1, 1).join())).as("none left: the member known idle here").isEmpty();
        CompletableFuture<ApiClient.Response> waiting = poll("w-beyond", 1, 30);
        awaitWaiting(1);
        Map<String, Double> before = ended();

        UUID beyond = submit(io.jobgate.support.TestTenants.BULK);
        assertThat(leases(waiting.join())).as("every place is leased").isEmpty();
        assertThat(io.jobgate.support.Db.rows("SELECT status, leases FROM worker_tasks WHERE job_id = '" + beyond + "'"))
                .extracting(t -> t.get("status") + " " + t.get("leases")).containsExactly("waiting 0");
        assertThat(endedSince(before)).containsExactly(Map.entry("tasks", 1.0));
    }

    /** A task goes only to a poll whose worker runs its revision: a worker of a candidate is not handed a stable task. */
    @Test
    void aTaskIsHandedOnlyToAPollOfItsRevision() {
        String candidatePoll = "{\"worker_id\": \"w-candidate\", \"revision\": \"gpubox-2\", \"wait_seconds\": ";
        ask(candidatePoll + "1}").join(); // the member known idle here, for workers of that revision
        CompletableFuture<ApiClient.Response> candidate = ask(candidatePoll + "30}");
        awaitWaiting(1);

        UUID id = submit();
        assertThat(leases(candidate.join())).as("woken, it finds no task of its revision").isEmpty();
        assertThat(io.jobgate.support.Db.rows("SELECT status FROM worker_tasks WHERE job_id = '" + id + "'"))
                .extracting(t -> t.get("status")).containsExactly("waiting");
        assertThat(leases(poll("w-stable", 1, 0).join())).extracting(l -> l.path("job_id").asText()).containsExactly(id.toString());
    }

    @Test
    void aPollWithNothingToLeaseAnswersAnEmptyListWhenItsTimeIsUp() {
        poll("w-2", 1, 1).join(); // the member known idle here
        Map<String, Double> before = ended();
        ApiClient.Response answer = poll("w-2", 4, 1).join();
        assertThat(answer.status()).as(answer.text()).isEqualTo(200);
        assertThat(answer.json().path("leases").isArray()).isTrue();
        assertThat(leases(answer)).isEmpty();
        assertThat(endedSince(before)).containsExactly(Map.entry("timed_out", 1.0));
    }

    @Test
    void aLeaseThatRanOutWakesAWaitingPollFoundByThePeriodicCheck() {
        UUID id = submit();
        Jobs.awaitStatus(id, "provider_pending"); // its task written
        JsonNode first = leases(poll("w-killed", 1, 0).join()).get(0);
        assertThat(first.path("job_id").asText()).isEqualTo(id.toString());
        assertThat(leases(poll("w-3", 1, 5).join())).as("its only task is leased: idle").isEmpty();
        CompletableFuture<ApiClient.Response> waiting = poll("w-3", 1, 30);
        awaitWaiting(1);

        // No task is written: only the periodic check can find that the lease ran out (60 s, no heartbeat came).
        clock.advance(Duration.ofSeconds(61));
        List<JsonNode> leased = leases(waiting.join());
        assertThat(leased).hasSize(1);
        assertThat(leased.get(0).path("task_id").asText()).isEqualTo(first.path("task_id").asText());
        assertThat(leased.get(0).path("lease_token").asText()).isNotEqualTo(first.path("lease_token").asText());
    }

    @Test
    void manyWaitingPollsHoldNoThreadAndBeyondTheCapAPollLeasesAtOnce() {
        poll("w-many", 1, 1).join(); // the member known idle here
        Map<String, Double> before = ended();
        List<CompletableFuture<ApiClient.Response>> waiting = new ArrayList<>();
        for (int i = 0; i < CAP; i++) {
            waiting.add(poll("w-many-" + i, 1, 5));
        }
        awaitWaiting(CAP);
        // More polls wait than the HTTP server has worker threads (20): were they held on them, this would stall.
        ApiClient.Response health = api.get(null, "/observe/health");
        assertThat(health.status()).isEqualTo(200);
        ApiClient.Response overCap = poll("w-over", 1, 5).join();
        assertThat(overCap.status()).as(overCap.text()).isEqualTo(200);
        assertThat(leases(overCap)).isEmpty();

        UUID id = submit();
        // One task goes to one poll, not the herd: it is answered with the task, the others wait out their time.
        List<JsonNode> leased = waiting.stream().flatMap(w -> leases(w.join()).stream()).toList();
        assertThat(leased).extracting(l -> l.path("job_id").asText()).containsExactly(id.toString());
        assertThat(endedSince(before)).containsOnly(Map.entry("over_cap", 1.0), Map.entry("handed", 1.0),
                Map.entry("timed_out", CAP - 1.0));
    }

    @Test
    void aPollTheRouteWouldRefuseIsRefusedAtOnce() {
        poll("w-4", 1, 1).join(); // the member known idle here
        for (String wait : List.of("31", "-1", "\"5\"", "2.5")) {
            ApiClient.Response r = call("/v1/workers/gpubox/leases", WORKER_KEY, "{\"worker_id\": \"w-4\", \"wait_seconds\": " + wait + "}");
            assertThat(r.code()).as(wait).isEqualTo("invalid_parameter");
        }
        assertThat(call("/v1/workers/gpubox/leases", ACME, "{\"worker_id\": \"w-4\", \"wait_seconds\": 30}").status())
                .as("a tenant's key").isEqualTo(401);
        assertThat(call("/v1/workers/gpubox/leases", WORKER_KEY, "{\"worker_id\": \"w-4\", \"wait_seconds\": 30, \"queue\": \"x\"}")
                .code()).as("an invented field").isEqualTo("invalid_request");
        assertThat(leaseWaits.waiting()).isZero();
    }

    private CompletableFuture<ApiClient.Response> poll(String worker, int max, int waitSeconds) {
        return ask("{\"worker_id\": \"" + worker + "\", \"max\": " + max + (waitSeconds > 0 ? ", \"wait_seconds\": " + waitSeconds : "") + "}");
    }

    private CompletableFuture<ApiClient.Response> ask(String body) {
        return CompletableFuture.supplyAsync(() -> {
            ApiClient.Response r = call("/v1/workers/gpubox/leases", WORKER_KEY, body);
            assertThat(r.status()).as(r.text()).isEqualTo(200);
            return r;
        }, clients);
    }

    private static List<JsonNode> leases(ApiClient.Response r) {
        List<JsonNode> leases = new ArrayList<>();
        r.json().path("leases").forEach(leases::add);
        return leases;
    }

    private void awaitWaiting(int count) {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> leaseWaits.waiting() == count);
    }

    /** A job naming the pull member; its task is written when its attempt starts. */
    private UUID submit() {
        return submit(ACME);
    }

    private UUID submit(String tenantKey) {
        ApiClient.Response r = api.postJob(tenantKey, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "gpubox",
                 "inputs": {"supplier_name": "Long polls", "invoice_id": "W-2", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        jobs.put(id, tenantKey);
        return id;
    }

    /** Polls of this instance ended so far, by why. */
    private Map<String, Double> ended() {
        Map<String, Double> ended = new java.util.HashMap<>();
        PrometheusText.parse(api.send(api.request("/observe/metrics", null).GET().build()).text())
                .find("jobgate_worker_lease_waits_ended_total").forEach(s -> ended.merge(s.labels().get("ended"), s.value(), Double::sum));
        return ended;
    }

    private Map<String, Double> endedSince(Map<String, Double> before) {
        Map<String, Double> since = new java.util.TreeMap<>();
        ended().forEach((why, n) -> {
            double more = n - before.getOrDefault(why, 0.0);
            if (more != 0) {
                since.put(why, more);
            }
        });
        return since;
    }

    private ApiClient.Response call(String path, String key, String json) {
        return api.send(api.request(path, key).header("Content-Type", "application/json").timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }
}
