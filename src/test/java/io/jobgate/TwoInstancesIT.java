package io.jobgate;

import java.io.Reader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.jobgate.infra.EmbeddedS3Server;
import io.jobgate.infra.ObjectStorage;
import io.jobgate.simulator.ProviderSimulator;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.PackagedGateway;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Roles and several instances for real: two packaged gateways ({@code java -jar target/jobgate.jar})
 * on ONE PostgreSQL database and ONE standalone Artemis, sharing one S3 server and one provider (the
 * bundled simulator, run here): instance A with every role, instance B with {@code jobgate.roles =
 * worker} only. A workload of two tenants runs through both; B is killed with SIGKILL while it holds
 * a lease in the middle of a provider call. Every job must still end exactly once: terminal, one
 * final status event, one debit and a refund only for a failed job, one promoted output (and a
 * readable one) per succeeded job, none for a failed one.
 *
 * <p>Needs CI's servers ({@code JOBGATE_TEST_JDBC_URL}, {@code JOBGATE_TEST_BROKER_URL}, {@code _USER},
 * {@code _PASSWORD}); without them it is skipped, unless {@code JOBGATE_TEST_REQUIRE_EXTERNAL_DB} or
 * {@code JOBGATE_TEST_REQUIRE_STANDALONE_BROKER} asks for them, which fails it instead.
 */
class TwoInstancesIT {

    static final String JDBC = System.getenv("JOBGATE_TEST_JDBC_URL");
    static final String BROKER = System.getenv("JOBGATE_TEST_BROKER_URL");
    static final ObjectMapper JSON = new ObjectMapper();
    static final int JOBS = 120;

    /** Per job index: the simulator fault asked for on its first submit (correlation id), or none. */
    static String fault(int i) {
        return switch (i % 20) {
            case 3, 13 -> "slow";               // the call outlives its deadline: the worker holds its lease that long
            case 7 -> "lose_reply";             // accepted, reply lost: submission_unknown, found again by key
            case 9 -> "server_error";           // 503: retried with backoff
            case 17 -> "wrong_media_type";      // the output fails its checks: failed, refunded
            default -> null;
        };
    }

    @Test
    void anUnknownRoleStopsTheStartNamingTheSetting() throws Exception {
        Path dir = Files.createTempDirectory("jobgate-roles-bad");
        Path log = dir.resolve("gateway.log");
        ProcessBuilder pb = gateway(dir, log, GatewayTestSupport.freePort());
        pb.environment().put("JOBGATE_ROLES", "api,wroker");
        Process p = pb.start();
        try {
            assertThat(p.waitFor(90, TimeUnit.SECONDS)).as("the gateway stopped").isTrue();
        } finally {
            p.destroyForcibly();
        }
        assertThat(p.exitValue()).isNotZero();
        assertThat(Files.readString(log)).contains("setting jobgate.roles names an unknown role 'wroker'");
        // Refused before any part started: no embedded PostgreSQL was made.
        assertThat(dir.resolve("data/postgres")).doesNotExist();
    }

    @Test
    void twoInstancesFinishEveryJobExactlyOnceWhenTheWorkerOnlyOneIsKilledMidRun() throws Exception {
        boolean required = Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_EXTERNAL_DB"))
                || Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_STANDALONE_BROKER"));
        boolean present = JDBC != null && !JDBC.isBlank() && BROKER != null && !BROKER.isBlank();
        if (required && !present) {
            throw new IllegalStateException("JOBGATE_TEST_REQUIRE_* is set but JOBGATE_TEST_JDBC_URL or JOBGATE_TEST_BROKER_URL is not");
        }
        Assumptions.assumeTrue(present, "no external PostgreSQL and standalone Artemis (JOBGATE_TEST_JDBC_URL, JOBGATE_TEST_BROKER_URL)");

        Path dir = Files.createTempDirectory("jobgate-two");
        String database = "jobgate_two_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        List<AutoCloseable> cleanup = new ArrayList<>();
        try (Connection admin = DriverManager.getConnection(JDBC, env("JOBGATE_TEST_JDBC_USER", "postgres"),
                env("JOBGATE_TEST_JDBC_PASSWORD", ""))) {
            try (Statement s = admin.createStatement()) {
                s.execute("CREATE DATABASE " + database);
            }
            cleanup.add(() -> {
                try (Statement s = admin.createStatement()) {
                    s.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
                }
            });
            try {
                run(dir, databaseUrl(JDBC, database), cleanup);
            } finally {
                for (int i = cleanup.size() - 1; i >= 0; i--) {
                    try {
                        cleanup.get(i).close();
                    } catch (Exception e) {
                        System.err.println("cleanup: " + e);
                    }
                }
            }
        }
    }

