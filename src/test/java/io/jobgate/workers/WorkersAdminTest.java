package io.jobgate.workers;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import io.jobgate.support.PrometheusText;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The operators' view of external workers (docs/workers.md, "Operators"), the gateway on its real parts and this test
 * as the workers of pull member {@code gpubox}: {@code GET /v1/admin/workers} shows the member's pool, its tasks
 * waiting, leased, leased past expiry and ended in the last hour, the leases each worker holds and the workers seen
 * with their last call (written at most once per worker every 5 s); the {@code jobgate_pull_*} series count the same
 * leases, ends and refused calls.
 */
class WorkersAdminTest extends GatewayTestBase {

    final io.jobgate.support.MovableClock clock = movableClock();

    WorkerClient worker;

    @Override
    protected Map<String, String> settings() throws Exception {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml",
                "jobgate.pools.dirs", "src/test/resources/workers/pools",
                "jobgate.metrics.gauge-period-ms", "200"));
    }

    JsonNode view() {
        ApiClient.Response r = api.get(ADMIN, "/v1/admin/workers?provider=gpubox");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        assertThat(r.json().path("members")).hasSize(1);
        return r.json().path("members").get(0);
    }

    static JsonNode entry(JsonNode list, String workerId) {
        for (JsonNode e : list) {
            if (e.path("worker_id").asText().equals(workerId)) {
                return e;
            }
        }
        throw new AssertionError("no " + workerId + " in " + list);
    }

    PrometheusText scrape() {
        ApiClient.Response r = api.get(null, "/observe/metrics");
        assertThat(r.status()).isEqualTo(200);
        return PrometheusText.parse(r.text());
    }

    @Test
    void operatorsSeeTheTasksTheLeasesPerWorkerAndTheWorkersSeen() {
        worker = new WorkerClient(api);
        try {
            walkThrough();
        } finally {
            clock.reset();
        }
    }

    private void walkThrough() {
        UUID[] jobs = {worker.submit("square"), worker.submit("square"), worker.submit("square")};
        JsonNode before = view();
        assertThat(before.path("provider").asText()).isEqualTo("gpubox");
        assertThat(before.path("pools")).extracting(JsonNode::asText).containsExactly("gpus");
        assertThat(before.path("tasks").path("waiting").asLong()).isEqualTo(3);
        assertThat(before.path("tasks").path("leased").asLong()).isZero();
        assertThat(before.path("leases")).isEmpty();
        assertThat(before.path("workers")).isEmpty();

        // box-a takes two tasks (the oldest), box-b the third.
        JsonNode a = worker.lease("box-a", 2);
        JsonNode b = worker.lease("box-b", 1);
        assertThat(a).hasSize(2);
        assertThat(b).hasSize(1);
        assertThat(a.get(0).path("job_id").asText()).isEqualTo(jobs[0].toString());
        assertThat(b.get(0).path("job_id").asText()).isEqualTo(jobs[2].toString());
        JsonNode leased = view();
        assertThat(leased.path("tasks").path("waiting").asLong()).isZero();
        assertThat(leased.path("tasks").path("leased").asLong()).isEqualTo(3);
        assertThat(entry(leased.path("leases"), "box-a").path("leases").asLong()).isEqualTo(2);
        assertThat(entry(leased.path("leases"), "box-b").path("leases").asLong()).isEqualTo(1);
        assertThat(Instant.parse(entry(leased.path("leases"), "box-a").path("oldest_lease_expires_at").asText()))
                .isEqualTo(Instant.parse(a.get(0).path("lease_expires_at").asText()));
        JsonNode seenA = entry(leased.path("workers"), "box-a");
        assertThat(seenA.path("last_call").asText()).isEqualTo("lease");
        assertThat(seenA.path("leases").asLong()).isEqualTo(2);
        assertThat(seenA.path("first_seen_at").asText()).isEqualTo(seenA.path("last_seen_at").asText());
        assertThat(entry(leased.path("workers"), "box-b").path("last_call").asText()).isEqualTo("lease");
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            PrometheusText m = scrape();
            assertThat(m.value("jobgate_pull_tasks", "provider", "gpubox", "status", "leased")).isEqualTo(3);
            assertThat(m.value("jobgate_pull_tasks", "provider", "gpubox", "status", "waiting")).isZero();
            assertThat(m.value("jobgate_pull_workers", "provider", "gpubox")).isEqualTo(2);
        });

        // box-a heartbeats, stores and completes its first task, each call past the 5 s of the one before: each is seen.
        clock.advance(Duration.ofSeconds(6));
        assertThat(worker.heartbeat(a.get(0)).status()).isEqualTo(200);
        assertThat(entry(view().path("workers"), "box-a").path("last_call").asText()).isEqualTo("heartbeat");
        clock.advance(Duration.ofSeconds(6));
        assertThat(worker.putOutput(a.get(0), WorkerClient.render(a.get(0))).status()).isEqualTo(200);
        assertThat(entry(view().path("workers"), "box-a").path("last_call").asText()).isEqualTo("output");
        clock.advance(Duration.ofSeconds(6));
        assertThat(worker.complete(a.get(0)).status()).isEqualTo(200);
        Jobs.awaitStatus(jobs[0], "succeeded");
        // Its fail of the second task comes within 5 s of the complete: not written, the row stays as the complete left it.
        String completedAt = entry(view().path("workers"), "box-a").path("last_seen_at").asText();
        assertThat(worker.fail(a.get(1), "terminal").status()).isEqualTo(200);
        Jobs.awaitStatus(jobs[1], "failed");
        JsonNode seen = entry(view().path("workers"), "box-a");
        assertThat(seen.path("last_call").asText()).isEqualTo("complete");
        assertThat(seen.path("last_seen_at").asText()).isEqualTo(completedAt);
        assertThat(Instant.parse(seen.path("first_seen_at").asText())).isBefore(Instant.parse(completedAt));
        assertThat(Db.count("SELECT count(*) FROM workers_seen WHERE provider = 'gpubox'")).isEqualTo(2);

        // box-b went silent: its lease runs out and shows as such, and its late heartbeat is refused.
        clock.advance(Duration.ofSeconds(61));
        JsonNode lapsed = view();
        assertThat(lapsed.path("tasks").path("leased").asLong()).isZero();
        assertThat(lapsed.path("tasks").path("leased_past_expiry").asLong()).isEqualTo(1);
        JsonNode holderB = entry(lapsed.path("leases"), "box-b");
        assertThat(holderB.path("leases").asLong()).isZero();
        assertThat(holderB.path("leases_past_expiry").asLong()).isEqualTo(1);
        assertThat(Instant.parse(holderB.path("oldest_lease_expires_at").asText())).isBefore(clock.instant());
        assertThat(worker.heartbeat(b.get(0)).code()).isEqualTo("lease_lost");

        // box-c takes it over; then its job is cancelled, and box-c hears so.
        JsonNode c = worker.lease("box-c", 1);
        assertThat(c).hasSize(1);
        assertThat(c.get(0).path("task_id").asText()).isEqualTo(b.get(0).path("task_id").asText());
        assertThat(entry(view().path("leases"), "box-c").path("leases").asLong()).isEqualTo(1);
        assertThat(api.post(ACME, "/v1/jobs/" + jobs[2] + "/cancel").status()).isEqualTo(200);
        Jobs.awaitStatus(jobs[2], "cancelled");
        await("box-c hears of the cancel").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
                .until(() -> "task_cancelled".equals(worker.heartbeat(c.get(0)).code()));

        JsonNode after = view();
        assertThat(after.path("tasks").path("waiting").asLong()).isZero();
        assertThat(after.path("tasks").path("leased").asLong()).isZero();
        assertThat(after.path("tasks").path("leased_past_expiry").asLong()).isZero();
        assertThat(after.path("tasks").path("ended_last_hour").path("succeeded").asLong()).isEqualTo(1);
        assertThat(after.path("tasks").path("ended_last_hour").path("failed").asLong()).isEqualTo(1);
        assertThat(after.path("tasks").path("ended_last_hour").path("cancelled").asLong()).isEqualTo(1);
        assertThat(after.path("leases")).isEmpty();
        assertThat(after.path("workers")).extracting(w -> w.path("worker_id").asText()).as("the most recently seen first")
                .containsExactly("box-c", "box-a", "box-b");
        assertThat(after.path("workers")).allSatisfy(w -> assertThat(w.path("leases").asLong()).isZero());

        // The series: 4 tasks leased (one of them twice), 3 ends by how, the calls refused by code.
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            PrometheusText m = scrape();
            assertThat(m.value("jobgate_pull_tasks", "provider", "gpubox", "status", "leased")).isZero();
            assertThat(m.value("jobgate_pull_tasks", "provider", "gpubox", "status", "lease_expired")).isZero();
            assertThat(m.value("jobgate_pull_workers", "provider", "gpubox")).as("box-c alone called within the minute").isEqualTo(1);
        });
        PrometheusText m = scrape();
        assertThat(m.value("jobgate_pull_leases_total", "provider", "gpubox")).isEqualTo(4);
        assertThat(m.value("jobgate_pull_task_ends_total", "provider", "gpubox", "outcome", "succeeded")).isEqualTo(1);
        assertThat(m.value("jobgate_pull_task_ends_total", "provider", "gpubox", "outcome", "failed")).isEqualTo(1);
        assertThat(m.value("jobgate_pull_task_ends_total", "provider", "gpubox", "outcome", "cancelled")).isEqualTo(1);
        assertThat(m.value("jobgate_pull_calls_refused_total", "provider", "gpubox", "code", "lease_lost")).isEqualTo(1);
        assertThat(m.value("jobgate_pull_calls_refused_total", "provider", "gpubox", "code", "task_cancelled")).isGreaterThanOrEqualTo(1);
    }

    @org.apache.camel.BeanInject
    WorkersSeen seen;

    /** Retention forgets a worker a week after its last call (here of a member no test uses, so the others' rows stay). */
    @Test
    void aWorkerNotSeenForAWeekIsForgotten() {
        Db.update("INSERT INTO workers_seen VALUES ('retired', 'gone', now() - interval '30 days', now() - interval '8 days', 'lease'),"
                + " ('retired', 'resting', now() - interval '30 days', now() - interval '6 days', 'heartbeat')");
        assertThat(seen.forgetGone()).isEqualTo(1);
        assertThat(Db.rows("SELECT worker_id FROM workers_seen WHERE provider = 'retired'")).extracting(r -> r.get("worker_id"))
                .containsExactly("resting");
        Db.update("DELETE FROM workers_seen WHERE provider = 'retired'");
    }

    @Test
    void theViewTakesTheAdminKeyAndNamesOnlyPullMembers() {
        assertThat(api.get(null, "/v1/admin/workers").status()).isEqualTo(401);
        assertThat(api.get(ACME, "/v1/admin/workers").status()).isEqualTo(401);
        assertThat(api.get(WorkerClient.KEY, "/v1/admin/workers").status()).as("a worker key").isEqualTo(401);
        ApiClient.Response all = api.get(ADMIN, "/v1/admin/workers");
        assertThat(all.status()).as(all.text()).isEqualTo(200);
        assertThat(all.json().path("members")).extracting(member -> member.path("provider").asText()).containsExactly("gpubox");
        ApiClient.Response notPull = api.get(ADMIN, "/v1/admin/workers?provider=simulator");
        assertThat(notPull.status()).isEqualTo(404);
        assertThat(notPull.code()).isEqualTo("not_found");
        assertThat(api.get(ADMIN, "/v1/admin/workers?provider=nobody").code()).isEqualTo("not_found");
    }
}
