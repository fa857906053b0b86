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
    final List<UUID> jobs = new ArrayList<>();

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
        for (UUID id : jobs) {
            api.post(ACME, "/v1/jobs/" + id + "/cancel"); // its task ends: the next test starts with none open
            Jobs.awaitStatus(id, "cancelled");
        }
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
        assertThat(endedSince(before)).containsExactly(Map.entry("tasks", 1.0));
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
        // One task wakes one poll (max 1), not the herd: it leases the task, the others wait out their time.
        List<JsonNode> leased = waiting.stream().flatMap(w -> leases(w.join()).stream()).toList();
        assertThat(leased).extracting(l -> l.path("job_id").asText()).containsExactly(id.toString());
        assertThat(endedSince(before)).containsOnly(Map.entry("over_cap", 1.0), Map.entry("tasks", 1.0),
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
        String body = "{\"worker_id\": \"" + worker + "\", \"max\": " + max + (waitSeconds > 0 ? ", \"wait_seconds\": " + waitSeconds : "") + "}";
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
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "gpubox",
                 "inputs": {"supplier_name": "Long polls", "invoice_id": "W-2", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        jobs.add(id);
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
