package io.jobgate.bench;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Base64;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSContext;
import jakarta.jms.JMSConsumer;
import jakarta.jms.JMSProducer;
import jakarta.jms.Queue;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.springframework.jms.connection.CachingConnectionFactory;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * The drain's floor: the parts the drain's path runs through, driven by a plain loop, with no Camel
 * and none of jobgate's rules, at the worker's concurrency, on the same gateway's parts (its
 * PostgreSQL pool, Artemis, S3 client and server) and the same fake provider. The loops:
 * <ul>
 *   <li><b>one job at a time</b>: a transacted JMS receive, the start and the finalize as one-row
 *       transactions, the provider call over HTTP, the output and its manifest put on the S3 server,
 *       the JMS commit. What jobgate's drain (one JMS transaction and its own database transactions per
 *       job) would reach if its own work cost nothing.</li>
 *   <li><b>ten (fifty) jobs per transaction</b>: the same, the broker's and the database's work shared by
 *       ten (fifty) jobs (as many receives per JMS transaction, their starts and their finalizes one
 *       statement each): what a worker that takes its messages in batches could reach.</li>
 *   <li><b>the same, messages taken ahead</b>: fifty per transaction, the consumer with a 64 KiB window
 *       (the gateway's takes none, so that a busy worker holds no message an idle one could take).</li>
 *   <li><b>the call and the puts alone</b>: what any design of the path must do once per job (one
 *       provider request per job, one object per output and per manifest), while the broker's and the
 *       database's work could in principle be shared by many jobs. No implementation on these parts
 *       drains faster than this loop, so a target above it cannot be met on this machine.</li>
 *   <li>and each part alone.</li>
 * </ul>
 * The HTTP client is the JDK's (lighter than camel-http's), the answer's image found without a JSON
 * parser: the floor is generous.
 */
final class DrainFloor {

    /** What a loop does per job. */
    enum Part { BROKER, DATABASE, CALL, PUTS }

    private static final Set<Part> ALL = EnumSet.allOf(Part.class);

    /** One loop's figures. */
    record Figures(String name, int jobs, double seconds, double jvmMsPerJob, Double pgMsPerJob) {
        double perSecond() {
            return jobs / seconds;
        }
    }

    private final DataSource dataSource;
    private final ConnectionFactory jms;
    /** The same broker, its consumers taking messages ahead (64 KiB of them). */
    private final ActiveMQConnectionFactory prefetching;
    private final S3Client s3;
    private final String bucket;
    private final URI provider;
    private final int threads;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    /** The provider's image, for the loops that put without calling. */
    private byte[] image;

    DrainFloor(CamelContext context, String providerBaseUrl, int threads) throws java.io.IOException {
        this.dataSource = context.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        this.jms = context.getRegistry().lookupByNameAndType("jmsConnectionFactory", ConnectionFactory.class);
        ActiveMQConnectionFactory gateways = (ActiveMQConnectionFactory) ((CachingConnectionFactory) jms).getTargetConnectionFactory();
        this.prefetching = new ActiveMQConnectionFactory(gateways.toURI().toString());
        this.prefetching.setUser(gateways.getUser());
        this.prefetching.setPassword(gateways.getPassword());
        this.prefetching.setConsumerWindowSize(64 * 1024); // about two hundred of these messages: every thread gets its share
        this.s3 = context.getRegistry().lookupByNameAndType("s3Client", S3Client.class);
        this.bucket = context.resolvePropertyPlaceholders("{{jobgate.s3.bucket}}");
        this.provider = URI.create(providerBaseUrl + "/generate");
        this.threads = threads;
    }

