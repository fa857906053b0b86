package io.jobgate.bench;

import java.io.File;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.relay.RelayWakeup;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.MessageConsumer;
import jakarta.jms.Session;
import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.springframework.jms.connection.CachingConnectionFactory;

/**
 * Relay figures: outbox events published per second to Artemis beside the broker's own ceiling
 * ({@code artemis perf client}, persistent 1 KiB), and fairness — a quiet tenant's time from
 * accept to dispatch while another tenant holds a 10,000-job backlog, against the same with none.
 */
final class RelayBench {

    private static final Pattern PERF_COMPLETED = Pattern.compile("total completed:\\s+(\\d+)");
    private static final int PERF_SECONDS = 8;

    private final CamelContext context;
    private final JobFinalizer finalizer;
    private final String run;
    private final DataSource dataSource;
    private final AdmissionLoad http;
    private final int brokerPort;
    private final String artemisHome;

    RelayBench(CamelContext context, String run, AdmissionLoad http, int brokerPort, String artemisHome) {
        this.context = context;
        this.run = run;
        this.dataSource = context.getRegistry().lookupByNameAndType("dataSource", DataSource.class);
        this.finalizer = context.getRegistry().lookupByNameAndType("jobFinalizer", JobFinalizer.class);
        this.http = http;
        this.brokerPort = brokerPort;
        this.artemisHome = artemisHome;
    }

    void run(int tenants, int eventsPerTenant, int samples) throws Exception {
        // Fairness first, on a near-empty dispatch queue: the throughput run leaves 10,000 messages
        // there, which a selector consumer would have to skip over.
        double[] idle = acceptToDispatch(prefix() + "quiet", samples);
        insertBacklog(prefix() + "noisy", 10_000);
        double[] loaded = acceptToDispatch(prefix() + "quiet", samples);
        long left = count("SELECT count(*) FROM outbox WHERE tenant_id = '" + prefix() + "noisy' AND published_at IS NULL");
        System.out.printf("%nFairness, quiet tenant accept -> dispatch (%d jobs each):%n", samples);
        System.out.printf("  no backlog:                       p50 %.2f ms  p99 %.2f ms%n", idle[0], idle[1]);
        System.out.printf("  other tenant 10,000-job backlog:  p50 %.2f ms  p99 %.2f ms  (%d backlog events still due)%n",
                loaded[0], loaded[1], left);
        System.out.printf("  ratio (p50): %.2f%n", loaded[0] / idle[0]);
        // The backlog's slots and events would slow the throughput run: end them first.
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("DELETE FROM outbox WHERE tenant_id = '" + prefix() + "noisy' AND published_at IS NULL");
        }

