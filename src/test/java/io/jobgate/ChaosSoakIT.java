package io.jobgate;

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.WireMock;
import com.github.tomakehurst.wiremock.core.WireMockConfiguration;
import com.github.tomakehurst.wiremock.stubbing.ServeEvent;
import io.jobgate.chaos.ChaosChecks;
import io.jobgate.chaos.ChaosLoad;
import io.jobgate.chaos.ChaosWorkers;
import io.jobgate.chaos.RunFigures;
import io.jobgate.chaos.RunFigures.Recovery;
import io.jobgate.infra.EmbeddedS3Server;
import io.jobgate.infra.ObjectStorage;
import io.jobgate.simulator.ProviderSimulator;
import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.PackagedGateway;
import io.jobgate.support.Samples;
import io.jobgate.support.StandaloneBroker;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static io.jobgate.chaos.RunFigures.rows;
import static io.jobgate.chaos.RunFigures.scalar;
import static io.jobgate.chaos.RunFigures.successTimes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The chaos soak (issues 11 and 17): the packaged gateway on a real PostgreSQL, a standalone Artemis
 * of its own, the S3 server and the provider simulator with random faults (429 in its three forms,
 * 503, slow calls, lost replies, wrong media types and sizes, prose for an image), under a steady
 * load of several tenants with duplicate submissions, one of whose jobs go to a slow synchronous provider
 * (a stand-in of OpenAI's Images API taking {@link #SLOW_CALL} per image, issue 35), so that every event
 * meets calls in flight and its answers can be counted against the jobs. Two tenants' jobs name a pool of the simulator and
 * that stand-in ({@link #POOL}) instead of a provider, so that the faults and events meet jobs that may move between
 * members; the pool's invariants are checked on them beside the rest. The pool's third member is a pull member
 * ({@link #PULL_MEMBER}, docs/workers.md) whose tasks a few external workers ({@link ChaosWorkers}) lease over HTTP, now
 * and then abandoning one (as if killed: its lease runs out and another worker renders it) or failing one as transient;
 * once all of them are gone for longer than its worker-absent-seconds, so that pool jobs move off it, and come back.
 * Meanwhile the gateway is killed with SIGKILL
 * {@link #GATEWAY_KILLS} times, the broker once, and the gateway is stopped once with SIGTERM; each time it is started
 * again at once. Afterwards every invariant of the design is checked ({@link ChaosChecks}), jobs must have
 * succeeded but for the failures the injected faults explain ({@link #explainedFailures}), and the
 * recovery after each event is measured from the succeeded jobs' own finish times. The tables go to
 * {@code target/chaos/report.txt}; any violation fails the run.
 *
 * <p>Size: {@code -Djobgate.chaos.rate} jobs per second (default 8: the short version CI runs),
 * {@code -Djobgate.chaos.observe-seconds} after each event, {@code -Djobgate.chaos.gateway-kills} SIGKILLs (default 2); {@code mvn -Pchaos verify} runs the full
 * soak. Needs CI's PostgreSQL ({@code JOBGATE_TEST_JDBC_URL}) and a broker distribution
 * ({@code JOBGATE_TEST_ARTEMIS_HOME}); skipped without them unless {@code JOBGATE_TEST_REQUIRE_*} is set.
 */
class ChaosSoakIT {

    static final String JDBC = System.getenv("JOBGATE_TEST_JDBC_URL");
    static final String ARTEMIS_HOME = System.getenv("JOBGATE_TEST_ARTEMIS_HOME");
    static final int RATE = Integer.getInteger("jobgate.chaos.rate", 8);
    static final Duration OBSERVE = Duration.ofSeconds(Math.max(30, Integer.getInteger("jobgate.chaos.observe-seconds", 30)));
    static final Duration WINDOW = Duration.ofSeconds(10);
    /** How often the gateway is killed with SIGKILL (at least once): twice in CI's short version, three times in the full soak. */
    static final int GATEWAY_KILLS = Math.max(1, Integer.getInteger("jobgate.chaos.gateway-kills", 2));
    /** Issue 17: jobs finish within 10 s of ready, the rate is back to 80% within 30 s. */
    static final Duration FIRST_FINISH = Duration.ofSeconds(10);
    static final Duration RECOVER = Duration.ofSeconds(30);
    static final List<String> TENANTS = List.of("chaos-a", "chaos-b", "chaos-c", "chaos-slow");
    /**
     * Issue 35's slow provider: the tenant chaos-slow's jobs go to OpenAI's Images API, here a stand-in that
     * answers every generation after {@link #SLOW_CALL}, so every event meets calls in flight. Its answers are
     * counted against the jobs afterwards ({@link ChaosChecks.ProviderAnswer}).
     */
    static final String SLOW_TENANT = "chaos-slow";
    /**
     * The pool of three image members of different kinds, the simulator (weight 3), the slow stand-in of OpenAI's
     * Images API (weight 1) and the pull member {@link #PULL_MEMBER} (weight 2): the jobs of {@link #POOL_TENANTS}
     * (half of the load) name it instead of a provider, so that the simulator's faults and the workers' absence move them
     * between members and every event meets pool jobs on each.
     */
    static final String POOL = "images";
    /**
     * The pool's pull member (docs/workers.md): declared for the packaged gateway by environment alone, its provider file
     * and adapter route in the run's directory; its tasks are leased by {@link #WORKERS} workers of the test
     * ({@link ChaosWorkers}) with the worker key of src/test/resources/workers.
     */
    static final String PULL_MEMBER = "gpubox";
    static final List<String> POOL_MEMBERS = List.of("simulator", "openai", PULL_MEMBER);
    static final int WORKERS = 4;
    /** Its workers' faults, per task leased: dropped as if killed (the lease runs out), failed as transient. */
    static final double WORKER_ABANDONS = 0.03;
    static final double WORKER_FAILS = 0.02;
    /** How long a lease lasts without a heartbeat (short, so an abandoned task comes back soon), and when no worker seen means down. */
    static final int LEASE_SECONDS = 10;
    static final int WORKER_ABSENT_SECONDS = 15;
    /**
     * How long every worker is gone once: its worker-absent-seconds, the up to 5 s the record of a worker's last call may
     * be behind (and a long poll cut short may count as waiting a few seconds more), and the time a waiting task's job
     * takes to be looked up again (the intervals grow: 2, 4, 8, 16 s...) so that its task is withdrawn and the job moves,
     * and new pool jobs are refused by the member and placed elsewhere.
     */
    static final Duration WORKERS_AWAY = Duration.ofSeconds(WORKER_ABSENT_SECONDS + 30);
    static final List<String> POOL_TENANTS = List.of("chaos-a", "chaos-b");
    static final Duration SLOW_CALL = Duration.ofSeconds(3);
    static final String IMAGES = "/v1/images/generations";
    static final Pattern INVOICE = Pattern.compile("CH-(\\d+)");
    /** The simulator's faults, per submit (retries included). */
    static final String FAULTS = "rate_limit_seconds:0.003,rate_limit_date:0.003,rate_limit_no_header:0.002,server_error:0.02,"
            + "slow:0.02,lose_reply:0.01,wrong_media_type:0.01,wrong_size:0.005,prose:0.005";

    enum Kind { GATEWAY_SIGKILL, BROKER_SIGKILL, GATEWAY_SIGTERM }

    /** What happened at one event and how the gateway came back. */
    record Event(String name, Kind kind, Instant at, Instant ready, Duration down, Duration stop) {
    }

    /** When every worker of the pull member was gone, and when they were back. */
    record Away(Instant from, Instant until) {
    }

    private Path dir;
    private Map<String, String> environment;
    private int port;
    private Process gateway;
    private int starts;

    @Test
    void theGatewayKeepsEveryPromiseThroughKillsAndABrokerRestartUnderFaultyProviders() throws Exception {
        boolean required = Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_EXTERNAL_DB"))
                || Boolean.parseBoolean(System.getenv("JOBGATE_TEST_REQUIRE_STANDALONE_BROKER"));
        boolean present = JDBC != null && !JDBC.isBlank() && ARTEMIS_HOME != null && !ARTEMIS_HOME.isBlank();
        if (required && !present) {
            throw new IllegalStateException("JOBGATE_TEST_REQUIRE_* is set but JOBGATE_TEST_JDBC_URL or JOBGATE_TEST_ARTEMIS_HOME is not");
        }
        Assumptions.assumeTrue(present, "no external PostgreSQL and broker distribution (JOBGATE_TEST_JDBC_URL, JOBGATE_TEST_ARTEMIS_HOME)");

        dir = Files.createTempDirectory("jobgate-chaos");
        String database = "jobgate_chaos_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        String user = env("JOBGATE_TEST_JDBC_USER", "postgres");
        String password = env("JOBGATE_TEST_JDBC_PASSWORD", "");
        try (Connection admin = DriverManager.getConnection(JDBC, user, password)) {
            try (Statement s = admin.createStatement()) {
                s.execute("CREATE DATABASE " + database);
            }
            try {
                String url = TwoInstancesIT.databaseUrl(JDBC, database);
                try (StandaloneBroker broker = StandaloneBroker.create(Path.of(ARTEMIS_HOME), dir.resolve("broker"));
                     Connection db = DriverManager.getConnection(url, user, password)) {
                    soak(url, user, password, broker, db);
                }
            } finally {
                try (Statement s = admin.createStatement()) {
                    s.execute("DROP DATABASE IF EXISTS " + database + " WITH (FORCE)");
                }
            }
        }
    }

    private void soak(String dbUrl, String user, String password, StandaloneBroker broker, Connection db) throws Exception {
        broker.start();
        EmbeddedS3Server s3 = EmbeddedS3Server.start(dir.resolve("s3"), 0);
        Properties shipped = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/application.properties"))) {
            shipped.load(r);
        }
        Properties simulatorFile = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/providers/simulator.properties"))) {
            simulatorFile.load(r);
        }
        Duration rateLimitBackoff = Duration.ofSeconds(Long.parseLong(
                simulatorFile.getProperty("jobgate.provider.simulator.rate-limit-backoff-seconds", "60").trim()));
        try (ProviderSimulator simulator = ProviderSimulator.start(new ProviderSimulator.Config(0, Duration.ofMillis(300),
                Duration.ofMillis(5000), shipped.getProperty("jobgate.simulator.webhook-secret").trim(),
                ProviderSimulator.rates(FAULTS)));
             SlowImages slowImages = new SlowImages()) {
            port = GatewayTestSupport.freePort();
            environment = new LinkedHashMap<>();
            environment.put("JOBGATE_DB_URL", dbUrl);
            environment.put("JOBGATE_DB_USER", user);
            environment.put("JOBGATE_DB_PASSWORD", password);
            environment.put("JOBGATE_BROKER_URL", broker.url());
            environment.put("JOBGATE_BROKER_USER", "jobgate");
            environment.put("JOBGATE_BROKER_PASSWORD", "jobgate");
            environment.put("JOBGATE_S3_ENDPOINT", s3.endpoint());
            environment.put("JOBGATE_S3_ACCESS_KEY", s3.accessKey());
            environment.put("JOBGATE_S3_SECRET_KEY", s3.secretKey());
            environment.put("JOBGATE_TENANTS_FILES", RunFigures.tenantsFile(dir, TENANTS).toString());
            environment.put("JOBGATE_SIMULATOR_ENABLED", "false");
            environment.put("JOBGATE_SIMULATOR_URL", "http://127.0.0.1:" + simulator.port());
            environment.put("JOBGATE_PUBLIC_BASE_URL", "http://127.0.0.1:" + port);
            environment.put("JOBGATE_PROVIDER_OPENAI_BASE_URL", slowImages.baseUrl());
            environment.put("JOBGATE_PROVIDER_OPENAI_API_KEY", "chaos");
            // The pool: its file in a directory of its own. OpenAI's calls in flight (its file allows 8) take the pool
            // jobs placed or moved there beside the slow tenant's (2 jobs/s at 3 s a call each).
            environment.put("JOBGATE_POOLS_DIRS", poolDir().toString());
            environment.put("JOBGATE_PROVIDER_OPENAI_MAX_CONCURRENCY", "32");
            // OpenAI has no lookup and no idempotent submit: a call a SIGKILL cut short leaves its job in
            // submission_unknown until its lifetime and the reconcile horizon have passed. Both short here,
            // so that such jobs end (expired, refunded) within the run.
            environment.put("JOBGATE_LIMITS_MAX_LIFETIME_SECONDS", "180");
            environment.put("JOBGATE_RECONCILE_HORIZON_SECONDS", "0");
            // The pull member beside the shipped providers and routes (as ExternalWorkersIT gives it to the jar).
            Path pullMember = pullMemberDir();
            environment.put("JOBGATE_PROVIDERS_DIRS", shipped.getProperty("jobgate.providers.dirs").trim() + "," + pullMember.resolve("providers"));
            environment.put("CAMEL_MAIN_ROUTES_INCLUDE_PATTERN", shipped.getProperty("camel.main.routes-include-pattern").trim()
                    + ",file:src/test/resources/workers/adapters/*.camel.yaml");
            environment.put("JOBGATE_WORKERS_LEASE_SECONDS", Integer.toString(LEASE_SECONDS));
            // Every other setting as shipped: the recovery measured is the one users get.

            ApiClient api = new ApiClient(port);
            Instant firstReady = startGateway(api);
            List<Event> events = new ArrayList<>();
            Away away;
            try (ChaosWorkers workers = new ChaosWorkers(port, PULL_MEMBER, TestTenants.GPUBOX_WORKER, WORKERS, WORKER_ABANDONS, WORKER_FAILS);
                 ChaosLoad load = new ChaosLoad(port, TENANTS.stream().map(t -> t + "-key").toList(), RATE,
                    Map.of(SLOW_TENANT + "-key", "openai"), POOL_TENANTS.stream().collect(java.util.stream.Collectors.toMap(
                    t -> t + "-key", t -> POOL)))) {
                workers.start();
                load.start();
                Instant began = Instant.now();
                awaitSucceededSince(db, began, RATE * 10);
                events.add(killGateway("SIGKILL 1", api));
                observe(db, events);
                events.add(restartBroker(broker));
                away = workersAway(db, events.get(events.size() - 1), workers);
                observe(db, events);
                for (int kill = 2; kill <= GATEWAY_KILLS; kill++) {
                    events.add(killGateway("SIGKILL " + kill, api));
                    observe(db, events);
                }
                events.add(stopGateway(api));
                observe(db, events);
                load.stopSubmitting();
                int accepted = load.accepted().size();
                await("every accepted job terminal").atMost(Duration.ofMinutes(5)).pollInterval(Duration.ofMillis(500))
                        .untilAsserted(() -> {
                            assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log())).isTrue();
                            assertThat(scalar(db, "SELECT count(*) FROM jobs WHERE finalized_at IS NULL")).as("open jobs").isZero();
                        });
                Instant drained = Instant.now();
                load.close();
                workers.stop();

                List<ChaosChecks.Check> checks;
                try (S3Client objects = ObjectStorage.client(s3.endpoint(), "us-east-1", s3.accessKey(), s3.secretKey())) {
                    List<Instant> kills = events.stream().filter(e -> e.kind() == Kind.GATEWAY_SIGKILL).map(Event::at).toList();
                    checks = new ChaosChecks(db, objects, "jobgate", api, rateLimitBackoff).run(load,
                            explainedFailures(load, Integer.parseInt(shipped.getProperty("jobgate.limits.max-attempts").trim()), kills.size()),
                            slowImages.answers(), kills, new ChaosChecks.PoolSpec(POOL, imagePrices(pullMember.resolve("providers")),
                                    List.of(PULL_MEMBER)));
                }
                String report = report(db, load, events, checks, firstReady, began, drained, accepted) + poolReport(db)
                        + pullMemberReport(db, workers, away)
                        + "slow provider (OpenAI's Images API answering after %d s): %d calls answered; jobs of %s: %s%n".formatted(
                        SLOW_CALL.toSeconds(), slowImages.answers().size(), SLOW_TENANT, rows(db, "SELECT status || coalesce(' ' "
                                + "|| error_category, ''), count(*) FROM jobs WHERE tenant_id = '" + SLOW_TENANT + "' GROUP BY 1 ORDER BY 1"));
                Path file = Path.of("target/chaos/report.txt");
                Files.createDirectories(file.getParent());
                Files.writeString(file, report);
                System.out.println(report);

                assertThat(checks.stream().filter(c -> !c.violations().isEmpty()).map(c -> c.rule() + ": " + c.violations().stream()
                        .limit(10).toList()).toList()).as("violated invariants").isEmpty();
                Duration grace = Duration.ofSeconds(Long.parseLong(shipped.getProperty("camel.main.shutdown-timeout").trim()));
                for (Event e : events) {
                    if (e.stop() != null) {
                        assertThat(e.stop()).as("SIGTERM to exit, within the shutdown grace and the JVM's exit")
                                .isLessThanOrEqualTo(grace.plusSeconds(10));
                    }
                    Recovery r = recovery(db, e);
                    // Back to 80 % of nothing would hold trivially (jobs failing since an earlier event).
                    assertThat(r.before()).as("%s: jobs succeeding in the %d s before it", e.name(), WINDOW.toSeconds()).isPositive();
                    assertThat(r.firstFinish()).as("%s: a job succeeded within 10 s of ready", e.name()).isNotNull()
                            .isLessThanOrEqualTo(FIRST_FINISH);
                    assertThat(r.backAt80()).as("%s: the rate of successes back to 80%% of %.1f/s within %d s", e.name(),
                            r.before(), RECOVER.toSeconds()).isNotNull();
                }
                assertThat(accepted).isPositive();
                assertThat(workers.unexpectedAnswers()).as("answers the workers did not expect").isEmpty();
                assertThat(movedOffThePullMember(db, away)).as("pool jobs moved off %s while its workers were away", PULL_MEMBER).isPositive();
                assertThat(renderedOnThePullMemberSince(db, away.until())).as("jobs rendered by %s's workers once back", PULL_MEMBER)
                        .isPositive();
            } finally {
                stopQuietly();
                s3.stop();
            }
        }
    }

    /**
     * The failures the injected faults explain, per tenant: category → at most how many of the tenant's accepted jobs
     * ({@link ChaosChecks#explained}: three times the expected number, and two). Anything else must succeed.
     * <ul>
     * <li>The simulator's tenants: a wrong media type or size is refused by the output check and not retried
     * ({@code invalid_output}); prose for an image is unreadable, and fails the job on the second in a row
     * ({@code unparseable_response}); 429s, 503s and prose on every attempt use them all up ({@code exhausted}). Slow
     * calls and lost replies are found again by lookup and succeed.</li>
     * <li>{@link #SLOW_TENANT}: its stand-in injects nothing, but a call a SIGKILL cut short cannot be looked up
     * (OpenAI has none) and its job expires ({@code expired}): at most the calls the tenant had at the provider,
     * {@link RunFigures#MAX_RUNNING}, per SIGKILL.</li>
     * <li>{@link #POOL_TENANTS}: the simulator's, on the attempts the pool places there, and the slow provider's, on
     * those it places on OpenAI (a call cut short there never moves: it expires). Nothing on {@link #PULL_MEMBER}: its
     * workers' faults (a task abandoned, one failed as transient) and their absence are retried or moved, never a job's end.</li>
     * </ul>
     */
    static Map<String, Map<String, Long>> explainedFailures(ChaosLoad load, int maxAttempts, int gatewayKills) {
        Map<String, Double> rate = ProviderSimulator.rates(FAULTS);
        double refused = rate.get("rate_limit_seconds") + rate.get("rate_limit_date") + rate.get("rate_limit_no_header")
                + rate.get("server_error") + rate.get("prose");
        Map<String, Long> jobs = new LinkedHashMap<>();
        load.accepted().forEach(a -> jobs.merge(a.apiKey().substring(0, a.apiKey().length() - "-key".length()), 1L, Long::sum));
        Map<String, Map<String, Long>> explained = new LinkedHashMap<>();
        jobs.forEach((tenant, n) -> {
            Map<String, Long> simulator = Map.of("invalid_output", ChaosChecks.explained(rate.get("wrong_media_type") + rate.get("wrong_size"), n),
                    "unparseable_response", ChaosChecks.explained(rate.get("prose") * rate.get("prose"), n),
                    "exhausted", ChaosChecks.explained(Math.pow(refused, maxAttempts), n));
            Map<String, Long> slow = Map.of("expired", (long) RunFigures.MAX_RUNNING * gatewayKills);
            Map<String, Long> mine = new LinkedHashMap<>();
            if (!tenant.equals(SLOW_TENANT)) {
                mine.putAll(simulator);
            }
            if (tenant.equals(SLOW_TENANT) || POOL_TENANTS.contains(tenant)) {
                mine.putAll(slow);
            }
            explained.put(tenant, mine);
        });
        return explained;
    }

    /**
     * A stand-in of OpenAI's Images API that takes {@link #SLOW_CALL} for every generation (a square PNG, as
     * gpt-image-1 answers), its delays served without a thread each; its log is what it answered.
     */
    static final class SlowImages implements AutoCloseable {
        private final WireMockServer server = new WireMockServer(WireMockConfiguration.options().dynamicPort().bindAddress("127.0.0.1")
                .asynchronousResponseEnabled(true).asynchronousResponseThreads(4).containerThreads(64));

        SlowImages() {
            server.start();
            // The size and format asked for: the pool's jobs come in every aspect class, PNG or JPEG by their preset.
            for (int[] size : new int[][] {{1024, 1024}, {1536, 1024}, {1024, 1536}}) {
                for (String format : List.of("png", "jpeg")) {
                    byte[] image = format.equals("png") ? Samples.png(size[0], size[1]) : Samples.jpeg(size[0], size[1]);
                    server.stubFor(WireMock.post(WireMock.urlEqualTo(IMAGES))
                            .withRequestBody(WireMock.matchingJsonPath("$.size", WireMock.equalTo(size[0] + "x" + size[1])))
                            .withRequestBody(WireMock.matchingJsonPath("$.output_format", WireMock.equalTo(format)))
                            .willReturn(WireMock.aResponse().withStatus(200)
                                    .withHeader("Content-Type", "application/json").withHeader("x-request-id", "req_chaos")
                                    .withBody("{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(image)
                                            + "\"}], \"usage\": {\"input_tokens\": 20, \"output_tokens\": 1056, \"total_tokens\": 1076}}")
                                    .withFixedDelay((int) SLOW_CALL.toMillis())));
                }
            }
        }

        String baseUrl() {
            return "http://127.0.0.1:" + server.port() + "/v1";
        }

        /** Each call it answered: its job's idempotency key (the invoice number in the prompt), when it came, when its answer left. */
        List<ChaosChecks.ProviderAnswer> answers() {
            List<ChaosChecks.ProviderAnswer> answers = new ArrayList<>();
            for (ServeEvent event : server.getAllServeEvents()) {
                if (!event.getRequest().getUrl().equals(IMAGES)) {
                    continue;
                }
                Matcher invoice = INVOICE.matcher(event.getRequest().getBodyAsString());
                Instant arrived = event.getRequest().getLoggedDate().toInstant();
                answers.add(new ChaosChecks.ProviderAnswer(invoice.find() ? ChaosLoad.key(Integer.parseInt(invoice.group(1))) : "?",
                        arrived, arrived.plus(SLOW_CALL)));
            }
            return answers;
        }

        @Override
        public void close() {
            server.stop();
        }
    }

    /**
     * The pool's file, {@code <dir>/pools/images.properties}. The simulator's faults fail about one call in twenty
     * (503s, calls past its deadline, lost replies): its threshold lets that background pass and cools it on a burst.
     */
    private Path poolDir() throws Exception {
        Path pools = dir.resolve("pools");
        Files.createDirectories(pools);
        Files.writeString(pools.resolve(POOL + ".properties"), """
                kind = image
                members = %s
                weight.simulator = 3
                weight.openai = 1
                weight.%s = 2
                failure-threshold.simulator = 15
                failure-window-seconds.simulator = 60
                cooldown-seconds.simulator = 20
                cooldown-seconds.%s = 10
                """.formatted(String.join(", ", POOL_MEMBERS), PULL_MEMBER, PULL_MEMBER));
        return pools;
    }

    /**
     * The pull member's provider file, {@code <dir>/gpubox/providers} (its adapter route is the tests' own,
     * src/test/resources/workers/adapters, as ExternalWorkersIT gives it to the jar): an image
     * member of the shipped sizes, leased by workers holding the key of src/test/resources/workers (its SHA-256 below),
     * counted as down when none of them was seen within {@link #WORKER_ABSENT_SECONDS}. Its price is below OpenAI's: the
     * pool's jobs are priced at the dearest member's.
     */
    private Path pullMemberDir() throws Exception {
        Path root = dir.resolve(PULL_MEMBER);
        Files.createDirectories(root.resolve("providers"));
        Files.writeString(root.resolve("providers").resolve(PULL_MEMBER + ".properties"), """
                jobgate.provider.%1$s.kinds = image
                jobgate.provider.%1$s.revision = %1$s-1
                jobgate.provider.%1$s.operations = submit,lookup,cancel
                jobgate.provider.%1$s.worker-key-sha256 = %2$s
                jobgate.provider.%1$s.max-concurrency = 8
                jobgate.provider.%1$s.call-deadline-ms = 2000
                jobgate.provider.%1$s.worker-absent-seconds = %3$d
                jobgate.provider.%1$s.price.image-micros = 20000
                jobgate.provider.%1$s.size.square = 1024x1024
                jobgate.provider.%1$s.size.landscape = 1536x1024
                jobgate.provider.%1$s.size.portrait = 1024x1536
                """.formatted(PULL_MEMBER, io.jobgate.common.Digests.sha256Hex(TestTenants.GPUBOX_WORKER), WORKER_ABSENT_SECONDS));
        return root;
    }

    /**
     * Each member's price per image, from its provider file (what admission prices a pool job with): the shipped files,
     * the pull member's in {@code pullMemberProviders}.
     */
    static Map<String, Long> imagePrices(Path pullMemberProviders) throws Exception {
        Map<String, Long> prices = new LinkedHashMap<>();
        for (String member : POOL_MEMBERS) {
            Properties file = new Properties();
            Path shipped = Path.of("config/providers/" + member + ".properties");
            try (Reader r = Files.newBufferedReader(Files.exists(shipped) ? shipped : pullMemberProviders.resolve(member + ".properties"))) {
                file.load(r);
            }
            prices.put(member, Long.parseLong(file.getProperty("jobgate.provider." + member + ".price.image-micros").trim()));
        }
        return prices;
    }

    /** The pool's lines of the report: its jobs, those that moved between members, each member's attempts. */
    private static String poolReport(Connection db) throws Exception {
        String ofPool = "FROM jobs WHERE pool = '" + POOL + "'";
        return "pool %s (%s): %d pool jobs ran (%s), %d moved between members; final member: %s; attempts per member: %s; "
                .formatted(POOL, String.join(", ", POOL_MEMBERS), scalar(db, "SELECT count(*) " + ofPool),
                        rows(db, "SELECT status || coalesce(' ' || error_category, ''), count(*) " + ofPool + " GROUP BY 1 ORDER BY 1"),
                        scalar(db, "SELECT count(*) FROM (SELECT a.job_id FROM attempts a JOIN jobs j USING (job_id) WHERE j.pool = '"
                                + POOL + "' GROUP BY a.job_id HAVING count(DISTINCT a.adapter) > 1) m"),
                        rows(db, "SELECT provider, count(*) " + ofPool + " GROUP BY 1 ORDER BY 1"),
                        rows(db, "SELECT a.adapter, count(*) FROM attempts a JOIN jobs j USING (job_id) WHERE j.pool = '" + POOL
                                + "' GROUP BY 1 ORDER BY 1"))
                + "attempts per member and outcome: %s%n".formatted(rows(db, "SELECT a.adapter || ' ' || coalesce(a.outcome, '-')"
                + " || coalesce(' ' || a.error_category, ''), count(*) FROM attempts a JOIN jobs j USING (job_id) WHERE j.pool = '"
                + POOL + "' GROUP BY 1 ORDER BY 1"));
    }

    /**
     * The pull member's lines of the report: its tasks by how they ended and how often they were leased, the leases that
     * ran out (a worker abandoned the task, or the gateway was away past its expiry), the pool jobs that moved off it
     * while its workers were away and those it rendered once they were back, and the workers' own count.
     */
    private static String pullMemberReport(Connection db, ChaosWorkers workers, Away away) throws Exception {
        String tasks = "FROM worker_tasks WHERE provider = '" + PULL_MEMBER + "'";
        return ("pull member %s (%d workers, lease %d s, worker-absent-seconds %d): tasks %s; %d leases of %d tasks leased, "
                + "%d tasks leased more than once (%d leases that ran out: abandoned, or lost while the gateway was away); "
                + "tasks per lease count: %s; workers away %d s (%s to %s): %d pool jobs moved off it meanwhile (%d tasks withdrawn, "
                + "never leased; %d submits refused before any task was written), %d jobs rendered on it since they were back%n"
                + "  workers: %s%n").formatted(
                PULL_MEMBER, WORKERS, LEASE_SECONDS, WORKER_ABSENT_SECONDS,
                rows(db, "SELECT status || coalesce(' ' || error_category, ''), count(*) " + tasks + " GROUP BY 1 ORDER BY 1"),
                scalar(db, "SELECT coalesce(sum(leases), 0) " + tasks), scalar(db, "SELECT count(*) " + tasks + " AND leases > 0"),
                scalar(db, "SELECT count(*) " + tasks + " AND leases > 1"), scalar(db, "SELECT coalesce(sum(leases - 1), 0) " + tasks + " AND leases > 1"),
                rows(db, "SELECT leases::text, count(*) " + tasks + " GROUP BY leases ORDER BY leases"),
                Duration.between(away.from(), away.until()).toSeconds(), away.from(), away.until(), movedOffThePullMember(db, away),
                scalar(db, "SELECT count(*) " + tasks + " AND status = 'failed' AND leases = 0"),
                scalar(db, "SELECT count(*) FROM attempts a WHERE a.adapter = '" + PULL_MEMBER + "' AND NOT EXISTS (SELECT 1 FROM "
                        + "worker_tasks t WHERE t.job_id = a.job_id AND t.attempt = a.attempt)"),
                renderedOnThePullMemberSince(db, away.until()), workers.figures());
    }

    /**
     * Pool jobs moved off the pull member by its workers' absence: an attempt on it that started while they were away and
     * whose task no worker ever leased (withdrawn, or none written: the submit refused), followed by one on another member.
     */
    private static long movedOffThePullMember(Connection db, Away away) throws Exception {
        try (var q = db.prepareStatement("""
                SELECT count(DISTINCT a.job_id) FROM attempts a JOIN attempts n ON n.job_id = a.job_id AND n.attempt > a.attempt
                 WHERE a.adapter = ? AND n.adapter <> ? AND a.started_at BETWEEN ? AND ?
                   AND NOT EXISTS (SELECT 1 FROM worker_tasks t WHERE t.job_id = a.job_id AND t.attempt = a.attempt AND t.leases > 0)""")) {
            q.setString(1, PULL_MEMBER);
            q.setString(2, PULL_MEMBER);
            q.setTimestamp(3, Timestamp.from(away.from()));
            q.setTimestamp(4, Timestamp.from(away.until()));
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Tasks of the pull member that succeeded after {@code since}. */
    private static long renderedOnThePullMemberSince(Connection db, Instant since) throws Exception {
        try (var q = db.prepareStatement("SELECT count(*) FROM worker_tasks WHERE provider = ? AND status = 'succeeded' AND updated_at > ?")) {
            q.setString(1, PULL_MEMBER);
            q.setTimestamp(2, Timestamp.from(since));
            try (ResultSet rs = q.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /**
     * Every worker of the pull member gone for {@link #WORKERS_AWAY}, then back: begun once the gateway has recovered from
     * {@code event} (its rate of successes back to 80 %, or its recovery window over), so that the absence, which slows the
     * pool's jobs on the member until the pool moves them, is not counted as the event's.
     */
    private Away workersAway(Connection db, Event event, ChaosWorkers workers) throws Exception {
        await("recovered from " + event.name() + " before the workers go").atMost(RECOVER.plusSeconds(15)).pollInterval(Duration.ofMillis(500))
                .until(() -> recovery(db, event).backAt80() != null || Instant.now().isAfter(event.ready().plus(RECOVER)));
        workers.stop();
        Instant from = Instant.now();
        await("the workers away").atMost(WORKERS_AWAY.plusSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() -> {
            assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log())).isTrue();
            return !Instant.now().isBefore(from.plus(WORKERS_AWAY));
        });
        workers.start();
        return new Away(from, Instant.now());
    }

    /** Starts the gateway and waits for its health; answers the moment it was ready. */
    private Instant startGateway(ApiClient api) throws Exception {
        starts++;
        ProcessBuilder pb = PackagedGateway.builder(dir.resolve("data"), port, log(), "-Xmx512m");
        pb.environment().putAll(environment);
        gateway = pb.start();
        PackagedGateway.awaitHealthy(gateway, api, log(), Duration.ofSeconds(90));
        return Instant.now();
    }

    private Path log() {
        return dir.resolve("gateway-" + starts + ".log");
    }

    private Event killGateway(String name, ApiClient api) throws Exception {
        Instant at = Instant.now();
        gateway.destroyForcibly(); // SIGKILL: leases, JMS transactions and connections left as they are
        assertThat(gateway.waitFor(30, TimeUnit.SECONDS)).isTrue();
        long started = System.nanoTime();
        Instant ready = startGateway(api);
        return new Event(name, Kind.GATEWAY_SIGKILL, at, ready, Duration.ofNanos(System.nanoTime() - started), null);
    }

    private Event stopGateway(ApiClient api) throws Exception {
        Instant at = Instant.now();
        long begun = System.nanoTime();
        gateway.destroy(); // SIGTERM: new requests get 503, in-flight ones finish, leases are handed back
        assertThat(gateway.waitFor(60, TimeUnit.SECONDS)).as("the gateway stopped on SIGTERM").isTrue();
        Duration stop = Duration.ofNanos(System.nanoTime() - begun);
        long started = System.nanoTime();
        Instant ready = startGateway(api);
        return new Event("SIGTERM", Kind.GATEWAY_SIGTERM, at, ready, Duration.ofNanos(System.nanoTime() - started), stop);
    }

    private Event restartBroker(StandaloneBroker broker) throws Exception {
        Instant at = Instant.now();
        broker.kill();
        Duration down = broker.start();
        return new Event("broker SIGKILL", Kind.BROKER_SIGKILL, at, Instant.now(), down, null);
    }

    /**
     * Lets the run go on for the observation window after the last event, then until the backlog the
     * event left is worked off and one more window of steady load has passed: the next event's
     * "before" rate is then the steady one, not a catch-up burst.
     */
    private void observe(Connection db, List<Event> events) {
        Instant until = events.get(events.size() - 1).ready().plus(OBSERVE);
        await("observation window").atMost(OBSERVE.plusSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() -> {
            assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log())).isTrue();
            return !Instant.now().isBefore(until);
        });
        await("backlog worked off").atMost(Duration.ofMinutes(4)).pollInterval(Duration.ofMillis(250))
                .until(() -> scalar(db, "SELECT count(*) FROM jobs WHERE finalized_at IS NULL") <= 3L * RATE);
        Instant steady = Instant.now().plus(WINDOW);
        await("a window of steady load").atMost(WINDOW.plusSeconds(30)).pollInterval(Duration.ofMillis(250)).until(() -> {
            assertThat(gateway.isAlive()).as("gateway exited:\n%s", Files.readString(log())).isTrue();
            return !Instant.now().isBefore(steady);
        });
    }

    /** The warm-up: the rate of successes before the first event is a steady one. */
    private void awaitSucceededSince(Connection db, Instant since, long n) {
        await("warm-up: " + n + " jobs succeeded").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(250))
                .until(() -> {
                    try (var q = db.prepareStatement("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND finalized_at > ?")) {
                        q.setTimestamp(1, Timestamp.from(since));
                        try (ResultSet rs = q.executeQuery()) {
                            rs.next();
                            return rs.getLong(1) >= n;
                        }
                    }
                });
    }

    private static Recovery recovery(Connection db, Event e) throws Exception {
        return Recovery.of(successTimes(db), e.at(), e.ready(), WINDOW, RECOVER);
    }

    private String report(Connection db, ChaosLoad load, List<Event> events, List<ChaosChecks.Check> checks, Instant firstReady,
                          Instant began, Instant drained, int accepted) throws Exception {
        StringBuilder out = new StringBuilder();
        out.append("chaos soak: %d jobs/s submitted by %d tenants for %d s, %d accepted (%d sent twice on purpose), all terminal %d s after the load began%n"
                .formatted(RATE, TENANTS.size(), Duration.between(began, drained).toSeconds(), accepted, load.duplicatesAnswered(),
                        Duration.between(began, drained).toSeconds()));
        out.append("simulator faults per submit: ").append(FAULTS).append('\n');
        out.append("jobs: ").append(rows(db, "SELECT status || coalesce(' ' || error_category, ''), count(*) FROM jobs GROUP BY 1 ORDER BY 1")).append('\n');
        out.append("attempts: ").append(rows(db, """
                SELECT coalesce(outcome, '-') || coalesce(' ' || http_status, '') || CASE WHEN http_status = 429 THEN
                       CASE WHEN retry_after IS NULL THEN ' (no header)' WHEN retry_after ~ '^[0-9]+$' THEN ' (seconds)' ELSE ' (date)' END
                       ELSE '' END, count(*) FROM attempts GROUP BY 1 ORDER BY 1""")).append('\n');
        out.append("client answers: ").append(load.answers()).append(", no answer (port closed, reset, timeout): ")
                .append(load.noAnswer()).append('\n');
        out.append("arrivals open-loop: %d sent, the latest first POST %d ms after its planned time, at most %d arrivals waiting for the gateway at once%n%n"
                .formatted(load.submitted(), load.latestFirstSendMillis(), load.mostPending()));

        out.append("| event | restart to ready | stop (SIGTERM) | succeeding before (jobs/s) | ready to first success | back to 80% after | best 10 s after (jobs/s) |\n");
        out.append("|---|---|---|---|---|---|---|\n");
        for (Event e : events) {
            Recovery r = recovery(db, e);
            out.append("| %s | %.1f s | %s | %.1f | %s | %s | %.1f |%n".formatted(e.name(), e.down().toMillis() / 1000.0,
                    e.stop() == null ? "-" : "%.1f s".formatted(e.stop().toMillis() / 1000.0), r.before(),
                    r.firstFinish() == null ? "none" : "%.1f s".formatted(r.firstFinish().toMillis() / 1000.0),
                    r.backAt80() == null ? "not within " + RECOVER.toSeconds() + " s" : "%.1f s".formatted(r.backAt80().toMillis() / 1000.0),
                    r.best()));
        }
        out.append('\n');
        out.append("| invariant | examined | violations |\n|---|---|---|\n");
        for (ChaosChecks.Check c : checks) {
            out.append("| %s | %d | %d |%n".formatted(c.rule(), c.examined(), c.violations().size()));
        }
        for (ChaosChecks.Check c : checks) {
            c.violations().stream().limit(20).forEach(v -> out.append("  ").append(c.rule()).append(": ").append(v).append('\n'));
        }
        return out.toString();
    }

    private void stopQuietly() throws Exception {
        if (gateway != null && gateway.isAlive()) {
            gateway.destroy();
            if (!gateway.waitFor(60, TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
            }
        }
    }

    private static String env(String name, String defaultValue) {
        String value = System.getenv(name);
        return value == null || value.isBlank() ? defaultValue : value;
    }
}
