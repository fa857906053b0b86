package io.jobgate.ops;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import io.jobgate.bench.HistorySeed;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.TestDatabase;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Flat cost as history grows, proven on the plans: with a history of finished jobs in the database
 * (and their attempts, debits, events), the scripted run (successes, 429s, failures, an async job,
 * a transcription, refusals) plus listing, usage, the sweeper, retention and the rollups; then every
 * statement the gateway ran — read from pg_stat_statements under the gateway's own database role —
 * is planned again the way the gateway runs it (a generic plan), and none may read a history table
 * (jobs, attempts, the ledger, the outbox, uploads, webhook receipts) by a sequential scan.
 */
class HotPathPlansTest extends GatewayTestBase {

    static final String ROLE = "jobgate_hot_path";
    static final Pattern HISTORY_SCAN = Pattern.compile(
            "Seq Scan on (jobs|attempts|ledger|outbox|uploads|webhook_receipts)\\b");
    /** A statement about one job, event or upload, named by a parameter. */
    static final Pattern ONE_ROW = Pattern.compile("(?i)\\b(job_id|event_id|upload_id)\\s*=\\s*\\$\\d+");
    /** A statement about one tenant's rows, the tenant named by a parameter. */
    static final Pattern ONE_TENANT = Pattern.compile("(?i)\\btenant_id\\s*=\\s*\\$\\d+");
    static final Pattern HISTORY_INDEX_SCAN = Pattern.compile(
            "Index (Only )?Scan (Backward )?using \\S+ on (jobs|attempts|ledger|outbox|uploads|webhook_receipts)\\b.*");

    final ScriptedRun run = new ScriptedRun();

    @BeanInject("dataSource")
    DataSource dataSource;

