package io.jobgate.bench;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.jobgate.common.Digests;
import io.jobgate.infra.EmbeddedPostgresServer;

/**
 * The parties of the benches that run the gateway as a user runs it ({@code inflight}, {@code sustained}),
 * each a process of its own so its CPU, memory and threads are its own: a PostgreSQL this command starts
 * (embedded binaries; the gateway and JobRunr share it), a stand-in of OpenAI's Images API with a fixed
 * latency ({@link SlowProvider}), and the gateway ({@code java -jar jobgate.jar}) on its embedded
 * defaults but for the settings a user raises after reading docs/settings.md: the OpenAI provider's base
 * URL and {@code max-concurrency}, and tenants of this run whose {@code max_running_jobs} allows it.
 */
final class GatewayProcesses implements AutoCloseable {

    final Path dir;
    final String java;
    final Path jar;
    final String run = Long.toHexString(System.nanoTime() & 0xFFFFFFL);
    final List<String> keys = new ArrayList<>();
    /** Tenants of one bench's own case, outside {@link #tenantPattern()}: their entries, written by {@link #writeTenants}. */
    private final List<String> ownTenants = new ArrayList<>();
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private final EmbeddedPostgresServer postgres;
    private final Process provider;
    final String providerUrl;
    private Process gateway;
    int port;

