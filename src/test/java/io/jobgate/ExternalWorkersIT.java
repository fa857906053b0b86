package io.jobgate;

import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import javax.imageio.ImageIO;
import javax.tools.ToolProvider;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.PackagedGateway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static io.jobgate.support.TestTenants.GPUBOX_WORKER;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * External workers for real (docs/workers.md, issue 66): the packaged jar on its embedded defaults, given the pull
 * member {@code gpubox} of src/test/resources/workers by environment alone, and the two reference workers
 * (examples/workers: worker.py and Worker.java) as processes of their own. Two tenants' jobs become tasks in turns,
 * each output is the worker's PNG, checked and promoted, and charged once; a worker killed with SIGKILL mid-task loses
 * its lease, the other worker renders the same job and attempt, and the dead worker's token changes nothing; an output
 * of the wrong size fails its job as {@code invalid_output}, never readable; a cancel reaches the worker holding the
 * task at its next heartbeat, and the worker moves on. One gateway for all of it; the test reads its embedded
 * PostgreSQL (never writes) and acts as a worker over HTTP where it needs a lease of its own.
 */
class ExternalWorkersIT {

    /** How long a lease lasts without a heartbeat: the least the gateway takes, so a dead worker's task comes back soon. */
    static final int LEASE_SECONDS = 5;
    /**
     * The gateway-wide window of jobs dispatched and not ended (jobgate.dispatch.max-running): a job waiting for a
     * worker holds its place in it, so at most two tasks are open at once, and the relay's fair round chooses which
     * job is the next one when a task ends. (The member's max-concurrency bounds its submits in flight, not its open
     * tasks.)
     */
    static final int WINDOW = 2;
    static final int SQUARE = 1024; // the member's size.square

