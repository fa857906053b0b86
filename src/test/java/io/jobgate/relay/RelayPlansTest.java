package io.jobgate.relay;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.Database;
import io.jobgate.infra.Parts;
import io.jobgate.support.GenericPlans;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay's statements, planned as its pool's sessions plan them (once, generically, often while
 * the tables are small, and kept until the next ANALYZE), read the outbox and the jobs by index,
 * never whole: a claim planned on a fresh database otherwise read every outbox row and every job in
 * every round once a backlog had grown. The tables here are as small as a fresh gateway's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RelayPlansTest {

    private HikariDataSource relayPool;

    @BeforeAll
    void pool() throws Exception {
        TestDatabase.migratedPool(1).close(); // the schema the gateway runs on
        // As small as a fresh gateway's, whatever classes ran before on this database: emptied, and their column
        // statistics gone too (a TRUNCATE resets a table's size, not pg_statistic). Left as earlier classes left them,
        // the claim's plan walked outbox_job and sorted, instead of outbox_dispatch_due, in two CI runs of four.
        TestDatabase.reset();
        try (java.sql.Connection c = TestDatabase.connect(); java.sql.Statement s = c.createStatement()) {
            s.execute("DELETE FROM pg_statistic WHERE starelid IN ('outbox'::regclass, 'jobs'::regclass)");
        }
        relayPool = Database.pool("relay-plans", TestDatabase.url(), TestDatabase.user(), TestDatabase.password(), 1,
                Parts.RELAY_SESSION_OPTIONS);
    }

    @AfterAll
    void close() {
        relayPool.close();
    }

    @Test
    void aRoundsClaimReadsNoTableWhole() throws Exception {
        String plan = planOf(camelSql("sql/relay-claim-dispatch.sql"));
        assertThat(plan).as(plan).contains("outbox_dispatch_due").doesNotContain("Seq Scan on outbox")
                .doesNotContain("Seq Scan on jobs");
    }

    /**
     * A tenant's due events are locked in the order of its head (the index's), and the plan stops at the ones it
     * takes: no Sort between the lock and the head, which would join every head event to its job first (16 + the
     * per-tenant share of them, for a round that takes one or two while a backlog waits).
     */
    @Test
    void aRoundTakesATenantsEventsInTheIndexsOrderWithoutSortingItsHead() throws Exception {
        String plan = planOf(camelSql("sql/relay-claim-dispatch.sql"));
        List<String> lines = plan.lines().toList();
        int fresh = indexOf(lines, "CTE fresh", 0);
        int lock = indexOf(lines, "LockRows", fresh);
        assertThat(fresh).as(plan).isNotNegative();
        assertThat(lock).as(plan).isGreaterThan(fresh);
        String underTheLock = lines.get(lock + 1).contains("->") ? lines.get(lock + 1) : lines.get(lock + 2);
        assertThat(underTheLock).as(plan).doesNotContain("Sort").contains("Nested Loop");
    }

    private static int indexOf(List<String> lines, String text, int from) {
        for (int i = Math.max(from, 0); i < lines.size(); i++) {
            if (lines.get(i).contains(text)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void theMarkOfPublishedEventsReadsTheirKeys() throws Exception {
        String plan = planOf(camelSql("sql/relay-mark-published.sql"));
        assertThat(plan).as(plan).contains("outbox_pkey").doesNotContain("Seq Scan on outbox");
    }

    @Test
    void theStatusRoundReadsNoTableWhole() throws Exception {
        String plan = planOf(GenericPlans.numbered(OutboxRelay.TAKE_STATUS));
        assertThat(plan).as(plan).contains("outbox_pkey").doesNotContain("Seq Scan on outbox");
    }

    /**
     * A claim costed with the planner's penalty on a scan it cannot avoid would be compiled by the JIT
     * each round (2 s here): the pool's sessions run without it, whatever the server's setting.
     */
    @Test
    void theRelaysSessionsAreNeverCompiledByTheJit() throws Exception {
        assertThat(sessionSetting("jit")).isEqualTo("off");
    }

    /**
     * On small tables (as CI's tests leave them) the claim was once planned with a merge join of a tenant's head
     * to {@code outbox_pkey} and a Sort under its lock (the test above failed so); kept as the pool's generic plan
     * it reads the outbox from its first event every round. The pool's sessions plan without merge joins.
     */
    @Test
    void theRelaysSessionsNeverMergeJoin() throws Exception {
        assertThat(sessionSetting("enable_mergejoin")).isEqualTo("off");
        assertThat(planOf(camelSql("sql/relay-claim-dispatch.sql"))).doesNotContain("Merge Join");
    }

    /** A setting as the relay pool's sessions have it. */
    private String sessionSetting(String name) throws Exception {
        try (Connection c = relayPool.getConnection(); Statement s = c.createStatement();
             java.sql.ResultSet rs = s.executeQuery("SHOW " + name)) {
            rs.next();
            return rs.getString(1);
        }
    }

    private String planOf(String query) throws Exception {
        try (Connection c = relayPool.getConnection(); Statement s = c.createStatement()) {
            s.execute("SET plan_cache_mode = force_generic_plan"); // as the pool does (Database), stated here
            return GenericPlans.of(s, query);
        }
    }

    /** A camel-sql file's text, its comment lines dropped ({@code :#name} parameters as they are). */
    static String withoutComments(String resource) throws IOException {
        String text;
        try (InputStream in = RelayPlansTest.class.getClassLoader().getResourceAsStream(resource)) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        return text.lines().filter(l -> !l.startsWith("--")).reduce("", (a, b) -> a + b + "\n");
    }

    /** A camel-sql file with its {@code :#name} parameters numbered {@code $1 … $n}, comments dropped. */
    private static String camelSql(String resource) throws IOException {
        String text = withoutComments(resource);
        Map<String, Integer> numbers = new LinkedHashMap<>();
        Matcher m = Pattern.compile(":#(\\w+)").matcher(text);
        StringBuilder numbered = new StringBuilder();
        while (m.find()) {
            int n = numbers.computeIfAbsent(m.group(1), k -> numbers.size() + 1);
            m.appendReplacement(numbered, "\\$" + n);
        }
        m.appendTail(numbered);
        return numbered.toString();
    }
}
