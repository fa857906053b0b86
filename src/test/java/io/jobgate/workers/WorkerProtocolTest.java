package io.jobgate.workers;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.simulator.InvoiceRenderer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The worker protocol end to end (docs/workers.md), the gateway on its real parts and this test as the external
 * worker of pull member {@code gpubox} (src/test/resources/workers): a job naming it waits for a worker to lease its
 * task, store the rendered invoice and complete it (its submit for 2 s, then in {@code provider_pending}); the gateway
 * checks and promotes the output, finalizes once and debits once. A stale token, a wrong key, an invented field change nothing; an output of
 * the wrong size fails the job as {@code invalid_output}; a lease that ran out goes to another worker under the same
 * job; a cancel reaches the worker at its next heartbeat.
 */
class WorkerProtocolTest extends GatewayTestBase {

    static final String WORKER_KEY = io.jobgate.support.TestTenants.GPUBOX_WORKER;

    final io.jobgate.support.MovableClock clock = movableClock();
    @org.apache.camel.BeanInject
    org.apache.camel.CamelContext context;
    @org.apache.camel.BeanInject
    WorkerTasks workerTasks;

    @Override
    protected Map<String, String> settings() throws Exception {
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml"));
    }

    @Test
    void aLeasedTaskRenderedByTheWorkerIsCheckedPromotedAndChargedOnce() throws Exception {
        UUID id = submit("portrait");
        JsonNode lease = leaseOf(id, "worker-1");
        assertThat(lease.path("attempt").asInt()).isEqualTo(1);
        JsonNode request = lease.path("request");
        assertThat(request.path("width").asInt()).isEqualTo(1024);
        assertThat(request.path("height").asInt()).isEqualTo(1536);
        assertThat(request.path("preset_id").asText()).isEqualTo("invoice-clean");
        String task = lease.path("task_id").asText();
        String token = lease.path("lease_token").asText();

        byte[] png = InvoiceRenderer.render(request.path("inputs"), 1024, 1536, "image/png", false, 1);
        assertThat(complete(task, token).code()).as("no output stored yet").isEqualTo("output_missing");
        assertThat(putOutput(task, UUID.randomUUID().toString(), png).code()).as("a stale token").isEqualTo("lease_lost");
        assertThat(putOutput(task, token, png).status()).isEqualTo(200);
        assertThat(call("/v1/workers/tasks/" + task + "/heartbeat", ACME, "{\"lease_token\": \"" + token + "\"}").status())
                .as("a tenant's key").isEqualTo(401);
        assertThat(call("/v1/workers/tasks/" + task + "/complete", WORKER_KEY, "{\"lease_token\": \"" + token
                + "\", \"media_type\": \"image/png\", \"output_url\": \"http://elsewhere\"}").code()).as("an invented field").isEqualTo("invalid_request");
        assertThat(Jobs.status(id)).isEqualTo("provider_pending");

        ApiClient.Response done = complete(task, token);
        assertThat(done.status()).as(done.text()).isEqualTo(200);
        Jobs.awaitStatus(id, "succeeded");
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(complete(task, token).code()).as("complete again").isEqualTo("task_ended");
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "'"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome")).containsExactly("gpubox:pending");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isZero();
    }

    /**
     * A worker that ends the task while its submit still waits (the member's call-deadline-ms, 2 s) answers the submit
     * itself: the job takes a provider's synchronous answer's path, its attempt recorded from the answer (succeeded), with
     * no {@code provider_pending} and no lookup; the worker's output is read once, by its complete.
     */
    @Test
    void aWorkerThatEndsTheTaskWhileItsSubmitWaitsAnswersTheSubmit() throws Exception {
        Leased leased = leasedWhileItsSubmitWaits();
        UUID id = leased.job();
        String task = leased.task();
        String token = leased.token();
        byte[] png = leased.png();
        // The output as the complete's own body: one call; a wrong token or billed units change nothing.
        assertThat(completeWith(task, UUID.randomUUID().toString(), png, "2.5").code()).as("a stale token").isEqualTo("lease_lost");
        assertThat(completeWith(task, token, png, "-1").code()).isEqualTo("invalid_parameter");
        assertThat(completeWith(task, token, new byte[0], "2.5").code()).isEqualTo("invalid_parameter");
        ApiClient.Response done = completeWith(task, token, png, "2.5");
        assertThat(done.status()).as(done.text()).isEqualTo(200);

        Jobs.awaitStatus(id, "succeeded");
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "'"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome")).as("the submit's own answer").containsExactly("gpubox:succeeded");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(complete(task, token).code()).as("complete again").isEqualTo("task_ended");
        assertThat(Db.rows("SELECT billed_units, billed_unit FROM worker_tasks WHERE task_id = '" + task + "'"))
                .extracting(t -> new java.math.BigDecimal(t.get("billed_units").toString()).stripTrailingZeros().toPlainString() + " " + t.get("billed_unit"))
                .containsExactly("2.5 gpu_seconds");
    }

