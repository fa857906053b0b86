package io.jobgate.bench;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.App;
import io.jobgate.infra.Digests;
import org.apache.camel.main.Main;

/**
 * {@code java -jar target/jobgate.jar bench [--jdbc-url URL] [--db-user U] [--db-password P]
 * [--seconds 10] [--clients 1,16,64] [--warm-up 20]}: admission jobs/s and latency over real HTTP against
 * PostgreSQL, beside pgbench running the same three inserts in one transaction on the same server.
 */
public final class Bench {

    private Bench() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = options(args);
        int seconds = Integer.parseInt(opts.getOrDefault("seconds", "10"));
        List<Integer> clients = new ArrayList<>();
        for (String c : opts.getOrDefault("clients", "1,16,64").split(",")) {
            clients.add(Integer.parseInt(c.trim()));
        }
        Path dataDir = Files.createTempDirectory("jobgate-bench");
        int port = freePort();
        String apiKey = "bench-" + System.nanoTime();
        Path tenants = dataDir.resolve("bench-tenants.yaml");
        Files.writeString(tenants, """
                tenants:
                  - id: bench
                    api_key_sha256: %s
                    max_open_jobs: 100000000
                    max_queued_bytes: 1000000000000
                    credit_grants: {bench-%d: 1000000000000000}
                """.formatted(Digests.sha256Hex(apiKey), System.nanoTime()));
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("camel.server.port", Integer.toString(port));
        settings.put("jobgate.data-dir", dataDir.toString());
        settings.put("jobgate.db.url", opts.getOrDefault("jdbc-url", ""));
        settings.put("jobgate.db.user", opts.getOrDefault("db-user", "postgres"));
        settings.put("jobgate.db.password", opts.getOrDefault("db-password", ""));
        settings.put("jobgate.broker.embedded-port", "0");
        settings.put("jobgate.tenants.files", "config/tenants.yaml," + tenants);
        settings.put("jobgate.admission.max-in-flight", "10000000");
        settings.forEach(System::setProperty);

        Main gateway = startGateway();
        try {
            javax.sql.DataSource ds = gateway.getCamelContext().getRegistry().lookupByNameAndType("dataSource",
                    javax.sql.DataSource.class);
            PgBench pgbench = PgBench.locate(ds);
            AdmissionLoad load = new AdmissionLoad(port, apiKey);
            WrkLoad wrk = WrkLoad.locate(port, apiKey, AdmissionLoad.BODY);
            // Warm the JIT before measuring: C2 keeps compiling for the first ~20 s of load.
            int warmUp = Integer.parseInt(opts.getOrDefault("warm-up", "20"));
            if (wrk != null) {
                wrk.run(16, Duration.ofSeconds(warmUp));
            } else {
                load.run(16, Duration.ofSeconds(warmUp), Duration.ofSeconds(1));
            }
            System.out.printf("%njobgate admission benchmark: %s, %d cores, %d s per step after %d s of warm-up; "
                            + "load from %s%n", pgbench.serverDescription(), Runtime.getRuntime().availableProcessors(),
                    seconds, warmUp, wrk != null ? "wrk" : "the JDK HTTP client (install wrk for a lighter load generator)");
            System.out.println("Each job: HTTP POST /v1/jobs -> auth, preset + input validation, pricing, one transaction "
                    + "(job + outbox + ledger debit + tenant and global reservations) -> 202.");
            System.out.println("pgbench: the same job, outbox and ledger inserts in one transaction, plain tables, same server.");
            System.out.printf("%n%8s %12s %9s %9s %14s %8s%n", "clients", "jobs/s", "p50 ms", "p99 ms", "pgbench tps", "ratio");
            for (int c : clients) {
                AdmissionLoad.Result r = wrk != null ? wrk.run(c, Duration.ofSeconds(seconds))
                        : load.run(c, Duration.ofSeconds(2), Duration.ofSeconds(seconds));
                Double tps = pgbench.run(c, seconds);
                System.out.printf("%8d %12.0f %9.2f %9.2f %14s %8s%n", c, r.perSecond(), r.p50Millis(), r.p99Millis(),
                        tps == null ? "n/a" : String.format("%.0f", tps),
                        tps == null ? "n/a" : String.format("%.2f", r.perSecond() / tps));
                if (r.errors() > 0) {
                    System.out.printf("%8s %d requests were not 202: %s%n", "", r.errors(), r.firstError());
                }
            }
            pgbench.cleanUp();
        } finally {
            gateway.stop();
        }
        System.exit(0);
    }

    private static Main startGateway() throws Exception {
        Main main = new Main(App.class);
        main.setPropertyPlaceholderLocations(App.SETTINGS);
        Thread runner = new Thread(() -> {
            try {
                main.run();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, "jobgate-main");
        runner.setDaemon(true);
        runner.start();
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (main.getCamelContext() == null || !main.getCamelContext().isStarted()) {
            if (System.nanoTime() > deadline || !runner.isAlive()) {
                throw new IllegalStateException("gateway did not start");
            }
            Thread.sleep(50); // start-up poll, not part of any measurement
        }
        return main;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--") && i + 1 < args.length) {
                opts.put(args[i].substring(2), args[++i]);
            } else {
                throw new IllegalArgumentException("unexpected argument " + args[i]
                        + "; usage: bench [--jdbc-url URL] [--db-user U] [--db-password P] [--seconds N] [--clients 1,16,64]");
            }
        }
        return opts;
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