    /**
     * The bench's PostgreSQL settings: pg_stat_statements preloaded, and for a diagnosis any others from
     * {@code JOBGATE_BENCH_PG_SETTINGS} ({@code name=value;name=value}, e.g. auto_explain's).
     */
    private static Map<String, String> serverSettings() {
        Map<String, String> settings = new java.util.LinkedHashMap<>();
        settings.put("shared_preload_libraries", "pg_stat_statements");
        String extra = System.getenv("JOBGATE_BENCH_PG_SETTINGS");
        if (extra != null && !extra.isBlank()) {
            for (String pair : extra.split(";")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("JOBGATE_BENCH_PG_SETTINGS: not name=value: " + pair);
                }
                settings.put(pair.substring(0, eq).trim(), pair.substring(eq + 1).trim());
            }
        }
        return settings;
    }

    /** Starts PostgreSQL and the stand-in answering after {@code latencyMillis}. */
    GatewayProcesses(Path jar, Path dir, String java, long latencyMillis) throws Exception {
        this.jar = jar;
        this.dir = dir;
        this.java = java;
        this.postgres = EmbeddedPostgresServer.start(dir.resolve("postgres"), 0,
                EmbeddedPostgresServer.Durability.DURABLE, serverSettings());
        int providerPort = Bench.freePort();
        this.provider = start("slow-provider", List.of("-Xss256k",
                "-Dslow-provider.images=" + System.getProperty("jobgate.bench.images", "blank"), "-cp", Bench.benchClasses() + File.pathSeparator + jar, SlowProvider.class.getName(),
                Integer.toString(providerPort), Long.toString(latencyMillis)), Map.of());
        this.providerUrl = "http://127.0.0.1:" + providerPort;
        await(() -> get(providerUrl + "/stats").statusCode() == 200, provider, "the stand-in");
    }

    String jdbcUrl() {
        return postgres.jdbcUrl();
    }

    /** A tenant pattern for SQL: this run's tenants. */
    String tenantPattern() {
        return "bench-" + run + "-%";
    }

    /**
     * Starts the gateway with {@code tenants} tenants allowed {@code maxRunning} jobs each and the OpenAI
     * provider's {@code max-concurrency}; returns once {@code /observe/health} answers 200.
     */
    void startGateway(int tenants, int maxRunning, int maxConcurrency, Map<String, String> moreEnv) throws Exception {
        writeTenants(tenants, maxRunning);
        port = Bench.freePort();
        gateway = startInstance("gateway", port, maxConcurrency, moreEnv);
    }

    /** This run's tenants, {@code maxRunning} jobs running each, in a tenants file every instance reads. */
    void writeTenants(int tenants, int maxRunning) throws IOException {
        StringBuilder yaml = new StringBuilder("tenants:\n");
        for (int i = 0; i < tenants; i++) {
            String key = "bench-" + run + "-" + i + "-" + UUID.randomUUID();
            keys.add(key);
            yaml.append("""
                      - id: bench-%s-%02d
                        api_key_sha256: %s
                        max_open_jobs: 10000000
                        max_running_jobs: %d
                        max_queued_bytes: 1000000000000
                        credit_grants: {bench-%s: 1000000000000000}
                    """.formatted(run, i, Digests.sha256Hex(key), maxRunning, run));
        }
        ownTenants.forEach(yaml::append);
        Files.writeString(dir.resolve("bench-tenants.yaml"), yaml);
    }

    /**
     * A tenant of one bench's own case, written with the others by {@link #startGateway}: its id is {@code name-<run>},
     * outside {@link #tenantPattern()} so that the figures and checks of this run's numbered tenants leave it out;
     * {@code rules} are more lines of its entry (e.g. {@code providers: {deny: [simulator]}}). Returns its API key.
     */
    String ownTenant(String name, String rules) {
        String key = name + "-" + run + "-" + UUID.randomUUID();
        ownTenants.add("""
                  - id: %s
                    api_key_sha256: %s
                    max_open_jobs: 10000000
                    max_queued_bytes: 1000000000000
                    credit_grants: {bench-%s: 1000000000000000}
                    %s
                """.formatted(ownTenantId(name), Digests.sha256Hex(key), run, rules));
        return key;
    }

    /** The id of {@link #ownTenant}'s tenant {@code name}. */
    String ownTenantId(String name) {
        return name + "-" + run;
    }

    /**
     * Starts one gateway instance ({@code name}: its log and data folder) on {@code port}, on this run's
     * database, tenants and stand-in; {@code moreEnv} says the rest (roles, an external broker). Returns once
     * its {@code /observe/health} answers 200.
     */
    Process startInstance(String name, int port, int maxConcurrency, Map<String, String> moreEnv) throws Exception {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("CAMEL_SERVER_PORT", Integer.toString(port));
        env.put("JOBGATE_DATA_DIR", dir.resolve(name).toString());
        env.put("JOBGATE_DB_URL", postgres.jdbcUrl());
        env.put("JOBGATE_BROKER_EMBEDDED_PORT", "0");
        env.put("JOBGATE_SIMULATOR_PORT", "0");
        env.put("JOBGATE_TENANTS_FILES", "config/tenants.yaml," + dir.resolve("bench-tenants.yaml"));
        env.put("JOBGATE_PROVIDER_OPENAI_BASE_URL", providerUrl + "/v1");
        env.put("JOBGATE_PROVIDER_OPENAI_API_KEY", "bench");
        env.put("JOBGATE_PROVIDER_OPENAI_MAX_CONCURRENCY", Integer.toString(maxConcurrency));
        env.putAll(moreEnv);
        List<String> args = new ArrayList<>(List.of("-Xmx512m", "-XX:+ExitOnOutOfMemoryError")); // as the README's run command starts it
        Path archive = jar.resolveSibling("jobgate.jsa");
        if (Files.isReadable(archive)) {
            args.add("-XX:SharedArchiveFile=" + archive); // as the README's run command starts it
        }
        String jvmOptions = System.getenv("JOBGATE_BENCH_GATEWAY_JVM_OPTIONS"); // e.g. a flight recording of the gateway alone
        if (jvmOptions != null && !jvmOptions.isBlank()) {
            args.addAll(List.of(jvmOptions.trim().split("\\s+")));
        }
        args.addAll(List.of("-jar", jar.toString()));
        Process instance = start(name, args, env);
        await(() -> get("http://127.0.0.1:" + port + "/observe/health").statusCode() == 200, instance, name);
        return instance;
    }

    long providerPid() {
        return provider.pid();
    }

    long gatewayPid() {
        return gateway.pid();
    }

    /**
     * {@code -Djobgate.bench.jfr=<file>}: a JFR recording (settings {@code profile}, and on JDK 25 CPU-time samples)
     * of the gateway over the measured run only, started here and written by {@link #stopRecording}. Off by default.
     */
    static final String JFR_FILE = System.getProperty("jobgate.bench.jfr", "");

    void startRecording() throws Exception {
        if (!JFR_FILE.isEmpty()) {
            List<String> start = new ArrayList<>(List.of("JFR.start", "name=bench", "settings=profile"));
            if (Runtime.version().feature() >= 25) { // the gateway runs on this JVM's java
                start.addAll(List.of("jdk.CPUTimeSample#enabled=true", "jdk.CPUTimeSample#throttle=2ms"));
            }
            jcmd(start.toArray(String[]::new));
        }
    }

    void stopRecording() throws Exception {
        if (!JFR_FILE.isEmpty()) {
            jcmd("JFR.stop", "name=bench", "filename=" + JFR_FILE);
            System.out.println("  the gateway's JFR recording of the measured run: " + JFR_FILE);
        }
    }

    private void jcmd(String... command) throws Exception {
        List<String> args = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                Long.toString(gateway.pid())));
        args.addAll(List.of(command));
        Process jcmd = new ProcessBuilder(args).redirectErrorStream(true).start();
        String out = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (jcmd.waitFor() != 0 || out.contains("Could not")) {
            System.out.println("  jcmd " + String.join(" ", command) + ": " + out.strip());
        }
    }

    /** The body of {@link #post}: an image job of the OpenAI provider, as {@link AdmissionLoad}'s. */
    static final String IMAGE_JOB = AdmissionLoad.BODY.replace("{\"preset_id\"", "{\"provider\": \"openai\", \"preset_id\"");

    /** An image job of the OpenAI provider for one of this run's tenants, with a fresh idempotency key. */
    HttpRequest post(int tenant) {
        HttpRequest.Builder request = jobPost(IMAGE_JOB);
        postHeaders(tenant).forEach(request::header);
        return request.build();
    }

    /** {@code POST /v1/jobs} of {@code body} to the gateway, without a tenant's headers yet. */
    HttpRequest.Builder jobPost(String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/v1/jobs")).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body));
    }

    /** The headers of {@link #post}. */
    Map<String, String> postHeaders(int tenant) {
        return Map.of("Authorization", "Bearer " + keys.get(tenant % keys.size()), "Idempotency-Key", UUID.randomUUID().toString(),
                "Content-Type", "application/json");
    }

    Process start(String name, List<String> args, Map<String, String> env) throws IOException {
        List<String> command = new ArrayList<>(List.of(java));
        command.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(dir.resolve(name + ".log").toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("JOBGATE_") || k.startsWith("CAMEL_"));
        pb.environment().putAll(env);
        return pb.start();
    }

    HttpResponse<String> get(String url) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    interface Check {
        boolean ok() throws Exception;
    }

    void await(Check ready, Process process, String what) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        while (System.nanoTime() < until) {
            if (!process.isAlive()) {
                throw new IllegalStateException(what + " exited; see the logs in " + dir);
            }
            try {
                if (ready.ok()) {
                    return;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(100); // another process starting: nothing to wait on but its port
        }
        throw new IllegalStateException(what + " was not ready within 180 s; see the logs in " + dir);
    }

    /** CPU (user and system) a process has used so far, in ms; -1 without /proc. */
    static long cpuMillis(long pid) {
        return cpuMillis(pid, false);
    }

    /** @param withEndedChildren also the CPU of its children that ended (a postmaster's backends whose session closed) */
    static long cpuMillis(long pid, boolean withEndedChildren) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th,
            // cutime and cstime (its waited-for children's) the 14th and 15th.
            String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
            if (withEndedChildren) {
                ticks += Long.parseLong(fields[13]) + Long.parseLong(fields[14]);
            }
            return ticks * 10; // USER_HZ is 100 on Linux
        } catch (IOException | RuntimeException notLinux) {
            return -1;
        }
    }

    /**
     * CPU of this run's PostgreSQL processes so far, in ms: the postmaster (its command line names the data
     * folder) with its backends that ended (a peer's sessions close before its figures are read), and its
     * live children.
     */
    long postgresCpuMillis() {
        String data = dir.resolve("postgres").toString();
        return ProcessHandle.allProcesses().mapToLong(p -> {
            if (p.info().commandLine().map(c -> c.contains(data)).orElse(false)) {
                return Math.max(0, cpuMillis(p.pid(), true));
            }
            return p.parent().flatMap(pp -> pp.info().commandLine()).map(c -> c.contains(data)).orElse(false)
                    ? Math.max(0, cpuMillis(p.pid())) : 0;
        }).sum();
    }

    /** Starts counting the database's statements anew (pg_stat_statements, preloaded by this bench's server). */
    static void resetStatements(java.sql.Connection db) throws java.sql.SQLException {
        try (java.sql.Statement s = db.createStatement()) {
            s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            s.execute("SELECT pg_stat_statements_reset()");
        }
    }

    /**
     * Prints the statements the database ran since {@link #resetStatements}, the costliest {@code top} by
     * execution time, each as calls and milliseconds per finished job: where the database's share goes.
     */
    static void printStatements(java.sql.Connection db, long finishedJobs, int top) throws java.sql.SQLException {
        double jobs = Math.max(1, finishedJobs);
        try (java.sql.Statement s = db.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SELECT calls, total_exec_time, rows, regexp_replace(left(query, 400), '\\s+', ' ', 'g'), "
                     + "shared_blks_hit + shared_blks_read "
                     + "FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time DESC")) {
            System.out.printf("%n  the database's statements over %d finished jobs (pg_stat_statements: execution time, planning not included)%n",
                    finishedJobs);
            System.out.printf("  %9s %9s %9s %11s  %s%n", "calls/job", "ms/job", "rows/call", "blocks/call", "statement");
            double calls = 0;
            double millis = 0;
            int shown = 0;
            while (rs.next()) {
                calls += rs.getLong(1);
                millis += rs.getDouble(2);
                if (shown++ < top) {
                    double perCall = Math.max(1, rs.getLong(1));
                    String text = rs.getString(4);
                    System.out.printf("  %9.2f %9.3f %9.1f %11.1f  %s%n", rs.getLong(1) / jobs, rs.getDouble(2) / jobs,
                            rs.getLong(3) / perCall, rs.getLong(5) / perCall, text.substring(0, Math.min(160, text.length())));
                }
            }
            System.out.printf("  %9.2f %9.3f                        all statements%n", calls / jobs, millis / jobs);
        }
    }

    /** Lines of a party's log that contain {@code text}. */
    long logLines(String name, String text) throws IOException {
        try (var lines = Files.lines(dir.resolve(name + ".log"))) {
            return lines.filter(l -> l.contains(text)).count();
        }
    }

    /** Stops the gateway with SIGTERM (its own clean stop). */
    void stopGateway() throws InterruptedException {
        if (gateway != null) {
            gateway.destroy();
            if (!gateway.waitFor(120, TimeUnit.SECONDS)) {
                gateway.destroyForcibly();
            }
            gateway = null;
        }
    }

    @Override
    public void close() throws Exception {
        stopGateway();
        provider.destroy();
        provider.waitFor(10, TimeUnit.SECONDS);
        postgres.stop();
    }
}