    private void run(Path dir, String dbUrl, List<AutoCloseable> cleanup) throws Exception {
        // Broker tests share these queues on CI's broker: whatever they left is not this test's.
        drain("jobs.intake", "jobs.dispatch", "jobs.dispatch.DLQ");

        EmbeddedS3Server s3 = EmbeddedS3Server.start(dir.resolve("s3"), 0);
        cleanup.add(s3::stop);
        Properties shipped = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/application.properties"))) {
            shipped.load(r);
        }
        // The provider outside both gateways, so killing one kills no provider state.
        ProviderSimulator simulator = ProviderSimulator.start(new ProviderSimulator.Config(0, Duration.ofMillis(200),
                Duration.ofMillis(2500), shipped.getProperty("jobgate.simulator.webhook-secret").trim(), Map.of()));
        cleanup.add(simulator::close);
        Path tenants = tenantsFile(dir);

        int portA = GatewayTestSupport.freePort();
        int portB = GatewayTestSupport.freePort();
        Map<String, String> shared = new LinkedHashMap<>();
        shared.put("JOBGATE_DB_URL", dbUrl);
        shared.put("JOBGATE_DB_USER", env("JOBGATE_TEST_JDBC_USER", "postgres"));
        shared.put("JOBGATE_DB_PASSWORD", env("JOBGATE_TEST_JDBC_PASSWORD", ""));
        shared.put("JOBGATE_DB_POOL_SIZE", "8");
        shared.put("JOBGATE_BROKER_URL", BROKER);
        shared.put("JOBGATE_BROKER_USER", env("JOBGATE_TEST_BROKER_USER", "jobgate"));
        shared.put("JOBGATE_BROKER_PASSWORD", env("JOBGATE_TEST_BROKER_PASSWORD", "jobgate"));
        shared.put("JOBGATE_S3_ENDPOINT", s3.endpoint());
        shared.put("JOBGATE_S3_ACCESS_KEY", s3.accessKey());
        shared.put("JOBGATE_S3_SECRET_KEY", s3.secretKey());
        shared.put("JOBGATE_TENANTS_FILES", tenants.toString());
        shared.put("JOBGATE_SIMULATOR_ENABLED", "false");
        shared.put("JOBGATE_SIMULATOR_URL", "http://127.0.0.1:" + simulator.port());
        // Webhooks go to the API instance, whichever worker submitted (docs/settings.md: roles and several instances).
        shared.put("JOBGATE_PUBLIC_BASE_URL", "http://127.0.0.1:" + portA);
        // Short deadlines, so a dead worker's lease ends within seconds (deadline + margin).
        shared.put("JOBGATE_PROVIDER_SIMULATOR_CALL_DEADLINE_MS", "1500");
        shared.put("JOBGATE_WORKER_LEASE_MARGIN_SECONDS", "1");
        shared.put("JOBGATE_WORKER_BACKOFF_BASE_MS", "100");
        shared.put("JOBGATE_WORKER_BACKOFF_CAP_MS", "1000");
        shared.put("JOBGATE_WORKER_CONCURRENCY", "6");
        shared.put("JOBGATE_SWEEPER_PERIOD_MS", "200");
        shared.put("JOBGATE_RECONCILE_PERIOD_MS", "200");
        shared.put("JOBGATE_RECONCILE_FIRST_CHECK_MS", "500");
        shared.put("JOBGATE_RECONCILE_CHECK_CAP_MS", "1000");

        Path logA = dir.resolve("a.log");
        Path logB = dir.resolve("b.log");
        ProcessBuilder a = gateway(dir.resolve("a"), logA, portA);
        a.environment().putAll(shared);
        a.environment().put("JOBGATE_ROLES", "api,relay,worker,sweeper,reconciler");
        ProcessBuilder b = gateway(dir.resolve("b"), logB, portB);
        b.environment().putAll(shared);
        b.environment().put("JOBGATE_ROLES", "worker");

        // Side by side, as a deployment starts them: they take turns migrating the fresh database on Flyway's lock.
        Process gatewayA = a.start();
        cleanup.add(() -> stop(gatewayA));
        Process gatewayB = b.start();
        cleanup.add(() -> stop(gatewayB));
        ApiClient apiA = new ApiClient(portA);
        ApiClient apiB = new ApiClient(portB);
        long launched = System.nanoTime();
        PackagedGateway.awaitHealthy(gatewayA, apiA, logA, Duration.ofSeconds(90));
        PackagedGateway.awaitHealthy(gatewayB, apiB, logB, Duration.ofSeconds(90));
        System.out.printf("two instances: both healthy %d ms after launch%n", (System.nanoTime() - launched) / 1_000_000);