    /** Runs the loops over {@code jobs} jobs each (after a warm-up of all parts), prints and returns them. */
    List<Figures> run(int jobs, int warmUp) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS bench_floor_jobs");
            s.execute("CREATE TABLE bench_floor_jobs (id int PRIMARY KEY, status text NOT NULL, lease_token uuid, "
                    + "updated_at timestamptz)");
        }
        image = call("first");
        try {
            if (warmUp > 0) {
                loop("warm-up", warmUp, ALL);
            }
            List<Figures> all = List.of(
                    loop("parts, one job at a time", jobs, ALL),
                    loop("parts, ten jobs per transaction", jobs, ALL, 10, false),
                    loop("parts, fifty jobs per transaction", jobs, ALL, 50, false),
                    loop("  the same, messages taken ahead", jobs, ALL, 50, true),
                    loop("the call and the puts alone", jobs, EnumSet.of(Part.CALL, Part.PUTS)),
                    loop("  the call alone", jobs, EnumSet.of(Part.CALL)),
                    loop("  the puts alone", jobs, EnumSet.of(Part.PUTS)),
                    loop("the JMS receive and commit alone", jobs, EnumSet.of(Part.BROKER)),
                    loop("the two transactions alone", jobs, EnumSet.of(Part.DATABASE)));
            System.out.printf("%nDrain floor: the drain's parts driven by a plain loop (no Camel, no rules), %d threads, "
                    + "the same PostgreSQL, Artemis, S3 server and fake provider%n", threads);
            System.out.printf("  %-34s %9s %14s %18s%n", "loop", "jobs/s", "JVM ms/job", "PostgreSQL ms/job");
            for (Figures f : all) {
                System.out.printf("  %-34s %,9.0f %14.2f %18s%n", f.name(), f.perSecond(), f.jvmMsPerJob(),
                        f.pgMsPerJob() == null ? "n/a" : String.format("%.2f", f.pgMsPerJob()));
            }
            System.out.println("  one job at a time: a transacted JMS receive and commit, two one-row transactions (start, "
                    + "finalize), the provider's HTTP call, two S3 puts (output, manifest); ten (fifty) jobs per transaction: "
                    + "as many receives in one JMS transaction, their starts in one statement, a call and two puts each, "
                    + "their finalizes in one statement, the commit; the call and the puts alone: what any design of the "
                    + "path does once per job");
            return all;
        } finally {
            prefetching.close();
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS bench_floor_jobs");
            }
        }
    }

    private Figures loop(String name, int jobs, Set<Part> parts) throws Exception {
        return loop(name, jobs, parts, 1, false);
    }

    /** @param prefetch the consumer takes messages ahead (the gateway's take none) */
    private Figures loop(String name, int jobs, Set<Part> parts, int batch, boolean prefetch) throws Exception {
        String queueName = "bench.floor." + UUID.randomUUID();
        prepare(jobs, parts, queueName);
        AtomicInteger next = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        DrainBench.Cpu cpu = DrainBench.Cpu.start(dataSource);
        long t0 = System.nanoTime();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    jobs(next, jobs, parts, queueName, batch, prefetch);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        cpu.stop(dataSource);
        if (parts.contains(Part.DATABASE)) {
            try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute("TRUNCATE bench_floor_jobs");
            }
        }
        return new Figures(name, jobs, seconds, cpu.jvmUsedNanos() / 1e6 / jobs,
                cpu.pgUsedTicks() == null ? null : cpu.pgUsedTicks() * 10.0 / jobs);
    }

    /** The jobs' rows and their dispatch messages (one per job, sent in rounds of 100 as the relay does). */
    private void prepare(int jobs, Set<Part> parts, String queueName) throws Exception {
        if (parts.contains(Part.DATABASE)) {
            try (Connection c = dataSource.getConnection();
                 PreparedStatement insert = c.prepareStatement("INSERT INTO bench_floor_jobs (id, status) "
                         + "SELECT g, 'queued' FROM generate_series(0, ? - 1) g")) {
                insert.setInt(1, jobs);
                insert.execute();
            }
        }
        if (!parts.contains(Part.BROKER)) {
            return;
        }
        try (JMSContext session = jms.createContext(JMSContext.SESSION_TRANSACTED)) {
            Queue queue = session.createQueue(queueName);
            JMSProducer producer = session.createProducer();
            for (int i = 0; i < jobs; i++) {
                producer.setProperty("jobId", i).send(queue, "{\"job_id\":\"" + UUID.randomUUID() + "\",\"event_id\":" + i + "}");
                if (i % 100 == 99) {
                    session.commit();
                }
            }
            session.commit();
        }
    }

    /**
     * Jobs {@code batch} at a time: their dispatch messages received in one JMS transaction, their starts
     * and their finalizes one statement (and transaction) each, then a call and two puts per job, and the
     * JMS commit.
     */
    private void jobs(AtomicInteger next, int jobs, Set<Part> parts, String queueName, int batch, boolean prefetch)
            throws Exception {
        ConnectionFactory broker = prefetch ? prefetching : jms;
        try (JMSContext session = parts.contains(Part.BROKER) ? broker.createContext(JMSContext.SESSION_TRANSACTED) : null;
             Connection db = parts.contains(Part.DATABASE) ? dataSource.getConnection() : null;
             PreparedStatement start = db == null ? null : db.prepareStatement("UPDATE bench_floor_jobs SET status = 'running', "
                     + "lease_token = ?, updated_at = now() WHERE id = ANY (?) AND status = 'queued'");
             PreparedStatement end = db == null ? null : db.prepareStatement("UPDATE bench_floor_jobs SET status = 'succeeded', "
                     + "lease_token = NULL, updated_at = now() WHERE id = ANY (?) AND lease_token = ?")) {
            if (db != null) {
                db.setAutoCommit(true); // each start and each finalize its own transaction
            }
            JMSConsumer consumer = session == null ? null : session.createConsumer(session.createQueue(queueName));
            int first;
            while ((first = next.getAndAdd(batch)) < jobs) {
                Integer[] ids = new Integer[Math.min(batch, jobs - first)];
                for (int i = 0; i < ids.length; i++) {
                    if (consumer == null) {
                        ids[i] = first + i;
                        continue;
                    }
                    jakarta.jms.Message m = consumer.receive(10_000);
                    if (m == null) {
                        throw new IllegalStateException("the floor's queue ran dry");
                    }
                    ids[i] = m.getIntProperty("jobId");
                }
                UUID token = UUID.randomUUID();
                java.sql.Array keys = db == null ? null : db.createArrayOf("integer", ids);
                if (keys != null) {
                    start.setObject(1, token);
                    start.setArray(2, keys);
                    start.executeUpdate();
                }
                for (int i = 0; i < ids.length; i++) {
                    String job = UUID.randomUUID().toString();
                    byte[] output = parts.contains(Part.CALL) ? call(job) : image;
                    if (parts.contains(Part.PUTS)) {
                        put(job, output);
                    }
                }
                if (keys != null) {
                    end.setArray(1, keys);
                    end.setObject(2, token);
                    end.executeUpdate();
                }
                if (session != null) {
                    session.commit();
                }
            }
        }
    }

    /** The provider's call, its image decoded. */
    private byte[] call(String job) throws Exception {
        HttpResponse<String> answer = http.send(HttpRequest.newBuilder(provider)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"a bench image of invoice " + job + "\"}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        String body = answer.body();
        int from = body.indexOf("\"b64\": \"") + 8;
        return Base64.getDecoder().decode(body.substring(from, body.indexOf('"', from)));
    }

    /** The image and its manifest, put on the S3 server. */
    private void put(String job, byte[] png) {
        String key = "outputs/bench-floor/" + job + "/output.png";
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(key).contentType("image/png").build(), RequestBody.fromBytes(png));
        byte[] manifest = ("{\"job_id\":\"" + job + "\",\"output\":\"" + key + "\",\"bytes\":" + png.length + "}")
                .getBytes(StandardCharsets.UTF_8);
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key("outputs/bench-floor/" + job + "/manifest.json")
                .contentType("application/json").build(), RequestBody.fromBytes(manifest));
    }
}