    static Path dataDir;
    static Path gatewayLog;
    static Process gateway;
    static ApiClient api;
    static Connection db;
    static Path javaWorkerClasses;
    static final List<Process> workers = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startTheJarWithAPullMember() throws Exception {
        dataDir = Files.createTempDirectory("jobgate-workers");
        gatewayLog = dataDir.resolve("gateway.log");
        Properties shipped = new Properties();
        try (Reader settings = Files.newBufferedReader(Path.of("config/application.properties"))) {
            shipped.load(settings);
        }
        int port = GatewayTestSupport.freePort();
        ProcessBuilder pb = PackagedGateway.builder(dataDir, port, gatewayLog);
        // The shipped providers and routes, and the pull member beside them (docs/settings.md: a setting's variable).
        pb.environment().put("JOBGATE_PROVIDERS_DIRS", shipped.getProperty("jobgate.providers.dirs") + ",src/test/resources/workers/providers");
        pb.environment().put("CAMEL_MAIN_ROUTES_INCLUDE_PATTERN", shipped.getProperty("camel.main.routes-include-pattern")
                + ",file:src/test/resources/workers/adapters/*.camel.yaml");
        pb.environment().put("JOBGATE_WORKERS_LEASE_SECONDS", Integer.toString(LEASE_SECONDS));
        pb.environment().put("JOBGATE_DISPATCH_MAX_RUNNING", Integer.toString(WINDOW));
        gateway = pb.start();
        api = new ApiClient(port);
        // Meanwhile the Java reference worker is compiled once, not again at each of its starts (java Worker.java).
        javaWorkerClasses = Files.createTempDirectory("jobgate-java-worker");
        assertThat(ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", javaWorkerClasses.toString(),
                "examples/workers/Worker.java")).as("Worker.java compiles").isZero();
        PackagedGateway.awaitHealthy(gateway, api, gatewayLog, Duration.ofSeconds(120));
        String dbPort = Files.readString(dataDir.resolve("postgres/port")).trim();
        db = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + dbPort + "/postgres", "postgres", "");
    }

    @AfterAll
    static void stopEverything() throws Exception {
        workers.forEach(Process::destroyForcibly);
        if (javaWorkerClasses != null) {
            try (var files = Files.walk(javaWorkerClasses)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
        if (db != null) {
            db.close();
        }
        if (gateway != null) {
            gateway.destroy(); // SIGTERM: the routes, then the embedded parts, stop
            if (!gateway.waitFor(60, TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
                // Killed, it leaves its PostgreSQL running (CrashRestartIT): that one goes too.
                Path pid = dataDir.resolve("postgres/pgdata/postmaster.pid");
                if (Files.exists(pid)) {
                    ProcessHandle.of(Long.parseLong(Files.readAllLines(pid).get(0).trim()))
                            .filter(p -> p.info().command().orElse("").endsWith("/postgres")).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
        }
    }

    /**
     * Acme submits twelve jobs, then Globex three. Acme's first two take the window while no worker runs yet; from then
     * on each task that ends lets the relay's round choose the next job, one per tenant in turns, the tenant that
     * waited longest first: Globex's three become tasks among Acme's next few, not behind all of them (in order of
     * arrival they would be the last three). Both workers render; every output is the PNG a worker made for that job,
     * and every job is debited once, never refunded.
     */
    @Test
    void twoTenantsJobsAreLeasedInTurnsAndEachOutputIsPromotedAndChargedOnce() throws Exception {
        List<Job> acme = new ArrayList<>();
        List<Job> globex = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            acme.add(submit(ACME));
        }
        await("acme's first jobs take the window").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
                .until(() -> tasksInOrder(acme).size() == WINDOW);
        for (int i = 0; i < 3; i++) {
            globex.add(submit(GLOBEX));
        }
        List<Job> all = new ArrayList<>(acme);
        all.addAll(globex);
        try (RefWorker java = RefWorker.java("java-1")) {
            // The Java worker first (its JVM starts slower) until it holds a task, then the Python one beside it.
            await("the java worker leases").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
                    .until(() -> column("SELECT worker_id FROM worker_tasks WHERE job_id = ANY(?)", ids(all)).contains("java-1"));
            try (RefWorker python = RefWorker.python("python-1")) {
                for (Job job : all) {
                    job.awaitStatus("succeeded", Duration.ofSeconds(60));
                }
            }
        }

        List<UUID> order = tasksInOrder(all);
        assertThat(order).hasSize(all.size());
        assertThat(order.subList(0, WINDOW)).containsExactlyInAnyOrder(acme.get(0).id(), acme.get(1).id());
        Set<UUID> globexIds = globex.stream().map(Job::id).collect(Collectors.toSet());
        int lastGlobex = order.size() - 1;
        while (!globexIds.contains(order.get(lastGlobex))) {
            lastGlobex--;
        }
        // In turns, Globex's third job is a task by the 8th; after it come Acme's 6th to 12th at least.
        String tenants = order.stream().map(id -> globexIds.contains(id) ? "G" : "a").collect(Collectors.joining());
        System.out.println("tasks in the order they were written (a: acme, G: globex): " + tenants);
        assertThat(order.size() - 1 - lastGlobex).as("acme's tasks after globex's last, in order %s", tenants).isGreaterThanOrEqualTo(6);

        assertThat(column("SELECT DISTINCT worker_id FROM worker_tasks WHERE job_id = ANY(?)", ids(all)))
                .as("both reference workers rendered").containsExactlyInAnyOrder("java-1", "python-1");
        for (Job job : all) {
            Map<String, Object> task = task(job);
            assertThat(task).containsEntry("status", "succeeded").containsEntry("attempt", 1).containsEntry("leases", 1);
            assertIsTheWorkersPng(job);
            assertCharged(job, false);
        }
    }

    /**
     * The Java worker holds a task (a slow render, heartbeating) and has stored an output of the wrong size when it is
     * killed with SIGKILL. Its lease runs out; the Python worker leases the task: the same job and attempt, a new
     * token. The dead worker's token, as if it came back, is refused (409 lease_lost) and changes nothing; the job
     * succeeds with the Python worker's output, on one attempt, debited once.
     */
    @Test
    void aWorkerKilledMidTaskLosesItsLeaseTheNextRendersTheSameAttemptAndTheDeadTokenChangesNothing() throws Exception {
        Job job = submit(ACME);
        awaitTask(job, t -> true);
        Map<String, Object> held;
        try (RefWorker doomed = RefWorker.java("java-doomed", "--render-seconds", "60")) {
            held = awaitTask(job, t -> "java-doomed".equals(t.get("worker_id")));
            ApiClient.Response stored = putOutput(held, png(SQUARE / 2, SQUARE / 2));
            assertThat(stored.status()).as(stored.text()).isEqualTo(200);
            doomed.process().destroyForcibly();
            assertThat(doomed.process().waitFor(20, TimeUnit.SECONDS)).isTrue();
            assertThat(doomed.process().exitValue()).as("ended by SIGKILL (128 + 9)").isEqualTo(137);
        }
        try (RefWorker rescuer = RefWorker.python("python-rescuer", "--render-seconds", "2")) {
            Map<String, Object> taken = awaitTask(job, t -> "python-rescuer".equals(t.get("worker_id")));
            assertThat(taken).containsEntry("task_id", held.get("task_id")).containsEntry("attempt", held.get("attempt"))
                    .containsEntry("status", "leased").containsEntry("leases", 2);
            assertThat(taken.get("lease_token")).isNotEqualTo(held.get("lease_token"));

            // While the Python worker renders: the dead worker's token, however it calls.
            assertThat(heartbeat(held).code()).isEqualTo("lease_lost");
            assertThat(complete(held).code()).isEqualTo("lease_lost");
            assertThat(putOutput(held, png(SQUARE / 2, SQUARE / 2)).code()).isEqualTo("lease_lost");
            assertThat(task(job)).containsEntry("lease_token", taken.get("lease_token")).containsEntry("status", "leased")
                    .containsEntry("worker_id", "python-rescuer").containsEntry("leases", 2);
            assertThat(job.json().path("status").asText()).isEqualTo("provider_pending");

            job.awaitStatus("succeeded", Duration.ofSeconds(30));
            await("the rescuer's line").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
                    .until(rescuer::printed, printed -> printed.contains("(job " + job.id() + ", attempt 1): 200 succeeded"));
        }
        assertThat(job.json().path("attempts").asInt()).isEqualTo(1);
        assertThat(api.get(job.key(), "/v1/jobs/" + job.id() + "/attempts").json().path("attempts"))
                .extracting(a -> a.path("attempt").asInt()).containsExactly(1);
        assertIsTheWorkersPng(job);
        assertCharged(job, false);
    }

    /** The test as the worker: an output of the wrong size is taken, then fails the job as invalid_output, never readable. */
    @Test
    void anOutputOfTheWrongSizeFailsItsJobAsInvalidOutputAndIsNeverReadable() throws Exception {
        Job job = submit(GLOBEX);
        awaitTask(job, t -> true);
        Map<String, Object> lease = leaseAsTheTest(job);
        assertThat(putOutput(lease, png(SQUARE, SQUARE / 2)).status()).isEqualTo(200);
        ApiClient.Response done = complete(lease);
        assertThat(done.status()).as(done.text()).isEqualTo(200);

        job.awaitStatus("failed", Duration.ofSeconds(20));
        assertThat(job.json().path("error").path("category").asText()).isEqualTo("invalid_output");
        assertThat(job.json().path("output").isNull()).isTrue();
        assertThat(api.get(job.key(), "/v1/jobs/" + job.id() + "/output").status()).isEqualTo(409);
        assertCharged(job, true);
    }

    /**
     * Each worker holds a task (a slow render) when its job is cancelled by its tenant: it hears 409 task_cancelled at
     * its next heartbeat, stops the task, and goes on to the next lease (with --once: none waits, so it exits).
     */
    @Test
    void aCancelReachesTheWorkerHoldingTheTaskAtItsNextHeartbeat() throws Exception {
        List<Job> jobs = List.of(submit(ACME), submit(GLOBEX));
        for (Job job : jobs) {
            awaitTask(job, t -> true);
        }
        try (RefWorker python = RefWorker.python("python-slow", "--render-seconds", "60", "--once");
             RefWorker java = RefWorker.java("java-slow", "--render-seconds", "60", "--once")) {
            await("each worker holds a task").atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50))
                    .until(() -> column("SELECT worker_id FROM worker_tasks WHERE job_id = ANY(?) AND status = 'leased'", ids(jobs)),
                            held -> Set.copyOf(held).equals(Set.of("python-slow", "java-slow")));
            for (Job job : jobs) {
                ApiClient.Response cancelled = api.post(job.key(), "/v1/jobs/" + job.id() + "/cancel");
                assertThat(cancelled.status()).as(cancelled.text()).isEqualTo(200);
            }
            for (RefWorker worker : List.of(python, java)) {
                assertThat(worker.process().waitFor(30, TimeUnit.SECONDS)).as("%s moved on:%n%s", worker.id(), worker.printed()).isTrue();
                assertThat(worker.process().exitValue()).as(worker.printed()).isZero();
                assertThat(worker.printed()).contains("task_cancelled - stopping").contains("): stopped");
            }
        }
        for (Job job : jobs) {
            assertThat(job.json().path("status").asText()).isEqualTo("cancelled");
            assertThat(task(job)).containsEntry("status", "cancelled");
            assertThat(api.get(job.key(), "/v1/jobs/" + job.id() + "/output").status()).isEqualTo(409);
            assertCharged(job, true);
        }
    }

    // --- jobs, as their tenants see them

    /** A job of the tenant with API key {@code key}. */
    record Job(String key, UUID id) {
        JsonNode json() {
            ApiClient.Response r = api.get(key, "/v1/jobs/" + id);
            assertThat(r.status()).as(r.text()).isEqualTo(200);
            return r.json();
        }

        /** Until the job is in {@code status}; one that ends otherwise fails at once. */
        void awaitStatus(String status, Duration atMost) {
            await("job " + id + " " + status).atMost(atMost).pollInterval(Duration.ofMillis(100)).until(() -> {
                JsonNode job = json();
                String now = job.path("status").asText();
                assertThat(now).as("job %s ended otherwise: %s", id, job).isIn(status, "queued", "running", "submitting",
                        "submission_unknown", "provider_pending", "retry_wait");
                return now.equals(status);
            });
        }
    }

    static Job submit(String key) {
        ApiClient.Response r = api.postJob(key, "workers-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "gpubox",
                 "inputs": {"supplier_name": "Workers", "invoice_id": "W-1", "currency": "EUR",
                            "line_items": [{"description": "GPU time", "quantity": 1, "unit_price": 10}]}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return new Job(key, UUID.fromString(r.json().path("job_id").asText()));
    }

    /** The job's output is a PNG of the size asked, in the colour the reference workers take from its job id. */
    static void assertIsTheWorkersPng(Job job) throws IOException {
        byte[] output = api.getBytes(job.key(), "/v1/jobs/" + job.id() + "/output");
        BufferedImage image = ImageIO.read(new ByteArrayInputStream(output));
        assertThat(image).as("a PNG").isNotNull();
        assertThat(image.getWidth()).isEqualTo(SQUARE);
        assertThat(image.getHeight()).isEqualTo(SQUARE);
        assertThat(image.getRGB(SQUARE / 2, SQUARE / 2) & 0xFFFFFF).isEqualTo(Integer.parseInt(job.id().toString().substring(0, 6), 16));
        assertThat(job.json().path("output").path("bytes").asInt()).isEqualTo(output.length);
    }

    /** One debit of the job's cost; refunded once in full when it did not succeed, else never. */
    static void assertCharged(Job job, boolean refunded) throws SQLException {
        long cost = job.json().path("cost").path("amount_micros").asLong();
        assertThat(cost).isPositive();
        List<Map<String, Object>> lines = rows("SELECT entry_type, amount_micros FROM ledger WHERE job_id = ? ORDER BY entry_id", job.id());
        List<String> expected = refunded ? List.of("debit:" + -cost, "refund:" + cost) : List.of("debit:" + -cost);
        assertThat(lines).extracting(l -> l.get("entry_type") + ":" + l.get("amount_micros")).as("ledger of job %s", job.id())
                .isEqualTo(expected);
    }

    // --- the test as a worker (the protocol over HTTP, with the member's worker key)

    /** Leases until the job's task comes; no reference worker runs meanwhile. */
    static Map<String, Object> leaseAsTheTest(Job job) {
        JsonNode lease = await("the test leases the task of job " + job.id()).atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(100)).until(() -> {
                    ApiClient.Response r = workerCall("/v1/workers/gpubox/leases", "{\"worker_id\": \"the-test\", \"max\": 1}");
                    assertThat(r.status()).as(r.text()).isEqualTo(200);
                    JsonNode leases = r.json().path("leases");
                    return leases.isEmpty() ? null : leases.get(0);
                }, l -> l != null && l.path("job_id").asText().equals(job.id().toString()));
        return Map.of("task_id", UUID.fromString(lease.path("task_id").asText()), "lease_token",
                UUID.fromString(lease.path("lease_token").asText()));
    }

    static ApiClient.Response heartbeat(Map<String, Object> lease) {
        return workerCall("/v1/workers/tasks/" + lease.get("task_id") + "/heartbeat", "{\"lease_token\": \"" + lease.get("lease_token") + "\"}");
    }

    static ApiClient.Response putOutput(Map<String, Object> lease, byte[] png) {
        return api.send(api.request("/v1/workers/tasks/" + lease.get("task_id") + "/output", GPUBOX_WORKER)
                .header("Content-Type", "image/png").header("Lease-Token", lease.get("lease_token").toString())
                .PUT(HttpRequest.BodyPublishers.ofByteArray(png)).build());
    }

    static ApiClient.Response complete(Map<String, Object> lease) {
        return workerCall("/v1/workers/tasks/" + lease.get("task_id") + "/complete", "{\"lease_token\": \"" + lease.get("lease_token")
                + "\", \"media_type\": \"image/png\"}");
    }

    static ApiClient.Response workerCall(String path, String json) {
        return api.send(api.request(path, GPUBOX_WORKER).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    static byte[] png(int width, int height) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB), "png", out);
        return out.toByteArray();
    }

    // --- the reference workers, as processes of their own

    /** A reference worker (its output in a file beside the gateway's log); killed at the end of its block, or after all. */
    record RefWorker(String id, Process process, Path log) implements AutoCloseable {

        static RefWorker python(String id, String... options) throws IOException {
            return start(id, List.of("python3", "examples/workers/worker.py"), options);
        }

        static RefWorker java(String id, String... options) throws IOException {
            return start(id, List.of(System.getProperty("java.home") + "/bin/java", "-Xmx128m", "-cp", javaWorkerClasses.toString(),
                    "Worker"), options);
        }

        private static RefWorker start(String id, List<String> runtime, String... options) throws IOException {
            List<String> command = new ArrayList<>(runtime);
            command.addAll(List.of("--gateway", api.base(), "--member", "gpubox", "--key", GPUBOX_WORKER, "--worker-id", id,
                    "--heartbeat-seconds", "1", "--wait-seconds", "5"));
            command.addAll(List.of(options));
            Path log = dataDir.resolve(id + ".log");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
            workers.add(process);
            return new RefWorker(id, process, log);
        }

        String printed() {
            try {
                return Files.readString(log);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(20, TimeUnit.SECONDS);
        }
    }

    // --- the gateway's embedded PostgreSQL, read only

    /** The task of the job's (one) attempt, once written, as it stands; until it matches {@code until}. */
    static Map<String, Object> awaitTask(Job job, Predicate<Map<String, Object>> until) {
        return await("the task of job " + job.id()).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
                .until(() -> Optional.ofNullable(task(job)), t -> t.isPresent() && until.test(t.get())).orElseThrow();
    }

    static Map<String, Object> task(Job job) throws SQLException {
        List<Map<String, Object>> found = rows("""
                SELECT task_id, attempt, status, lease_token, worker_id, leases FROM worker_tasks WHERE job_id = ?""", job.id());
        assertThat(found.size()).as("tasks of job %s", job.id()).isLessThanOrEqualTo(1);
        return found.isEmpty() ? null : found.get(0);
    }

    /** The jobs whose attempts became tasks, in the order they did. */
    static List<UUID> tasksInOrder(List<Job> jobs) throws SQLException {
        return column("SELECT job_id FROM worker_tasks WHERE job_id = ANY(?) ORDER BY created_at", ids(jobs));
    }

    static java.sql.Array ids(List<Job> jobs) throws SQLException {
        return db.createArrayOf("uuid", jobs.stream().map(Job::id).toArray());
    }

    @SuppressWarnings("unchecked")
    static <T> List<T> column(String sql, Object... args) throws SQLException {
        return rows(sql, args).stream().map(r -> (T) r.values().iterator().next()).toList();
    }

    static synchronized List<Map<String, Object>> rows(String sql, Object... args) throws SQLException {
        try (PreparedStatement st = db.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                st.setObject(i + 1, args[i]);
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    Map<String, Object> row = new LinkedHashMap<>();
                    for (int c = 1; c <= rs.getMetaData().getColumnCount(); c++) {
                        row.put(rs.getMetaData().getColumnLabel(c), rs.getObject(c));
                    }
                    rows.add(row);
                }
            }
            return rows;
        }
    }
}