        // B serves no job API (its REST routes were never built); its health endpoint works.
        assertThat(apiB.get("it-north-key", "/v1/jobs").status()).isEqualTo(404);
        assertThat(apiA.get("it-north-key", "/v1/jobs").status()).isEqualTo(200);
        String ownerB = leaseOwner(logB);
        String ownerA = leaseOwner(logA);
        assertThat(Files.readString(logB)).contains("jobgate roles: worker;");

        // The workload, through A's API: two tenants interleaved, some with a fault on their first submit.
        long started = System.nanoTime();
        Map<String, Integer> indexOf = submit(portA);
        assertThat(indexOf).hasSize(JOBS);

        try (Connection db = DriverManager.getConnection(dbUrl, shared.get("JOBGATE_DB_USER"), shared.get("JOBGATE_DB_PASSWORD"))) {
            // Kill B in the middle of a provider call it holds a lease for (a slow or lost reply lasts
            // the whole call deadline), once part of the workload is done.
            await("B leases a job in a long call while the run is under way").atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20)).until(() -> {
                        assertThat(gatewayB.isAlive()).as("B exited:\n%s", Files.readString(logB)).isTrue();
                        return scalar(db, "SELECT count(*) FROM jobs WHERE finalized_at IS NOT NULL") >= JOBS / 5
                                && scalar(db, "SELECT count(*) FROM jobs WHERE lease_owner = '" + ownerB + "' AND status = 'submitting'"
                                + " AND (correlation_id LIKE 'sim-fault-slow-%' OR correlation_id LIKE 'sim-fault-lose_reply-%')") > 0;
                    });
            gatewayB.destroyForcibly(); // SIGKILL: no shutdown hook, open JMS transactions and leases left as they are
            assertThat(gatewayB.waitFor(30, TimeUnit.SECONDS)).isTrue();
            Set<String> heldByB = strings(db, "SELECT job_id FROM jobs WHERE lease_owner = '" + ownerB + "'");
            Map<String, String> finalBeforeKill = pairs(db, "SELECT job_id, finalized_at::text FROM jobs WHERE finalized_at IS NOT NULL");
            long terminalAtKill = finalBeforeKill.size();

            // On a timeout the last assertion names the jobs still open, their status and lease owner.
            await("every job terminal").atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
                assertThat(gatewayA.isAlive()).as("A exited:\n%s", Files.readString(logA)).isTrue();
                assertThat(strings(db, "SELECT job_id || ' ' || status || ' ' || coalesce(lease_owner, '-') FROM jobs"
                        + " WHERE finalized_at IS NULL")).as("open jobs").isEmpty();
            });
            long seconds = (System.nanoTime() - started) / 1_000_000_000;
            System.out.printf("two instances: %d jobs, %d terminal when B was killed holding %d lease(s), all terminal %d s after the first submit%n",
                    JOBS, terminalAtKill, heldByB.size(), seconds);

            try (S3Client objects = ObjectStorage.client(s3.endpoint(), "us-east-1", s3.accessKey(), s3.secretKey())) {
                verify(db, indexOf, heldByB, finalBeforeKill, ownerA, ownerB, apiA, objects);
            }
        }
    }

    private void verify(Connection db, Map<String, Integer> indexOf, Set<String> heldByB, Map<String, String> finalBeforeKill,
                        String ownerA, String ownerB, ApiClient apiA, S3Client s3) throws Exception {
        assertThat(scalar(db, "SELECT count(*) FROM jobs")).as("only this workload's jobs").isEqualTo(JOBS);
        assertThat(heldByB).as("B died holding a lease").isNotEmpty();

        // Each job: its expected end, exactly one final status event, one debit, a refund only when failed.
        Map<String, String> problems = new LinkedHashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery("""
                SELECT j.job_id::text, j.tenant_id, j.status, j.error_category, j.finalized_at::text, j.result::text,
                       (SELECT count(*) FROM outbox o WHERE o.job_id = j.job_id AND o.event_type = 'status'
                           AND o.payload->>'status' IN ('succeeded', 'failed', 'cancelled')) AS final_events,
                       (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'debit') AS debits,
                       (SELECT count(*) FROM ledger l WHERE l.job_id = j.job_id AND l.entry_type = 'refund') AS refunds
                  FROM jobs j""")) {
            while (rs.next()) {
                String job = rs.getString(1);
                String tenant = rs.getString(2);
                String status = rs.getString(3);
                int index = indexOf.get(job);
                boolean failing = "wrong_media_type".equals(fault(index));
                List<String> wrong = new ArrayList<>();
                if (!status.equals(failing ? "failed" : "succeeded")) {
                    wrong.add("status " + status + " (" + rs.getString(4) + ")");
                }
                if (failing && !"invalid_output".equals(rs.getString(4))) {
                    wrong.add("category " + rs.getString(4));
                }
                if (rs.getInt(7) != 1) {
                    wrong.add(rs.getInt(7) + " final status events");
                }
                if (rs.getInt(8) != 1) {
                    wrong.add(rs.getInt(8) + " debits");
                }
                if (rs.getInt(9) != (status.equals("failed") ? 1 : 0)) {
                    wrong.add(rs.getInt(9) + " refunds");
                }
                String before = finalBeforeKill.get(job);
                if (before != null && !before.equals(rs.getString(5))) {
                    wrong.add("finalized_at moved from " + before + " to " + rs.getString(5));
                }
                wrong.addAll(outputProblems(job, tenant, status, rs.getString(6), apiA, s3));
                if (!wrong.isEmpty()) {
                    problems.put(job + " #" + index + " " + fault(index), String.join("; ", wrong));
                }
            }
        }
        assertThat(problems).as("jobs that did not end exactly once as expected").isEmpty();

        // Both instances worked, and B's attempts are kept as evidence; the calls B died in were
        // taken over: each job B held has an attempt after B's, made by A.
        assertThat(scalar(db, "SELECT count(*) FROM attempts WHERE worker = '" + ownerB + "'")).isPositive();
        assertThat(scalar(db, "SELECT count(*) FROM attempts WHERE worker = '" + ownerA + "'")).isPositive();
        for (String job : heldByB) {
            assertThat(scalar(db, "SELECT count(*) FROM attempts a WHERE a.job_id = '" + job + "' AND a.worker = '" + ownerA
                    + "' AND a.attempt > (SELECT coalesce(max(attempt), 0) FROM attempts WHERE job_id = '" + job + "' AND worker = '" + ownerB + "')"))
                    .as("job %s, held by B when it died, was attempted again by A", job).isPositive();
        }
        // Nothing left behind: no open dispatch and no running slot counted (the relay window is whole).
        assertThat(scalar(db, "SELECT count(*) FROM outbox WHERE event_type = 'dispatch' AND published_at IS NULL")).isZero();
        assertThat(scalar(db, "SELECT coalesce(sum(running_jobs), 0) FROM tenant_counters")).isZero();
    }

    /** A succeeded job: one promoted output (and its manifest), readable with its digest; a failed one: none. */
    private static List<String> outputProblems(String job, String tenant, String status, String result, ApiClient api,
                                               S3Client s3) throws Exception {
        List<String> wrong = new ArrayList<>();
        List<String> promoted = s3.listObjectsV2(r -> r.bucket("jobgate").prefix("outputs/" + tenant + "/" + job + "/")).contents()
                .stream().map(o -> o.key().substring(o.key().lastIndexOf('/') + 1)).sorted().toList();
        String key = tenant.equals("it-north") ? "it-north-key" : "it-south-key";
        if (status.equals("succeeded")) {
            JsonNode record = result == null ? null : JSON.readTree(result);
            if (record == null || !record.path("output_key").asText().equals("outputs/" + tenant + "/" + job + "/output.png")) {
                wrong.add("result record " + result);
            }
            if (!promoted.equals(List.of("manifest.json", "output.png"))) {
                wrong.add("promoted objects " + promoted);
            }
            byte[] output = api.getBytes(key, "/v1/jobs/" + job + "/output");
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(output));
            if (record != null && !sha.equals(record.path("sha256").asText())) {
                wrong.add("readable output's digest " + sha + " is not the record's " + record.path("sha256").asText());
            }
        } else {
            if (!promoted.isEmpty()) {
                wrong.add("a failed job has promoted objects " + promoted);
            }
            int code = api.get(key, "/v1/jobs/" + job + "/output").status();
            if (code != 409) {
                wrong.add("output of a failed job answered " + code);
            }
        }
        return wrong;
    }

    /** Submits the workload to A from a few clients; answers job id -> index. */
    private static Map<String, Integer> submit(int port) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try {
            List<Future<String>> ids = new ArrayList<>();
            for (int i = 0; i < JOBS; i++) {
                int index = i;
                ids.add(clients.submit(() -> {
                    String body = """
                            {"preset_id": "invoice-clean", "aspect_class": "square",
                             "inputs": {"supplier_name": "Two Instances AG", "invoice_id": "TI-%d", "currency": "EUR",
                                        "line_items": [{"description": "Rendering", "quantity": 1, "unit_price": 10}]}}"""
                            .formatted(index);
                    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/jobs"))
                            .header("Authorization", "Bearer " + (index % 2 == 0 ? "it-north-key" : "it-south-key"))
                            .header("Idempotency-Key", "two-" + index).header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofString(body));
                    if (fault(index) != null) {
                        request.header("X-Correlation-Id", "sim-fault-" + fault(index) + "-" + index);
                    }
                    HttpResponse<String> answer = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(answer.statusCode()).as(answer.body()).isEqualTo(202);
                    return JSON.readTree(answer.body()).path("job_id").asText();
                }));
            }
            Map<String, Integer> indexOf = new HashMap<>();
            for (int i = 0; i < ids.size(); i++) {
                indexOf.put(ids.get(i).get(60, TimeUnit.SECONDS), i);
            }
            return indexOf;
        } finally {
            clients.shutdownNow();
        }
    }

    /** Two tenants of this test only, with room to run many jobs at once. */
    private static Path tenantsFile(Path dir) throws Exception {
        StringBuilder yaml = new StringBuilder("tenants:\n");
        for (String id : List.of("it-north", "it-south")) {
            yaml.append("""
                      - id: %s
                        display_name: %s
                        api_key_sha256: %s
                        max_open_jobs: 1000
                        max_running_jobs: 12
                        credit_grants: {initial: 1000000000}
                    """.formatted(id, id, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest((id + "-key").getBytes(StandardCharsets.UTF_8)))));
        }
        Path file = dir.resolve("tenants.yaml");
        Files.writeString(file, yaml);
        return file;
    }

    /** The packaged gateway as a process, configured by environment only (nothing inherited that picks roles). */
    private static ProcessBuilder gateway(Path dir, Path log, int port) throws Exception {
        Files.createDirectories(dir);
        return PackagedGateway.builder(dir.resolve("data"), port, log, "-Xmx384m");
    }

    /** The lease owner an instance's workers write into the jobs table, from its start log. */
    private static String leaseOwner(Path log) throws Exception {
        Matcher m = Pattern.compile("workers lease jobs as (\\S+)").matcher(Files.readString(log));
        assertThat(m.find()).as("start log names the lease owner").isTrue();
        return m.group(1);
    }

    private static void stop(Process gateway) throws Exception {
        if (gateway.isAlive()) {
            gateway.destroy();
            if (!gateway.waitFor(60, TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
            }
        }
    }

    /** Empties queues of messages other test classes left on the shared broker. */
    private static void drain(String... queues) throws Exception {
        try (ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(BROKER);
             jakarta.jms.Connection c = factory.createConnection(env("JOBGATE_TEST_BROKER_USER", "jobgate"),
                     env("JOBGATE_TEST_BROKER_PASSWORD", "jobgate"))) {
            c.start();
            try (Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE)) {
                for (String queue : queues) {
                    try (MessageConsumer consumer = s.createConsumer(s.createQueue(queue))) {
                        while (consumer.receive(200) != null) {
                            // dropped
                        }
                    }
                }
            }
        }
    }

    static String databaseUrl(String jdbcUrl, String database) {
        Matcher m = Pattern.compile("^(jdbc:postgresql://[^/?]+/)([^?]*)(.*)$").matcher(jdbcUrl);
        assertThat(m.matches()).as("a PostgreSQL JDBC URL with a database: %s", jdbcUrl).isTrue();
        return m.group(1) + database + m.group(3);
    }

    private static long scalar(Connection db, String sql) throws Exception {
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static Set<String> strings(Connection db, String sql) throws Exception {
        Set<String> values = new HashSet<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.add(rs.getString(1));
            }
        }
        return values;
    }

    private static Map<String, String> pairs(Connection db, String sql) throws Exception {
        Map<String, String> values = new HashMap<>();
        try (Statement s = db.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                values.put(rs.getString(1), rs.getString(2));
            }
        }
        return values;
    }

    private static String env(String name, String defaultValue) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? defaultValue : value;
    }
}
