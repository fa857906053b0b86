package io.jobgate.bench;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * {@code bench --peers}: the job schedulers a team would use instead (db-scheduler, JobRunr) enqueue
 * and drain a backlog on the same PostgreSQL as the gateway's figures, each in a schema of its own
 * that its runner creates and drops, and the figures are printed beside the gateway's as ratios.
 *
 * <p>The peers are not in the gateway's jar: {@code mvn package} compiles {@code src/bench-peers}
 * against them into {@code target/bench-peers/classes} and copies their jars to
 * {@code target/bench-peers/lib} (pom.xml). They are loaded here by a class loader of their own whose
 * parent is the platform class loader, so they see their own PostgreSQL driver, pool, Jackson and
 * SLF4J and nothing of the gateway; a runner is a {@code Function<Map<String, String>, Map<String, Object>>}
 * (JDK types, the only ones both sides share): settings in, figures out.
 */
final class PeerBench {

    /** Peer name on the command line → runner class and its settings. */
    static final Map<String, Peer> PEERS = new LinkedHashMap<>();

    record Peer(String runner, Map<String, String> settings) {
    }

    static {
        PEERS.put("db-scheduler", new Peer("io.jobgate.benchpeers.DbSchedulerPeer",
                Map.of("schema", "jobgate_peer_dbscheduler")));
        PEERS.put("db-scheduler-lock-and-fetch", new Peer("io.jobgate.benchpeers.DbSchedulerPeer",
                Map.of("schema", "jobgate_peer_dbscheduler_lf", "polling", "lock-and-fetch")));
        PEERS.put("jobrunr", new Peer("io.jobgate.benchpeers.JobRunrPeer", Map.of("schema", "jobgate_peer_jobrunr")));
    }

    static final String DEFAULT_PEERS = "db-scheduler,jobrunr";

    /** One peer's figures. */
    record Figures(String name, double enqueuePerSecond, double drainPerSecond, double enqueueSeconds, double drainSeconds) {
    }

    private final Path dir;
    private final List<String> peers;

    private PeerBench(Path dir, List<String> peers) {
        this.dir = dir;
        this.peers = peers;
    }

    /**
     * The peers named (comma-separated; {@code all} for every one) from {@code dir}, or from
     * {@code bench-peers} beside the jar (or class folder) this class was loaded from. Fails with
     * what to do when the folder or a peer is missing, before anything is started.
     */
    static PeerBench locate(String names, String dirOption) throws Exception {
        List<String> list = new ArrayList<>();
        for (String n : (names == null || names.isBlank() || names.equals("true") ? DEFAULT_PEERS
                : names.equals("all") ? String.join(",", PEERS.keySet()) : names).split(",")) {
            String name = n.trim().toLowerCase(java.util.Locale.ROOT);
            if (!PEERS.containsKey(name)) {
                throw new IllegalArgumentException("unknown peer " + n + " (known: " + String.join(", ", PEERS.keySet()) + ", all)");
            }
            list.add(name);
        }
        Path dir = dirOption != null ? Path.of(dirOption) : defaultDir();
        Path classes = dir.resolve("classes");
        Path lib = dir.resolve("lib");
        if (!Files.isDirectory(classes) || !Files.isDirectory(lib)) {
            throw new IllegalStateException("bench --peers needs the peers' runners and jars in " + dir.toAbsolutePath()
                    + " (classes/ and lib/), which are not there. They are built beside target/jobgate.jar by "
                    + "`mvn package` (or `mvn process-classes`) in a checkout of jobgate and are not part of the jar; "
                    + "run the bench from target/jobgate.jar of that build, or name the folder with --peers-dir.");
        }
        PeerBench bench = new PeerBench(dir, list);
        try (URLClassLoader loader = bench.loader()) {
            for (String name : list) {
                loader.loadClass(PEERS.get(name).runner());
            }
        } catch (ClassNotFoundException | NoClassDefFoundError e) {
            throw new IllegalStateException("bench --peers: " + dir.toAbsolutePath() + " is incomplete (" + e
                    + "); rebuild it with `mvn package`", e);
        }
        return bench;
    }

