package io.jobgate.relay;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jms;
import io.jobgate.support.TestDatabase;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.Message;
import org.apache.camel.BeanInject;
import org.apache.camel.ProducerTemplate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.BULK;
import static io.jobgate.support.TestTenants.DUO;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Relay rounds driven one at a time (the timer and the wake are off in this class), against the
 * real PostgreSQL and the embedded Artemis: fairness, running limits, two relays, a crash between
 * publish and mark.
 */
class RelayRoundsTest extends GatewayTestBase {

    Jms jms;

    @BeanInject
    ProducerTemplate producer;

    @BeanInject("jmsConnectionFactory")
    ConnectionFactory connectionFactory;

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.relay.enabled", "false",
                "jobgate.relay.claim-seconds", "4"); // short for the crash test, longer than a cold round (two relays must not re-take a claim being published)
    }

    @BeforeEach
    void connect() throws Exception {
        if (jms == null) {
            jms = new Jms(connectionFactory);
        }
        drainDueEvents();
    }

    @AfterAll
    void close() throws Exception {
        jms.close();
    }

    /** One relay round; returns the ids of the jobs it dispatched. */
    @SuppressWarnings("unchecked")
    List<String> round() {
        var exchange = producer.send("direct:outbox-relay-round", e -> { });
        if (exchange.getException() != null) {
            throw new IllegalStateException(exchange.getException());
        }
        anotherRound = Boolean.TRUE.equals(exchange.getProperty("anotherRound"));
        return dispatchedInLastRound();
    }

    /** Whether the last round asked for the next one at once (a tenant took its whole share). */
    boolean anotherRound;

    private final List<String> seen = new ArrayList<>();

    private List<String> dispatchedInLastRound() {
        List<String> now = new ArrayList<>();
        for (Map<String, Object> row : Db.rows("SELECT job_id::text AS id FROM jobs WHERE dispatched_at IS NOT NULL ORDER BY dispatched_at")) {
            String id = (String) row.get("id");
            if (!seen.contains(id)) {
                now.add(id);
            }
        }
        seen.addAll(now);
        return now;
    }

    /**
     * Each test starts with nothing due: earlier tests' leftovers are parked as published, and no tenant has waited
     * longer than another (a turn's order goes by the last dispatch; tests run in no promised order).
     */
    private void drainDueEvents() {
        Db.execute("UPDATE outbox SET published_at = now() WHERE published_at IS NULL");
        Db.execute("UPDATE jobs SET dispatched_at = NULL WHERE finalized_at IS NULL");
        Db.execute("UPDATE tenant_accounts SET running_jobs = 0, last_dispatch_at = NULL");
        Db.execute("UPDATE tenant_releases SET running_jobs = 0");
        Db.execute("UPDATE dispatch_window SET running = 0");
        Db.execute("DELETE FROM provider_window"); // V30: the jobs let go above held their providers' share too
        seen.clear();
    }

    String post(String apiKey) {
        ApiClient.Response r = api.postJob(apiKey, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square",
                 "inputs": {"supplier_name": "Fair AG", "invoice_id": "F-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return r.json().path("job_id").asText();
    }

    long messagesFor(String jobId) throws Exception {
        return jms.browse("jobs.dispatch", "JobgateJobId = '" + jobId + "'").size();
    }

    @Test
    void aQuietTenantsFirstJobGoesOutInTheFirstRoundDespiteAnotherTenantsBacklogOf10000() throws Exception {
        backlog(10_000);
        List<String> quiet = List.of(post(GLOBEX), post(GLOBEX), post(GLOBEX));

        // One round, in turns (jobgate.relay.per-tenant 8): every tenant's first job, then every tenant's
        // second, ...: the quiet tenant's three go out among the round's first six messages, the flood's
        // eight after or between them, never all before.
        List<String> first = round();
        assertThat(first).hasSize(3 + 8).containsAll(quiet);
        assertThat(anotherRound).as("the flood took its whole share: more of it may be due").isTrue();
        List<String> queued = jms.browse("jobs.dispatch", null).stream().map(m -> {
            try {
                return m.getStringProperty(OutboxRelay.JOB_ID);
            } catch (jakarta.jms.JMSException e) {
                throw new IllegalStateException(e);
            }
        }).filter(first::contains).toList();
        assertThat(queued).hasSize(11);
        // Within a turn the tenant that waited longest goes first; neither has dispatched yet: by tenant id.
        assertThat(List.of(queued.get(1), queued.get(3), queued.get(5))).containsExactlyElementsOf(quiet);
        for (String id : quiet) {
            assertThat(messagesFor(id)).isEqualTo(1);
        }
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE tenant_id = 'bulk' AND dispatched_at IS NOT NULL")).isEqualTo(8);
        // The next round: the flood's next eight (the quiet tenant has none left), as far as the provider's calls allow.
        long limit = Long.parseLong(context.resolvePropertyPlaceholders("{{jobgate.provider.simulator.max-concurrency}}"));
        assertThat(round()).hasSize((int) Math.min(8, limit - 11)).doesNotContainAnyElementsOf(quiet);
    }

    /** The tenant bulk's due jobs of the simulator provider, older than anything a test posts. */
    private void backlog(int jobs) {
        io.jobgate.support.JobFactory.onTestDatabase().job("bulk").provider("simulator")
                .insertBacklog(jobs, "backlog-", java.time.Instant.now().minusSeconds(60));
    }

    /** The job ids of the messages on jobs.dispatch, in the order the broker would deliver them, of these jobs only. */
    private List<Message> queued(java.util.Collection<String> jobs) throws Exception {
        List<Message> found = new ArrayList<>();
        for (Message m : jms.browse("jobs.dispatch", null)) {
            if (jobs.contains(m.getStringProperty(OutboxRelay.JOB_ID))) {
                found.add(m);
            }
        }
        return found;
    }

    /**
     * jobs.dispatch is one queue: a quiet tenant's job published after a flood's messages is still
     * delivered first, by its priority (its tenant has nothing running; the flood's has many).
     */
    @Test
    void aQuietTenantsMessageGoesAheadOfAFloodPublishedBeforeIt() throws Exception {
        backlog(40);
        List<String> flood = new ArrayList<>(round());
        assertThat(flood).hasSize(8);
        Db.execute("DELETE FROM provider_window"); // the provider's calls ended; the flood's tenant still has 8 running
        flood.addAll(round());
        assertThat(flood).hasSize(16);
        Db.execute("DELETE FROM provider_window");
        String quiet = post(GLOBEX);
        List<String> third = round();
        assertThat(third).hasSize(9).contains(quiet);
        flood.addAll(third.stream().filter(id -> !id.equals(quiet)).toList());

        List<String> all = new ArrayList<>(flood);
        all.add(quiet);
        List<Message> order = queued(all);
        assertThat(order).hasSize(25);
        int at = 0;
        for (Message m : order) {
            if (m.getStringProperty(OutboxRelay.JOB_ID).equals(quiet)) {
                break;
            }
            at++;
        }
        // Only the flood's first message, sent when its tenant had nothing running either, may go before it.
        assertThat(at).as("the quiet tenant's place among the 25 queued messages").isLessThanOrEqualTo(1);
        assertThat(order.get(at).getJMSPriority()).isEqualTo(9);
        for (Message m : order) {
            if (third.contains(m.getStringProperty(OutboxRelay.JOB_ID)) && !m.getStringProperty(OutboxRelay.JOB_ID).equals(quiet)) {
                assertThat(m.getJMSPriority()).as("a message of a tenant with 16 or more jobs running").isEqualTo(5);
            }
        }
    }

    @Test
    void aTenantNeverRunsMoreThanItsLimitAndGetsASlotBackWhenAJobEnds() throws Exception {
        List<String> jobs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            jobs.add(post(DUO));
        }
        assertThat(round()).containsExactlyInAnyOrder(jobs.get(0), jobs.get(1));
        assertThat(anotherRound).as("the tenant took all its room allows, less than its share: no round at once").isFalse();
        for (int i = 0; i < 3; i++) {
            round();
        }
        assertThat(seen).containsExactlyInAnyOrder(jobs.get(0), jobs.get(1));

        api.post(DUO, "/v1/jobs/" + jobs.get(0) + "/cancel");
        assertThat(round()).containsExactly(jobs.get(2));
        assertThat(round()).isEmpty();
        // Each ended job's slot comes back once, through a release row of the tenant's (V24) the round adds up.
        api.post(DUO, "/v1/jobs/" + jobs.get(1) + "/cancel");
        assertThat(round()).containsExactly(jobs.get(3));
        assertThat(round()).isEmpty();
        assertThat(Db.count("SELECT running_jobs FROM tenant_counters WHERE tenant_id = 'duo'")).isEqualTo(2);
        assertThat(Db.count("SELECT running_jobs FROM tenant_accounts WHERE tenant_id = 'duo'")).isEqualTo(4);
        assertThat(Db.count("SELECT sum(running_jobs) FROM tenant_releases WHERE tenant_id = 'duo'")).isEqualTo(-2);
    }

    /**
     * A job ended behind the relay's back (an operator's SQL, not the one finalize, which deletes its waiting
     * events) keeps its dispatch event: a round that took it wrote to a final job, PostgreSQL refused the
     * round, and so every round after it, for every tenant. It is passed over; the others go out.
     */
    @Test
    void aDispatchEventOfAJobEndedBehindTheRelaysBackStopsNoRound() throws Exception {
        String ended = post(ACME);
        String next = post(ACME);
        String other = post(GLOBEX);
io.jobgate.support.JobFactory.onTestDatabase().endedBehindTheGateway(java.util.UUID.fromString(ended), "cancelled");

        assertThat(round()).containsExactlyInAnyOrder(next, other);
        assertThat(messagesFor(ended)).isZero();
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch' AND published_at IS NULL",
                ended)).as("left for an operator, as it was written").isEqualTo(1);
    }

    @BeanInject
    org.apache.camel.CamelContext context;

    /**
     * A provider is given no more dispatched jobs than its max-concurrency allows (V30): a job sent to
     * a full provider would only come back after gate-full-delay and go round again. A job that ends
     * gives its provider's share back, and the next round sends one more.
     */
    @Test
    void aProviderGetsNoMoreJobsThanItsCallsAllowAndOneMoreWhenOneEnds() throws Exception {
        List<String> jobs = new ArrayList<>();
        for (String key : List.of(ACME, GLOBEX, BULK)) {
            jobs.add(post(key));
        }
        String provider = (String) Db.single("SELECT provider FROM jobs WHERE job_id = ?::uuid", jobs.get(0)).get("provider");
        long limit = Long.parseLong(context.resolvePropertyPlaceholders("{{jobgate.provider." + provider + ".max-concurrency}}"));
        // All but one of its calls taken by jobs dispatched earlier (another instance's, say).
        Db.update("INSERT INTO provider_window (provider, shard, running) VALUES (?, 0, ?)", provider, limit - 1);

        List<String> first = round();
        assertThat(first).as("one call free: one job of the three tenants' goes out").hasSize(1);
        assertThat(round()).as("the provider is full").isEmpty();
        assertThat(Db.count("SELECT sum(running) FROM provider_window WHERE provider = ?", provider)).isEqualTo(limit);

        api.post(tenantKey(first.get(0)), "/v1/jobs/" + first.get(0) + "/cancel");
        assertThat(Db.count("SELECT sum(running) FROM provider_window WHERE provider = ?", provider)).isEqualTo(limit - 1);
        List<String> second = round();
        assertThat(second).hasSize(1).doesNotContain(first.get(0));
        assertThat(round()).isEmpty();
    }

    /**
     * A hand-over round between waves: one call free, every tenant with a backlog. The round locks at most one event
     * of each tenant (what the providers have room for), not each tenant's whole share, and takes the one.
     */
    @Test
    void aRoundWithOneFreeCallLocksOneEventOfEachTenantNotItsShare() throws Exception {
        List<String> jobs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            for (String key : List.of(ACME, GLOBEX, BULK)) {
                jobs.add(post(key));
            }
        }
        String provider = (String) Db.single("SELECT provider FROM jobs WHERE job_id = ?::uuid", jobs.get(0)).get("provider");
        long limit = Long.parseLong(context.resolvePropertyPlaceholders("{{jobgate.provider." + provider + ".max-concurrency}}"));
        Db.update("INSERT INTO provider_window (provider, shard, running) VALUES (?, 0, ?)", provider, limit - 1);

        long locked;
        try (java.sql.Connection c = io.jobgate.support.TestDatabase.connect(); java.sql.Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            StringBuilder plan = new StringBuilder();
            try (java.sql.ResultSet rs = s.executeQuery("EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) " + claimWith(provider + "=" + limit))) {
                while (rs.next()) {
                    plan.append(rs.getString(1)).append('\n');
                }
            } finally {
                c.rollback();
            }
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("LockRows \\(actual rows=([\\d.]+) loops=(\\d+)\\)").matcher(plan);
            assertThat(m.find()).as(plan.toString()).isTrue();
            locked = Math.round(Double.parseDouble(m.group(1)) * Long.parseLong(m.group(2))); // PostgreSQL 18 prints rows=1.00
            assertThat(locked).as(plan.toString()).isEqualTo(3);
        }
        assertThat(round()).as("the one free call is taken").hasSize(1);
        assertThat(round()).isEmpty();
    }

    /** The relay's claim as its round runs it, with this gateway's settings and {@code providerLimits} as given. */
    private String claimWith(String providerLimits) throws java.io.IOException {
        String text = RelayPlansTest.withoutComments("sql/relay-claim-dispatch.sql");
        Map<String, String> values = Map.of("maxRunning", "1000000", "providerLimits", "'" + providerLimits + "'",
                "perTenant", context.resolvePropertyPlaceholders("{{jobgate.relay.per-tenant}}"), "now", "now()",
                "claimSeconds", "30", "claimToken", "'" + UUID.randomUUID() + "'", "claimOwner", "'lock-count-test'");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile(":#(\\w+)").matcher(text);
        StringBuilder sql = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(sql, java.util.regex.Matcher.quoteReplacement(
                    java.util.Objects.requireNonNull(values.get(m.group(1)), m.group(1))));
        }
        return m.appendTail(sql).toString();
    }

    /**
     * A round the broker refused (a failover) leaves its claims ended early on jobs that hold their slots
     * (OutboxRelay.releaseClaims). The first round after a failover takes every free call of a provider; when
     * that is the round refused, those claims fill their provider, and a round that waited for the provider's
     * room to publish them waited for ever (a FailoverIT run stalled for good so, 16 jobs on the simulator's 16
     * calls). They are published again on their slots, full provider or full window, and take no second one.
     */
    @Test
    void claimsThatRanOutOnTheirSlotsArePublishedAgainWhenTheyFillTheirProviderOrTheWindow() throws Exception {
        String job = post(ACME);
        String provider = (String) Db.single("SELECT provider FROM jobs WHERE job_id = ?::uuid", job).get("provider");
        long limit = Long.parseLong(context.resolvePropertyPlaceholders("{{jobgate.provider." + provider + ".max-concurrency}}"));
        Db.update("INSERT INTO provider_window (provider, shard, running) VALUES (?, 0, ?)", provider, limit - 1);
        assertThat(round()).as("the provider's last free call").containsExactly(job);
        assertThat(messagesFor(job)).isEqualTo(1);

        String ranOut = "UPDATE outbox SET published_at = NULL, claimed_until = now() - interval '1 second' "
                + "WHERE job_id = ?::uuid AND event_type = 'dispatch'";
        String published = "SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch' AND published_at IS NOT NULL";
        Db.update(ranOut, job); // as a refused round leaves it: unpublished, its claim ended, its slot kept
        round();
        assertThat(Db.count(published, job)).as("published again although its provider is full (of it)").isEqualTo(1);
        assertThat(messagesFor(job)).isEqualTo(2);

        Db.update(ranOut, job);
        Db.execute("UPDATE dispatch_window SET running = running + 1000000 WHERE id = 1"); // no free room in the window either
        round();
        assertThat(Db.count(published, job)).as("published again although the window is full").isEqualTo(1);
        assertThat(messagesFor(job)).isEqualTo(3);
        assertThat(Db.count("SELECT sum(running) FROM provider_window WHERE provider = ?", provider)).as("no second slot").isEqualTo(limit);
        Db.execute("UPDATE dispatch_window SET running = running - 1000000 WHERE id = 1");
    }

    private static String tenantKey(String jobId) {
        String tenant = (String) Db.single("SELECT tenant_id FROM jobs WHERE job_id = ?::uuid", jobId).get("tenant_id");
        return switch (tenant) {
            case "acme" -> ACME;
            case "globex" -> GLOBEX;
            default -> BULK;
        };
    }

    @Test
    void twoRelaysOnOneDatabaseNeitherPublishTwiceNorSkip() throws Exception {
        List<String> jobs = new ArrayList<>();
        for (String key : List.of(ACME, GLOBEX, BULK)) {
            for (int i = 0; i < 3; i++) {
                jobs.add(post(key));
            }
        }
        ExecutorService relays = Executors.newFixedThreadPool(2);
        List<Future<?>> running = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            running.add(relays.submit(() -> {
                for (int i = 0; i < 20; i++) {
                    var ex = producer.send("direct:outbox-relay-round", e -> { });
                    assertThat(ex.getException()).isNull();
                }
            }));
        }
        for (Future<?> f : running) {
            f.get();
        }
        relays.shutdown();

        for (String id : jobs) {
            assertThat(messagesFor(id)).as("messages for %s", id).isEqualTo(1);
        }
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE event_type = 'dispatch' AND published_at IS NULL")).isZero();
    }

    /**
     * A transaction that holds a tenant's row, then takes the window row (a worker releasing a slot did,
     * before its releases went to release rows, V10 and V24; the documented order still says so). A round
     * must take tenant rows before the window row, or the two deadlock (PostgreSQL aborts one of them).
     */
    @Test
    void aRoundTakesTenantRowsBeforeTheWindowRowSoAWorkerReleasingASlotCannotDeadlockWithIt() throws Exception {
        String job = post(ACME);
        try (Connection worker = DriverManager.getConnection(TestDatabase.url(), TestDatabase.user(), TestDatabase.password());
             Statement st = worker.createStatement()) {
            worker.setAutoCommit(false);
            st.execute("SET LOCAL lock_timeout = '5s'");
            st.execute("UPDATE tenant_accounts SET running_jobs = running_jobs WHERE tenant_id = 'acme'");
            Future<List<String>> relayed = Executors.newSingleThreadExecutor().submit(this::round);
            await().atMost(Duration.ofSeconds(10)).until(() -> Db.count(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%pg_try_advisory_xact_lock(7305001)%'") == 1);

            st.execute("UPDATE dispatch_window SET running = running WHERE id = 1"); // would wait on the round, then deadlock
            worker.commit();

            assertThat(relayed.get(10, TimeUnit.SECONDS)).containsExactly(job);
        }
        assertThat(Db.single("SELECT running FROM dispatch_window WHERE id = 1")).containsEntry("running", 1L);
    }

    /**
     * A status round holds its events by row lock for as long as it publishes them: an event another
     * round holds is skipped (not published twice meanwhile), then goes out once that round let go
     * without marking it (as after a crash), and is marked published with the round's commit.
     */
    @Test
    void aStatusRoundSkipsEventsAnotherRoundHoldsAndMarksWhatItPublished() throws Exception {
        String job = post(ACME);
        try (jakarta.jms.Session session = jms.connection().createSession(false, jakarta.jms.Session.AUTO_ACKNOWLEDGE);
             jakarta.jms.MessageConsumer events = session.createConsumer(session.createTopic(OutboxRelay.EVENTS_TOPIC),
                     "JobgateJobId = '" + job + "'");
             Connection other = TestDatabase.connect()) {
            other.setAutoCommit(false);
            try (Statement st = other.createStatement()) {
                st.executeQuery("SELECT event_id FROM outbox WHERE job_id = '" + job + "' AND event_type = 'status' FOR UPDATE")
                        .close();
            }
            assertThat(statusRound()).isZero();
            assertThat(events.receive(300)).isNull();
            other.rollback(); // the other round ends without marking: its process died, say

            assertThat(statusRound()).isEqualTo(1);
            jakarta.jms.TextMessage event = (jakarta.jms.TextMessage) events.receive(5000);
            assertThat(event).isNotNull();
            assertThat(io.jobgate.common.Json.parseObject(event.getText().getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    .path("status").asText()).isEqualTo("queued");
            assertThat(event.getStringProperty("JobgateStatus")).isEqualTo("queued");
            assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'status' "
                    + "AND published_at IS NOT NULL AND claimed_until IS NULL", job)).isEqualTo(1);
            assertThat(statusRound()).isZero();
            assertThat(events.receive(300)).as("published once").isNull();
        }
    }

    private int statusRound() {
        var exchange = producer.send("direct:outbox-status-round", e -> { });
        if (exchange.getException() != null) {
            throw new IllegalStateException(exchange.getException());
        }
        return exchange.getMessage().getHeader("published", Integer.class);
    }

    @Test
    void aCrashBetweenPublishAndMarkRepublishesAndTheCopyIsHarmless() throws Exception {
        String job = post(ACME);
        Db.execute("""
                CREATE OR REPLACE FUNCTION test_fail_mark() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF NEW.published_at IS NOT NULL AND NEW.event_type = 'dispatch' THEN
                    RAISE EXCEPTION 'injected crash before mark';
                  END IF;
                  RETURN NEW;
                END $$;
                CREATE TRIGGER test_fail_mark BEFORE UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION test_fail_mark();""");
        try {
            assertThatThrownBy(this::round).hasMessageContaining("injected crash before mark");
        } finally {
            Db.execute("DROP TRIGGER test_fail_mark ON outbox; DROP FUNCTION test_fail_mark();");
        }
        // The broker has the message; the event is still unpublished, its claim running out.
        assertThat(messagesFor(job)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch' "
                + "AND published_at IS NULL", job)).isEqualTo(1);

        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() -> {
            round();
            return Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch' "
                    + "AND published_at IS NOT NULL", job) == 1;
        });
        // Published again (at least once): the copy names the same job and event, so a consumer
        // deduplicating by job id sees one job; nothing else changed.
        List<Message> copies = jms.browse("jobs.dispatch", "JobgateJobId = '" + job + "'");
        assertThat(copies).hasSize(2);
        assertThat(copies.get(0).getLongProperty("JobgateEventId")).isEqualTo(copies.get(1).getLongProperty("JobgateEventId"));
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id = ?::uuid", job)).isEqualTo(1);
        assertThat(Db.single("SELECT status FROM jobs WHERE job_id = ?::uuid", job).get("status")).isEqualTo("queued");
        assertThat(Db.count("SELECT running_jobs FROM tenant_counters WHERE tenant_id = 'acme'")).isEqualTo(1);
    }
}