    /**
     * Several instances: a worker's end that reached another instance while the job's submit waits on this one is told
     * over the topic {@code jobs.worker-ends}, and the waiting submit answers with it (the output read from where the
     * complete stored it): here the other instance's complete is the task's end written as it writes it, then its
     * message sent as its route sends it.
     */
    @Test
    void aWorkersEndToldByAnotherInstanceAnswersTheSubmitWaitingHere() throws Exception {
        Leased leased = leasedWhileItsSubmitWaits();
        UUID id = leased.job();
        String task = leased.task();
        String token = leased.token();
        byte[] png = leased.png();
        assertThat(putOutput(task, token, png).status()).isEqualTo(200);
        WorkerTasks.Task live = workerTasks.find(UUID.fromString(task)).orElseThrow();
        assertThat(workerTasks.complete(live.taskId(), live.leaseToken(), TaskObjects.outputKey(live.taskId(), live.leases()),
                "image/png", null, null).ok()).isTrue();
        jakarta.jms.ConnectionFactory factory = context.getRegistry().lookupByNameAndType("jmsConnectionFactory", jakarta.jms.ConnectionFactory.class);
        try (var connection = factory.createConnection(); jakarta.jms.Session session = connection.createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE)) {
            session.createProducer(session.createTopic("jobs.worker-ends")).send(session.createTextMessage(
                    "{\"job_id\": \"" + id + "\", \"attempt\": 1}"));
        }
        Jobs.awaitStatus(id, "succeeded");
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(png);
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "'"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome")).as("the submit's own answer").containsExactly("gpubox:succeeded");
    }

    /**
     * The other side: a complete that reaches an instance where no submit waits, for a job still being submitted (its
     * submit waiting elsewhere), is told on the topic {@code jobs.worker-ends}. The job here was made as another
     * instance's submit leaves it: submitting, its attempt's task written, no answer recorded.
     */
    @Test
    void aCompleteForAJobSubmittedElsewhereIsToldToEveryInstance() throws Exception {
        UUID id = io.jobgate.support.JobFactory.onTestDatabase().job("acme").provider("gpubox").status("submitting").attempts(1).insert();
        workerTasks.submit("gpubox", id, 1, "{}");
        JsonNode lease = waitingLeaseOf(id);
        jakarta.jms.ConnectionFactory factory = context.getRegistry().lookupByNameAndType("jmsConnectionFactory", jakarta.jms.ConnectionFactory.class);
        try (var connection = factory.createConnection(); jakarta.jms.Session session = connection.createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE)) {
            jakarta.jms.MessageConsumer ends = session.createConsumer(session.createTopic("jobs.worker-ends"));
            connection.start();
            byte[] png = InvoiceRenderer.render(io.jobgate.common.Json.MAPPER.readTree(WorkerClient.INPUTS), 1024, 1024, "image/png", false, 1);
            ApiClient.Response done = completeWith(lease.path("task_id").asText(), lease.path("lease_token").asText(), png, "1");
            assertThat(done.status()).as(done.text()).isEqualTo(200);
            jakarta.jms.Message told = ends.receive(10_000);
            assertThat(told).as("told on the topic").isNotNull();
            JsonNode body = io.jobgate.common.Json.MAPPER.readTree(((jakarta.jms.TextMessage) told).getText());
            assertThat(body.path("job_id").asText()).isEqualTo(id.toString());
            assertThat(body.path("attempt").asInt()).isEqualTo(1);
            assertThat(java.util.Collections.list(told.getPropertyNames())).as("no HTTP header travels")
                    .noneMatch(name -> name.toString().equalsIgnoreCase("Authorization") || name.toString().equalsIgnoreCase("Lease-Token"));
        }
        assertThat(Jobs.status(id)).as("its own submit answers it, not this instance").isEqualTo("submitting");
    }

    /** A square job's task, leased while its submit still waits, and the invoice rendered for it beforehand. */
    private record Leased(UUID job, String task, String token, byte[] png) {
    }

    /** Renders first, so that the task can be ended within its submit's wait (the member's call-deadline-ms, 2 s). */
    private Leased leasedWhileItsSubmitWaits() throws Exception {
        byte[] png = InvoiceRenderer.render(io.jobgate.common.Json.MAPPER.readTree(WorkerClient.INPUTS), 1024, 1024, "image/png", false, 1);
        UUID id = new WorkerClient(api).submitted("square");
        JsonNode lease = waitingLeaseOf(id);
        return new Leased(id, lease.path("task_id").asText(), lease.path("lease_token").asText(), png);
    }

    /** Leases with a short long poll until the job's task comes (its submit may still be writing it). */
    private JsonNode waitingLeaseOf(UUID job) {
        for (int round = 0; round < 20; round++) {
            ApiClient.Response r = call("/v1/workers/gpubox/leases", WORKER_KEY, "{\"worker_id\": \"worker-quick\", \"max\": 8, \"wait_seconds\": 1}");
            for (JsonNode leased : r.json().path("leases")) {
                if (leased.path("job_id").asText().equals(job.toString())) {
                    return leased;
                }
            }
        }
        throw new AssertionError("the task of job " + job + " was never leased");
    }

    @Test
    void anOutputOfTheWrongSizeFailsTheJobAsInvalidOutputAndIsNeverReadable() {
        UUID id = submit("square");
        JsonNode lease = leaseOf(id, "worker-1");
        String task = lease.path("task_id").asText();
        String token = lease.path("lease_token").asText();
        byte[] wrong = InvoiceRenderer.render(lease.path("request").path("inputs"), 1088, 1024, "image/png", false, 1);
        assertThat(putOutput(task, token, wrong).status()).isEqualTo(200);
        assertThat(complete(task, token).status()).isEqualTo(200);
        Jobs.awaitStatus(id, "failed");
        assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("error").path("category").asText()).isEqualTo("invalid_output");
        assertThat(api.get(ACME, "/v1/jobs/" + id + "/output").status()).isEqualTo(409);
    }

    @Test
    void aLeaseThatRanOutGoesToAnotherWorkerUnderTheSameJobAndTheFirstIsRefused() {
        UUID id = submit("square");
        JsonNode first = leaseOf(id, "worker-killed");
        clock.advance(Duration.ofSeconds(61)); // jobgate.workers.lease-seconds: 60, and no heartbeat came
        try {
            leaseRanOut(id, first);
        } finally {
            clock.reset();
        }
    }

    private void leaseRanOut(UUID id, JsonNode first) {
        JsonNode second = leaseOf(id, "worker-2");
        assertThat(second.path("task_id").asText()).isEqualTo(first.path("task_id").asText());
        assertThat(second.path("job_id").asText()).isEqualTo(id.toString());
        assertThat(second.path("lease_token").asText()).isNotEqualTo(first.path("lease_token").asText());
        assertThat(call("/v1/workers/tasks/" + first.path("task_id").asText() + "/heartbeat", WORKER_KEY,
                "{\"lease_token\": \"" + first.path("lease_token").asText() + "\"}").code()).isEqualTo("lease_lost");
        String task = second.path("task_id").asText();
        String token = second.path("lease_token").asText();
        assertThat(putOutput(task, token, InvoiceRenderer.render(second.path("request").path("inputs"), 1024, 1024, "image/png", false, 1))
                .status()).isEqualTo(200);
        assertThat(complete(task, token).status()).isEqualTo(200);
        Jobs.awaitStatus(id, "succeeded");
    }

    @Test
    void aCancelReachesTheWorkerAtItsNextHeartbeat() {
        UUID id = submit("square");
        JsonNode lease = leaseOf(id, "worker-1");
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);
        Jobs.awaitStatus(id, "cancelled");
        // The cancel reaches the provider (here the board) beside the job's own change: the next heartbeat hears it.
        String beat = "{\"lease_token\": \"" + lease.path("lease_token").asText() + "\"}";
        org.awaitility.Awaitility.await("the worker hears of the cancel").atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(200)).until(() -> "task_cancelled".equals(
                        call("/v1/workers/tasks/" + lease.path("task_id").asText() + "/heartbeat", WORKER_KEY, beat).code()));
    }

    /**
     * Time-limited URLs: the worker writes its output straight to the S3 API (no key of the gateway's), and a worker
     * whose lease ran out can still write to its own URL, but never where the live lease's complete reads.
     */
    @Test
    void aWorkerWritesItsOutputToItsLeasesUrlAndALostLeasesWriteIsNeverRead() throws Exception {
        UUID id = submit("square");
        JsonNode lost = leaseOf(id, "worker-slow");
        clock.advance(Duration.ofSeconds(61));
        JsonNode live;
        try {
            live = leaseOf(id, "worker-2");
        } finally {
            clock.reset();
        }
        assertThat(live.path("output_url").asText()).isNotEqualTo(lost.path("output_url").asText());
        assertThat(live.path("source_url").isMissingNode()).as("the job has no upload").isTrue();
        byte[] right = InvoiceRenderer.render(live.path("request").path("inputs"), 1024, 1024, "image/png", false, 1);
        byte[] stale = InvoiceRenderer.render(live.path("request").path("inputs"), 1024, 1024, "image/png", true, 7);
        assertThat(stale).isNotEqualTo(right);
        assertThat(putTo(live.path("output_url").asText(), right)).isEqualTo(200);
        assertThat(putTo(lost.path("output_url").asText(), stale)).as("S3 takes it: the URL is still valid").isEqualTo(200);

        assertThat(complete(lost.path("task_id").asText(), lost.path("lease_token").asText()).code()).isEqualTo("lease_lost");
        ApiClient.Response beat = call("/v1/workers/tasks/" + live.path("task_id").asText() + "/heartbeat", WORKER_KEY,
                "{\"lease_token\": \"" + live.path("lease_token").asText() + "\"}");
        assertThat(beat.json().path("output_url").asText()).as("a fresh URL with the extended lease").contains("X-Amz-Signature=");
        ApiClient.Response done = complete(live.path("task_id").asText(), live.path("lease_token").asText());
        assertThat(done.status()).as(done.text()).isEqualTo(200);
        Jobs.awaitStatus(id, "succeeded");
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).isEqualTo(right);
    }

    /** A job with an upload: its worker reads the source with the lease's URL, the bytes uploaded, with no key. */
    @Test
    void aWorkerReadsTheJobsSourceWithItsLeasesUrl() throws Exception {
        byte[] audio = io.jobgate.support.Samples.wav(1500);
        ApiClient.Response upload = api.upload(ACME, "audio/wav", audio);
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"gpubox\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitStatus(id, "provider_pending");
        JsonNode lease = leaseOf(id, "worker-1");
        assertThat(lease.path("source_media_type").asText()).isEqualTo("audio/wav");
        java.net.http.HttpResponse<byte[]> source = java.net.http.HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(java.net.URI.create(lease.path("source_url").asText())).GET().build(),
                java.net.http.HttpResponse.BodyHandlers.ofByteArray());
        assertThat(source.statusCode()).isEqualTo(200);
        assertThat(source.body()).isEqualTo(audio);
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);
    }

    private static int putTo(String url, byte[] bytes) throws Exception {
        return java.net.http.HttpClient.newHttpClient().send(HttpRequest.newBuilder(java.net.URI.create(url))
                .header("Content-Type", "image/png").PUT(HttpRequest.BodyPublishers.ofByteArray(bytes)).build(),
                java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
    }

    /** The Python reference worker (examples/workers/worker.py, standard library only), as a process of its own. */
    @Test
    void thePythonReferenceWorkerRendersAJobEndToEnd() throws Exception {
        referenceWorkerRendersAJob("python3", "examples/workers/worker.py");
    }

    /** The Java reference worker (examples/workers/Worker.java, one file, no library), run from its source. */
    @Test
    void theJavaReferenceWorkerRendersAJobEndToEnd() throws Exception {
        referenceWorkerRendersAJob(System.getProperty("java.home") + "/bin/java", "examples/workers/Worker.java");
    }

    private void referenceWorkerRendersAJob(String runtime, String source) throws Exception {
        UUID id = submit("landscape");
        Process worker = new ProcessBuilder(runtime, source, "--gateway", api.base(), "--member", "gpubox",
                "--key", WORKER_KEY, "--worker-id", "reference-1", "--once").redirectErrorStream(true).start();
        try {
            assertThat(worker.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as("the worker ends once no task waits").isTrue();
            String printed = new String(worker.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(worker.exitValue()).as(printed).isZero();
            assertThat(printed).contains("job " + id);
        } finally {
            worker.destroyForcibly();
        }
        Jobs.awaitStatus(id, "succeeded");
        byte[] output = api.getBytes(ACME, "/v1/jobs/" + id + "/output");
        java.awt.image.BufferedImage image = javax.imageio.ImageIO.read(new java.io.ByteArrayInputStream(output));
        assertThat(image.getWidth()).isEqualTo(1536);
        assertThat(image.getHeight()).isEqualTo(1024);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
    }

    @Test
    void onlyItsWorkerKeyLeasesAMembersTasks() {
        assertThat(call("/v1/workers/gpubox/leases", ACME, "{\"worker_id\": \"w\"}").status()).isEqualTo(401);
        assertThat(call("/v1/workers/gpubox/leases", ADMIN, "{\"worker_id\": \"w\"}").status()).isEqualTo(401);
        assertThat(call("/v1/workers/gpubox/leases", null, "{\"worker_id\": \"w\"}").status()).isEqualTo(401);
        assertThat(call("/v1/workers/simulator/leases", WORKER_KEY, "{\"worker_id\": \"w\"}").code()).isEqualTo("not_found");
        assertThat(call("/v1/workers/gpubox/leases", WORKER_KEY, "{\"worker_id\": \"w\", \"max\": 0}").code()).isEqualTo("invalid_parameter");
    }

    /** A job naming the pull member, waiting for a worker. */
    private UUID submit(String aspectClass) {
        return new WorkerClient(api).submit(aspectClass);
    }

    /** Leases until the job's task comes (other tests' tasks may come first: each is left to its lease). */
    private JsonNode leaseOf(UUID job, String worker) {
        for (int round = 0; round < 50; round++) {
            ApiClient.Response r = call("/v1/workers/gpubox/leases", WORKER_KEY, "{\"worker_id\": \"" + worker + "\", \"max\": 8}");
            assertThat(r.status()).as(r.text()).isEqualTo(200);
            for (JsonNode lease : r.json().path("leases")) {
                if (lease.path("job_id").asText().equals(job.toString())) {
                    return lease;
                }
            }
        }
        throw new AssertionError("the task of job " + job + " was never leased");
    }

    private ApiClient.Response putOutput(String task, String token, byte[] bytes) {
        return api.send(api.request("/v1/workers/tasks/" + task + "/output", WORKER_KEY).header("Content-Type", "image/png")
                .header("Lease-Token", token).PUT(HttpRequest.BodyPublishers.ofByteArray(bytes)).build());
    }

    /** The complete with the output as its body (header Lease-Token), billed in GPU seconds. */
    private ApiClient.Response completeWith(String task, String token, byte[] output, String billedUnits) {
        return api.send(api.request("/v1/workers/tasks/" + task + "/complete", WORKER_KEY).header("Content-Type", "image/png")
                .header("Lease-Token", token).header("Billed-Units", billedUnits).header("Billed-Unit", "gpu_seconds")
                .POST(HttpRequest.BodyPublishers.ofByteArray(output)).build());
    }

    private ApiClient.Response complete(String task, String token) {
        return call("/v1/workers/tasks/" + task + "/complete", WORKER_KEY, "{\"lease_token\": \"" + token
                + "\", \"media_type\": \"image/png\", \"billed_units\": 2.5, \"billed_unit\": \"gpu_seconds\"}");
    }

    private ApiClient.Response call(String path, String key, String json) {
        return api.send(api.request(path, key).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }
}