    static Path defaultDir() throws Exception {
        Path from = Path.of(PeerBench.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        // target/jobgate.jar or target/classes: both have target/ as their parent.
        return from.getParent().resolve("bench-peers");
    }

    private URLClassLoader loader() throws Exception {
        List<URL> urls = new ArrayList<>();
        urls.add(dir.resolve("classes").toUri().toURL());
        try (Stream<Path> jars = Files.list(dir.resolve("lib"))) {
            for (Path jar : jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                urls.add(jar.toUri().toURL());
            }
        }
        return new URLClassLoader("bench-peers", urls.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
    }

    /** Runs each peer in turn, each in a class loader of its own (JobRunr keeps static state), and prints its figures. */
    @SuppressWarnings("unchecked")
    List<Figures> run(String jdbcUrl, String user, String password, int jobs, int warmUp, int threads) throws Exception {
        List<Figures> all = new ArrayList<>();
        System.out.printf("%nPeers: %,d jobs each%s, enqueued from %d threads (one job per call), then drained by %d worker "
                + "threads; same PostgreSQL, a schema of its own each (created, then dropped)%n",
                jobs, warmUp > 0 ? String.format(" after an unmeasured round of %,d", warmUp) : "", threads, threads);
        // DriverManager lists the drivers once, through the context class loader of its first use: let
        // that be the gateway's, or the gateway's own JDBC calls would find only the peers' driver (not
        // visible to them) afterwards.
        java.sql.DriverManager.getDrivers();
        for (String name : peers) {
            Peer peer = PEERS.get(name);
            Map<String, String> settings = new LinkedHashMap<>(peer.settings());
            settings.put("jdbc-url", jdbcUrl);
            settings.put("user", user == null ? "postgres" : user);
            settings.put("password", password == null ? "" : password);
            settings.put("jobs", Integer.toString(jobs));
            settings.put("threads", Integer.toString(threads));
            settings.put("warm-up", Integer.toString(warmUp));
            Thread thread = Thread.currentThread();
            ClassLoader previous = thread.getContextClassLoader();
            try (URLClassLoader loader = loader()) {
                // JobRunr's workers load the job's class through the context class loader they inherit.
                thread.setContextClassLoader(loader);
                Function<Map<String, String>, Map<String, Object>> runner = (Function<Map<String, String>, Map<String, Object>>)
                        loader.loadClass(peer.runner()).getConstructor().newInstance();
                Map<String, Object> out = runner.apply(settings);
                Figures f = new Figures((String) out.get("name"), (Double) out.get("enqueue-per-second"),
                        (Double) out.get("drain-per-second"), (Double) out.get("enqueue-seconds"), (Double) out.get("drain-seconds"));
                System.out.printf("  %-36s enqueue %,8.0f jobs/s (%.1f s), drain %,8.0f jobs/s (%.1f s)%n",
                        f.name(), f.enqueuePerSecond(), f.enqueueSeconds(), f.drainPerSecond(), f.drainSeconds());
                all.add(f);
            } finally {
                thread.setContextClassLoader(previous);
            }
        }
        return all;
    }

    /**
     * The peers beside the gateway's figures of the same run: the gateway's admission (its best
     * jobs/s over the client counts measured, HTTP) over each peer's enqueue, and its drain over each
     * peer's drain; "n/a" for a step that did not run. With the drain's floor ({@link DrainFloor}),
     * also the floor's loops over each peer's drain: a ratio below 1 there is a target no design of the
     * drain's path meets on these parts and this machine.
     */
    static void printRatios(List<Figures> peers, Double admission, String admissionClients, Double drain,
                            List<DrainFloor.Figures> floor) {
        System.out.printf("%n%-38s %14s %13s %28s %22s%n", "peer", "enqueue jobs/s", "drain jobs/s",
                "jobgate admission / enqueue", "jobgate drain / drain");
        for (Figures f : peers) {
            System.out.printf("%-38s %,14.0f %,13.0f %28s %22s%n", f.name(), f.enqueuePerSecond(), f.drainPerSecond(),
                    ratio(admission, f.enqueuePerSecond()), ratio(drain, f.drainPerSecond()));
        }
        System.out.printf("%-38s %14s %13s%n", "jobgate (this run)",
                admission == null ? "n/a" : String.format("%,.0f", admission), drain == null ? "n/a" : String.format("%,.0f", drain));
        System.out.println("jobgate admission: HTTP POST /v1/jobs through the whole admission transaction"
                + (admission == null ? " (not run: --only admission or a full run measures it)" : " at " + admissionClients + " clients (the best of the client counts measured)")
                + "; jobgate drain: image jobs through relay, Artemis, worker, adapter over HTTP and S3"
                + (drain == null ? " (not run: --only drain or a full run measures it)" : "") + ".");
        if (!floor.isEmpty()) {
            System.out.printf("%n%-38s %13s", "drain floor (DrainFloor), same run", "jobs/s");
            peers.forEach(p -> System.out.printf(" %22s", "/ " + p.name() + " drain"));
            System.out.println();
            for (DrainFloor.Figures f : floor) {
                System.out.printf("%-38s %,13.0f", f.name(), f.perSecond());
                peers.forEach(p -> System.out.printf(" %22s", ratio(f.perSecond(), p.drainPerSecond())));
                System.out.println();
            }
        }
    }

    private static String ratio(Double jobgate, double peer) {
        return jobgate == null || peer <= 0 ? "n/a" : String.format("%.2f", jobgate / peer);
    }
}