    @Override
    protected Map<String, String> settings() throws Exception {
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            // The gateway's statements are told apart from this test's by the role that ran them.
            s.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + ROLE + "') THEN "
                    + "CREATE ROLE " + ROLE + " LOGIN SUPERUSER; END IF; END $$");
            s.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        }
        return GatewayTestSupport.with(run.settings(), Map.of(
                // A user named in the URL (the embedded server's) would win over the setting.
                "jobgate.db.url", TestDatabase.url().replaceFirst("([?&])user=[^&]*&?", "$1").replaceFirst("[?&]$", ""),
                "jobgate.db.user", ROLE,
                "jobgate.db.password", "",
                "jobgate.sweeper.enabled", "true",
                "jobgate.sweeper.period-ms", "200",
                "jobgate.retention.period-ms", "300",
                "jobgate.usage.rollup-period-ms", "300"));
    }

    @AfterAll
    void stop() {
        run.stop();
    }

    @Test
    void noStatementOfTheHotPathReadsAHistoryTableSequentially() throws Exception {
        HistorySeed.seed(dataSource, List.of("acme", "globex"), "fakeimg", 30_000, Duration.ofDays(90));
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            // What the history spent, granted again: the run's jobs must not be refused for budget.
            s.execute("INSERT INTO ledger (tenant_id, entry_type, amount_micros, reference) "
                    + "SELECT tenant_id, 'adjustment', 2 * sum(cost_micros), 'history seed' FROM jobs "
                    + "WHERE adapter_revision = 'history' GROUP BY tenant_id");
            s.execute("SELECT pg_stat_statements_reset()");
        }
        ActivitySampler sampler = new ActivitySampler();
        Thread sampling = new Thread(sampler, "hot-path-sampler");
        sampling.setDaemon(true);
        sampling.start();

        run.run(api);
        for (String path : new String[] {"/v1/jobs?limit=50", "/v1/jobs?limit=50&status=failed",
                "/v1/jobs?limit=20&status=succeeded&cursor="
                        + Db.single("SELECT max(job_id::text) AS id FROM jobs WHERE tenant_id = 'acme'").get("id"), "/v1/usage",
                "/v1/usage?from=2026-01-01T10:00:00Z"}) {
            // Asked several times: a statement is planned only once the sampler has seen its text.
            for (int i = 0; i < 10; i++) {
                ApiClient.Response r = api.get(ACME, path);
                assertThat(r.status()).as(path + ": " + r.text()).isEqualTo(200);
            }
        }
        // The periodic work has run since the reset: retention removed old events, the rollups folded
        // the run's ledger entries.
        for (String periodic : new String[] {"DELETE FROM outbox", "DELETE FROM webhook_receipts", "INSERT INTO usage_daily",
                "UPDATE uploads SET expired_at"}) {
            try {
                await(periodic).atMost(Duration.ofSeconds(30)).until(() -> ran(periodic));
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                Db.rows("SELECT state, wait_event_type, wait_event, left(query, 200) AS q FROM pg_stat_activity WHERE usename = '" + ROLE + "'")
                        .forEach(r -> System.out.println("HotPathPlansTest: activity " + r));
                Db.rows("SELECT calls, left(query, 150) AS q FROM pg_stat_statements ORDER BY calls DESC LIMIT 60")
                        .forEach(r -> System.out.println("HotPathPlansTest: ran " + r));
                throw e;
            }
        }

        sampler.stop = true;
        sampling.join();

        List<String> scans = new ArrayList<>();
        List<String> uncaptured = new ArrayList<>();
        TreeSet<String> unplanned = new TreeSet<>();
        int planned = 0;
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            // As autovacuum keeps them in production: with no visibility map yet (a fresh test database),
            // an index-only plan is costed as a walk of the heap too, and whether the tenant's listing
            // index or the key order wins a generic plan was a coin toss between test runs.
            s.execute("VACUUM (ANALYZE) jobs");
            s.execute("SET plan_cache_mode = force_generic_plan");
            Map<Long, String> statements = new java.util.LinkedHashMap<>();
            try (ResultSet rs = s.executeQuery("SELECT queryid, query FROM pg_stat_statements WHERE toplevel AND userid = "
                    + "(SELECT oid FROM pg_roles WHERE rolname = '" + ROLE + "') AND dbid = "
                    + "(SELECT oid FROM pg_database WHERE datname = current_database())")) {
                while (rs.next()) {
                    statements.put(rs.getLong(1), rs.getString(2));
                }
            }
            for (Map.Entry<Long, String> statement : statements.entrySet()) {
                // The text as the gateway sent it (its literals in place: partial indexes depend on them);
                // pg_stat_statements keeps only the normalized text, with every literal a parameter.
                String seen = sampler.seen.get(statement.getKey());
                // The admission's write goes with its COMMIT in one round trip, so it is on screen only
                // while it runs: its text as sent, from the code (JDBC's ? numbered as pgJDBC sends them).
                String query = seen == null && oneLine(statement.getValue()).startsWith("WITH input AS (")
                        ? numbered(io.jobgate.admission.AdmissionWriter.WRITE) : seen;
                if (query == null) {
                    uncaptured.add(oneLine(statement.getValue()));
                    continue;
                }
                String head = query.stripLeading().toUpperCase(java.util.Locale.ROOT);
                if (!(head.startsWith("SELECT") || head.startsWith("WITH") || head.startsWith("INSERT")
                        || head.startsWith("UPDATE") || head.startsWith("DELETE"))) {
                    continue; // BEGIN, COMMIT, SET, LISTEN, ...
                }
                String plan;
                try {
                    plan = io.jobgate.support.GenericPlans.of(s, query);
                } catch (java.sql.SQLException e) {
                    unplanned.add(e.getMessage().lines().findFirst().orElse("") + " :: " + oneLine(query));
                    continue;
                }
                planned++;
                Matcher scan = HISTORY_SCAN.matcher(plan);
                while (scan.find()) {
                    long pages = pages(s, scan.group(1));
                    if (pages >= SMALL_TABLE_PAGES) {
                        scans.add(scan.group() + " in: " + oneLine(query));
                    } else {
                        System.out.println("HotPathPlansTest: " + scan.group() + " of " + pages + " pages allowed in: " + oneLine(query));
                    }
                }
                if (ONE_ROW.matcher(query).find()) {
                    // About one row, so read by key: an index scan without a condition reads every row of
                    // the index (a partial one of open jobs, of waiting events: a cost that grows with them).
                    unconditionedIndexScans(plan).forEach(node -> scans.add(node + " (no Index Cond) in: " + oneLine(query)));
                } else if (ONE_TENANT.matcher(query).find()) {
                    // About one tenant: walking a table's key order and filtering by tenant reads the
                    // other tenants' history too (a generic plan's choice for "newest first, limit n").
                    unconditionedIndexScans(plan).stream().filter(node -> node.contains("_pkey on "))
                            .forEach(node -> scans.add(node + " (key order, filtered by tenant) in: " + oneLine(query)));
                }
            }
        }
        unplanned.forEach(u -> System.out.println("HotPathPlansTest: not planned: " + u));
        uncaptured.forEach(u -> System.out.println("HotPathPlansTest: not seen in pg_stat_activity: " + u));
        assertThat(planned).as("statements of the gateway planned").isGreaterThan(50);
        assertThat(uncaptured.size()).as("statements whose text was not seen as sent").isLessThan(planned / 4);
        assertThat(scans).as("statements that read a history table sequentially").isEmpty();
    }

    /** What each of the gateway's sessions last ran, by query id, sampled every few milliseconds. */
    static final class ActivitySampler implements Runnable {
        final Map<Long, String> seen = new java.util.concurrent.ConcurrentHashMap<>();
        volatile boolean stop;

        @Override
        public void run() {
            try (Connection c = TestDatabase.connect(); java.sql.PreparedStatement p = c.prepareStatement(
                    "SELECT query_id, query FROM pg_stat_activity WHERE usename = ? AND query_id IS NOT NULL")) {
                p.setString(1, ROLE);
                while (!stop) {
                    try (ResultSet rs = p.executeQuery()) {
                        while (rs.next()) {
                            seen.putIfAbsent(rs.getLong(1), rs.getString(2));
                        }
                    }
                    Thread.sleep(2); // a sampling interval, not a wait for a condition
                }
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * Below this size a sequential scan is the cheapest read and the planner rightly picks it (the
     * seeded webhook receipts of one replay window are a few pages); the rule is about tables grown
     * with history, which the seed makes far larger than this.
     */
    static final long SMALL_TABLE_PAGES = 32;

    static long pages(Statement s, String table) throws java.sql.SQLException {
        try (ResultSet rs = s.executeQuery("SELECT pg_relation_size('" + table + "') / current_setting('block_size')::int")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    boolean ran(String fragment) {
        return Db.count("SELECT count(*) FROM pg_stat_statements WHERE query LIKE ? AND userid = "
                + "(SELECT oid FROM pg_roles WHERE rolname = '" + ROLE + "')", "%" + fragment + "%") > 0;
    }

    /** The plan's index scans of history tables that have no Index Cond (EXPLAIN's text form). */
    static List<String> unconditionedIndexScans(String plan) {
        List<String> found = new ArrayList<>();
        String[] lines = plan.split("\n");
        for (int i = 0; i < lines.length; i++) {
            Matcher node = HISTORY_INDEX_SCAN.matcher(lines[i]);
            if (!node.find()) {
                continue;
            }
            boolean conditioned = false;
            // The node's properties follow it until the next node ("->") or a line less indented.
            int indent = lines[i].indexOf(node.group());
            for (int j = i + 1; j < lines.length && !lines[j].contains("->"); j++) {
                int at = lines[j].length() - lines[j].stripLeading().length();
                if (at <= indent - 4) {
                    break;
                }
                conditioned |= lines[j].stripLeading().startsWith("Index Cond:");
            }
            if (!conditioned) {
                found.add(node.group().replaceAll("\\s+\\(cost=.*", ""));
            }
        }
        return found;
    }

    static String numbered(String jdbcQuery) {
        String query = jdbcQuery;
        for (int i = 1; query.contains("?"); i++) {
            query = query.replaceFirst("\\?", "\\$" + i);
        }
        return query;
    }

    static String oneLine(String query) {
        String line = query.replaceAll("\\s+", " ").trim();
        return line.length() > 300 ? line.substring(0, 300) + "..." : line;
    }
}