        double rate = throughput(tenants, eventsPerTenant);
        Double ceiling1 = brokerCeiling(1);
        Double ceiling100 = brokerCeiling(100);
        System.out.printf("%nRelay throughput: %d events of %d tenants published to jobs.dispatch at %.0f events/s%n",
                tenants * eventsPerTenant, tenants, rate);
        System.out.printf("Broker ceiling (artemis perf client, persistent 1 KiB): %s msg/s with 1 pending, %s with 100 "
                        + "pending; relay/ceiling(1 pending) = %s%n", fmt(ceiling1), fmt(ceiling100),
                ceiling1 == null ? "n/a" : String.format("%.2f", rate / ceiling1));
    }

    /** Puts events of many tenants in the outbox at once, wakes the relay, times until all are out. */
    private double throughput(int tenants, int perTenant) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            for (int t = 0; t < tenants; t++) {
                String id = prefix() + "relay-" + t;
                s.execute("INSERT INTO tenants (tenant_id, display_name, api_key_sha256, max_open_jobs, max_running_jobs, "
                        + "max_queued_bytes) VALUES ('" + id + "', '" + id + "', '" + UUID.randomUUID()
                        + "', 1000000, 1000000, 0) ON CONFLICT DO NOTHING");
                s.execute("INSERT INTO tenant_accounts (tenant_id) VALUES ('" + id + "') ON CONFLICT DO NOTHING");
            }
            s.execute(backlogSql("t.tenant_id", "FROM generate_series(0, " + (tenants - 1) + ") n "
                    + "CROSS JOIN LATERAL (SELECT '" + prefix() + "relay-' || n AS tenant_id) t CROSS JOIN generate_series(1, "
                    + perTenant + ") g"));
            s.execute("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) SELECT job_id, tenant_id, "
                    + "'dispatch', now() FROM jobs WHERE tenant_id LIKE '" + prefix() + "relay-%' AND dispatched_at IS NULL");
        }
        ProducerTemplate producer = context.createProducerTemplate();
        long t0 = System.nanoTime();
        producer.sendBody(RelayWakeup.QUEUE, null);
        while (count("SELECT count(*) FROM outbox WHERE tenant_id LIKE '" + prefix() + "relay-%' AND published_at IS NULL") > 0) {
            TimeUnit.MILLISECONDS.sleep(20); // progress poll of a multi-second run, not a measured wait
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        return tenants * perTenant / seconds;
    }

    private void insertBacklog(String tenant, int jobs) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute("INSERT INTO tenants (tenant_id, display_name, api_key_sha256, max_open_jobs, max_running_jobs, "
                    + "max_queued_bytes) VALUES ('" + tenant + "', 'noisy', '" + UUID.randomUUID()
                    + "', 1000000, 1000000, 0) ON CONFLICT DO NOTHING");
            s.execute("INSERT INTO tenant_accounts (tenant_id) VALUES ('" + tenant + "') ON CONFLICT DO NOTHING");
            s.execute(backlogSql("'" + tenant + "'", "FROM generate_series(1, " + jobs + ") g"));
            // Older than anything the quiet tenant will post: a FIFO relay would serve all of it first.
            s.execute("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) SELECT job_id, tenant_id, "
                    + "'dispatch', now() - interval '1 minute' FROM jobs WHERE tenant_id = '" + tenant + "'");
        }
    }

    private static String backlogSql(String tenantExpr, String from) {
        return "INSERT INTO jobs (job_id, tenant_id, idempotency_key, request_sha256, status, preset_id, preset_version, "
                + "kind, aspect_class, provider, inputs, cost_micros, max_attempts, max_lifetime_seconds, expires_at) "
                + "SELECT gen_random_uuid(), " + tenantExpr + ", 'backlog-' || gen_random_uuid(), 'x', 'queued', "
                + "'invoice-clean', 1, 'image', 'square', 'simulator', '{}', 0, 4, 1800, now() + interval '1 hour' " + from;
    }

    /** p50 and p99 of accept (HTTP request start) to the dispatch message reaching a consumer. */
    private double[] acceptToDispatch(String tenant, int samples) throws Exception {
        ConnectionFactory cf = ((CachingConnectionFactory) context.getRegistry()
                .lookupByNameAndType("jmsConnectionFactory", ConnectionFactory.class)).getTargetConnectionFactory();
        List<Double> ms = new ArrayList<>();
        try (jakarta.jms.Connection connection = cf.createConnection()) {
            connection.start();
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageConsumer consumer = session.createConsumer(session.createQueue("jobs.dispatch"),
                    "JobgateTenant = '" + tenant + "'");
            for (int i = 0; i < samples; i++) {
                long t0 = System.nanoTime();
                String jobId = http.postOne();
                jakarta.jms.Message m;
                do {
                    m = consumer.receive(30_000);
                } while (m != null && !jobId.equals(m.getStringProperty("JobgateJobId")));
                if (m == null) {
                    throw new IllegalStateException("job " + jobId + " was not dispatched within 30 s");
                }
                ms.add((System.nanoTime() - t0) / 1e6);
                // End the job, as a worker would, which frees its slot.
                finalizer.finalizeJob(UUID.fromString(jobId), new JobFinalizer.Outcome(JobStatus.CANCELLED, "cancelled", "bench",
                        JobFinalizer.RefundPolicy.NONE));
            }
        }
        double[] sorted = ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return new double[] {sorted[sorted.length / 2], sorted[Math.min(sorted.length - 1, (int) Math.ceil(0.99 * sorted.length) - 1)]};
    }

    /** {@code artemis perf client} against the embedded broker's TCP acceptor, or null without a distribution. */
    private Double brokerCeiling(int maxPending) throws Exception {
        if (artemisHome == null || !new File(artemisHome, "bin/artemis").canExecute() || brokerPort <= 0) {
            return null;
        }
        // The gateway's own broker user: the embedded broker requires a login.
        var gatewayFactory = (org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory) ((CachingConnectionFactory)
                context.getRegistry().lookupByNameAndType("jmsConnectionFactory", ConnectionFactory.class))
                .getTargetConnectionFactory();
        List<String> cmd = new ArrayList<>(Arrays.asList(artemisHome + "/bin/artemis", "perf", "client",
                "--url", "tcp://127.0.0.1:" + brokerPort, "--user", gatewayFactory.getUser(),
                "--password", gatewayFactory.getPassword(), "--persistent", "--message-size", "1024",
                "--duration", Integer.toString(PERF_SECONDS),
                "--warmup", "2", "--max-pending", Integer.toString(maxPending), "queue://jobgate.bench.perf"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor(60, TimeUnit.SECONDS);
        Matcher m = PERF_COMPLETED.matcher(out);
        if (!m.find()) {
            System.out.println("artemis perf client gave no summary:\n" + out.lines().limit(20).reduce("", (a, b) -> a + b + "\n"));
            return null;
        }
        return Long.parseLong(m.group(1)) / (double) PERF_SECONDS;
    }

    private String prefix() {
        return "bench-" + run + "-";
    }

    private long count(String sql) throws Exception {
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); var rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String fmt(Double v) {
        return v == null ? "n/a (set --artemis-home)" : String.format("%.0f", v);
    }

    static String artemisHome(String option) {
        if (option != null) {
            return option;
        }
        String env = System.getenv("ARTEMIS_HOME");
        return env == null || env.isBlank() ? null : env;
    }
}
