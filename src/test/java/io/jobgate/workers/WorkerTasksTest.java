package io.jobgate.workers;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.JobFactory;
import io.jobgate.support.MovableClock;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The pull members' tasks on a real PostgreSQL (V40): leased oldest first under fresh tokens, never to two workers at
 * once; heartbeats extend only the live token; complete and fail end only under it; a lease that ran out is leased
 * again under the same job and attempt while the late token changes nothing; a cancel reaches the holder's heartbeat.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WorkerTasksTest {

    static final String TENANT = "workers-tenant";
    static final Duration LEASE = Duration.ofSeconds(30);
    static final String OTHER_TENANT = "workers-tenant-2";
    /** A member limit no test reaches. */
    static final int UNCAPPED = 1000;

    HikariDataSource db;
    JdbcTemplate jdbc;
    MovableClock clock;
    WorkerTasks tasks;
    String member;

    @BeforeAll
    void migrate() {
        db = TestDatabase.migratedPool(4);
        jdbc = new JdbcTemplate(db);
        TestTenants.tenant(jdbc, TENANT, 100, 10, 1_000_000);
        TestTenants.tenant(jdbc, OTHER_TENANT, 100, 10, 1_000_000);
    }

    @BeforeEach
    void fresh() {
        clock = new MovableClock();
        tasks = new WorkerTasks(jdbc, new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(db)), clock);
        member = "gpubox-" + UUID.randomUUID().toString().substring(0, 8); // each test its own member: nothing shared
    }

    @AfterAll
    void close() {
        jdbc.update("DELETE FROM worker_tasks WHERE provider LIKE 'gpubox-%'");
        db.close();
    }

    @Test
    void aSubmitSentAgainFindsTheTaskItWrote() {
        UUID job = job();
        WorkerTasks.Task first = tasks.submit(member, job, 1, "{\"n\": 1}");
        WorkerTasks.Task again = tasks.submit(member, job, 1, "{\"n\": 2}");
        assertThat(again.taskId()).isEqualTo(first.taskId());
        assertThat(again.envelope()).contains("1");
        assertThat(again.status()).isEqualTo(WorkerTasks.Status.WAITING);
        assertThat(tasks.submit(member, job, 2, "{}").taskId()).as("the next attempt: a task of its own").isNotEqualTo(first.taskId());
    }

    @Test
    void tasksAreLeasedOldestFirstUnderFreshTokensAndNeverTwice() {
        UUID a = tasks.submit(member, job(), 1, "{}").taskId();
        clock.advance(Duration.ofMillis(10));
        UUID b = tasks.submit(member, job(), 1, "{}").taskId();
        clock.advance(Duration.ofMillis(10));
        UUID c = tasks.submit(member, job(), 1, "{}").taskId();

        List<WorkerTasks.Task> one = tasks.lease(member, "w1", 2, LEASE, UNCAPPED);
        assertThat(one).extracting(WorkerTasks.Task::taskId).containsExactly(a, b);
        assertThat(one).extracting(WorkerTasks.Task::leaseToken).doesNotContainNull().doesNotHaveDuplicates();
        assertThat(one).allSatisfy(t -> assertThat(t.workerId()).isEqualTo("w1"));
        List<WorkerTasks.Task> two = tasks.lease(member, "w2", 5, LEASE, UNCAPPED);
        assertThat(two).extracting(WorkerTasks.Task::taskId).containsExactly(c);
        assertThat(tasks.lease(member, "w3", 5, LEASE, UNCAPPED)).isEmpty();
        assertThat(tasks.leasableAmong(List.of(member))).isEmpty();
        assertThat(tasks.lease("gpubox-other", "w1", 5, LEASE, UNCAPPED)).as("another member's round").isEmpty();
    }

    @Test
    void aHeartbeatExtendsOnlyTheLiveLease() {
        tasks.submit(member, job(), 1, "{}");
        WorkerTasks.Task leased = tasks.lease(member, "w1", 1, LEASE, UNCAPPED).get(0);
        clock.advance(Duration.ofSeconds(20));
        WorkerTasks.Written beat = tasks.heartbeat(leased.taskId(), leased.leaseToken(), LEASE);
        assertThat(beat.ok()).isTrue();
        assertThat(beat.task().leaseExpiresAt()).isAfter(leased.leaseExpiresAt());
        assertThat(tasks.heartbeat(leased.taskId(), UUID.randomUUID(), LEASE).refusal()).isEqualTo(WorkerTasks.Refusal.LEASE_LOST);
        assertThat(tasks.heartbeat(UUID.randomUUID(), leased.leaseToken(), LEASE).refusal()).isEqualTo(WorkerTasks.Refusal.NOT_FOUND);
    }

    @Test
    void aLeaseThatRanOutIsLeasedAgainUnderTheSameJobAndTheLateTokenChangesNothing() {
        UUID job = job();
        tasks.submit(member, job, 1, "{}");
        WorkerTasks.Task first = tasks.lease(member, "killed", 1, LEASE, UNCAPPED).get(0);
        clock.advance(LEASE.plusSeconds(1));
        assertThat(tasks.leasableAmong(List.of(member))).containsExactly(Map.entry(member, 1));
        WorkerTasks.Task second = tasks.lease(member, "w2", 1, LEASE, UNCAPPED).get(0);
        assertThat(second.taskId()).isEqualTo(first.taskId());
        assertThat(second.jobId()).isEqualTo(job);
        assertThat(second.attempt()).isEqualTo(1);
        assertThat(second.leases()).isEqualTo(2);
        assertThat(second.leaseToken()).isNotEqualTo(first.leaseToken());

        // The first worker comes back: its heartbeat, complete and fail are refused and change nothing.
        assertThat(tasks.heartbeat(first.taskId(), first.leaseToken(), LEASE).refusal()).isEqualTo(WorkerTasks.Refusal.LEASE_LOST);
        assertThat(tasks.complete(first.taskId(), first.leaseToken(), "late", "image/png", BigDecimal.ONE, "gpu_seconds").refusal())
                .isEqualTo(WorkerTasks.Refusal.LEASE_LOST);
        assertThat(tasks.fail(first.taskId(), first.leaseToken(), "terminal", "late", null).refusal())
                .isEqualTo(WorkerTasks.Refusal.LEASE_LOST);
        WorkerTasks.Task now = tasks.find(first.taskId()).orElseThrow();
        assertThat(now.status()).isEqualTo(WorkerTasks.Status.LEASED);
        assertThat(now.leaseToken()).isEqualTo(second.leaseToken());
        assertThat(now.outputKey()).isNull();
    }

    @Test
    void completeAndFailEndTheTaskOnceUnderItsToken() {
        tasks.submit(member, job(), 1, "{}");
        tasks.submit(member, job(), 1, "{}");
        List<WorkerTasks.Task> leased = tasks.lease(member, "w1", 2, LEASE, UNCAPPED);
        WorkerTasks.Task done = leased.get(0);
        WorkerTasks.Task broken = leased.get(1);

        WorkerTasks.Written completed = tasks.complete(done.taskId(), done.leaseToken(), "worker-outputs/x", "image/png",
                new BigDecimal("2.5"), "gpu_seconds");
        assertThat(completed.ok()).isTrue();
        assertThat(completed.task().status()).isEqualTo(WorkerTasks.Status.SUCCEEDED);
        assertThat(completed.task().billedUnits()).isEqualByComparingTo("2.5");
        assertThat(tasks.complete(done.taskId(), done.leaseToken(), "again", "image/png", null, null).refusal())
                .as("a second complete").isEqualTo(WorkerTasks.Refusal.ENDED);
        assertThat(tasks.find(done.taskId()).orElseThrow().outputKey()).isEqualTo("worker-outputs/x");

        WorkerTasks.Written failed = tasks.fail(broken.taskId(), broken.leaseToken(), "transient", "GPU out of memory", 30);
        assertThat(failed.task().status()).isEqualTo(WorkerTasks.Status.FAILED);
        assertThat(failed.task().retryAfterSeconds()).isEqualTo(30);
        assertThat(tasks.lease(member, "w2", 5, LEASE, UNCAPPED)).as("ended tasks are never leased").isEmpty();
    }

    @Test
    void aCancelReachesTheHolderAtItsNextHeartbeat() {
        tasks.submit(member, job(), 1, "{}");
        WorkerTasks.Task leased = tasks.lease(member, "w1", 1, LEASE, UNCAPPED).get(0);
        assertThat(tasks.cancel(leased.taskId())).isTrue();
        assertThat(tasks.heartbeat(leased.taskId(), leased.leaseToken(), LEASE).refusal()).isEqualTo(WorkerTasks.Refusal.CANCELLED);
        assertThat(tasks.complete(leased.taskId(), leased.leaseToken(), "k", "image/png", null, null).refusal())
                .isEqualTo(WorkerTasks.Refusal.CANCELLED);
        assertThat(tasks.cancel(leased.taskId())).as("once").isFalse();
    }

    private UUID job() {
        return job(TENANT);
    }

    private UUID job(String tenant) {
        return JobFactory.on(jdbc).job(tenant).provider(member).status("provider_pending").attempts(1).insert();
    }

    @Test
    void leasesGoOnePerTenantPerRoundSoAFewTasksAreNotPushedBehindMany() {
        List<UUID> many = new java.util.ArrayList<>();
        for (int i = 0; i < 5; i++) {
            many.add(tasks.submit(member, job(TENANT), 1, "{}").taskId());
            clock.advance(Duration.ofSeconds(1));
        }
        List<UUID> few = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            few.add(tasks.submit(member, job(OTHER_TENANT), 1, "{}").taskId());
            clock.advance(Duration.ofSeconds(1));
        }
        // Oldest first would hand out the first tenant's five before the other's two.
        assertThat(tasks.lease(member, "w1", 4, LEASE, UNCAPPED)).extracting(WorkerTasks.Task::taskId)
                .containsExactlyInAnyOrder(many.get(0), few.get(0), many.get(1), few.get(1));
        assertThat(tasks.lease(member, "w2", 10, LEASE, UNCAPPED)).extracting(WorkerTasks.Task::taskId)
                .containsExactly(many.get(2), many.get(3), many.get(4));
    }

    /**
     * Many workers asking at once, round after round, each for one task: never more than the limit leased at once, never
     * a task leased twice. Each lease must see every lease before it: the member's lock is taken by a statement of its
     * own, before the lease's (a lock and the lease sent as two statements of one string, one implicit transaction, were
     * seen here to lease a task twice).
     */
    @Test
    void manyWorkersAskingAtOnceNeverExceedTheLimitNorShareATask() throws Exception {
        int limit = 10;
        for (int i = 0; i < 60; i++) {
            tasks.submit(member, job(i % 2 == 0 ? TENANT : OTHER_TENANT), 1, "{}");
        }
        var asks = java.util.concurrent.Executors.newFixedThreadPool(16);
        try {
            java.util.Set<UUID> everLeased = java.util.concurrent.ConcurrentHashMap.newKeySet();
            for (int round = 0; round < 5; round++) {
                List<java.util.concurrent.Future<List<WorkerTasks.Task>>> answers = new java.util.ArrayList<>();
                for (int w = 0; w < 16; w++) {
                    String worker = "w" + w;
                    answers.add(asks.submit(() -> tasks.lease(member, worker, 1, LEASE, limit)));
                }
                int got = 0;
                for (var answer : answers) {
                    for (WorkerTasks.Task task : answer.get()) {
                        assertThat(everLeased.add(task.taskId())).as("a task leased twice: " + task).isTrue();
                        got++;
                    }
                }
                assertThat(got).as("round " + round + ": the limit, all taken at once").isEqualTo(limit);
                assertThat(jdbc.queryForObject("SELECT count(*) FROM worker_tasks WHERE provider = ? AND status = 'leased'",
                        Integer.class, member)).isEqualTo(limit);
                // Every leased task ends: the next round takes the next ten.
                for (WorkerTasks.Task task : jdbc.query("SELECT * FROM worker_tasks WHERE provider = ? AND status = 'leased'",
                        (rs, i) -> tasks.find(rs.getObject("task_id", UUID.class)).orElseThrow(), member)) {
                    assertThat(tasks.complete(task.taskId(), task.leaseToken(), "k", "image/png", null, null).ok()).isTrue();
                }
            }
            assertThat(everLeased).hasSize(50);
        } finally {
            asks.shutdown();
        }
    }

    /**
     * Tasks handed to waiting polls as they are written take their places without the member's lock: many written at
     * once, beside lease calls, round after round, and still no worker is handed a lease beyond the limit (those that
     * saw the same last place free give it back, their tasks wait), nor a task twice.
     */
    @Test
    void tasksHandedAsTheyAreWrittenNeverExceedTheLimit() throws Exception {
        int limit = 3;
        var writes = java.util.concurrent.Executors.newFixedThreadPool(16);
        // A connection each, all let go at once: the writes' statements overlap, as a busy member's do.
        HikariDataSource wide = TestDatabase.migratedPool(16);
        JdbcTemplate wideJdbc = new JdbcTemplate(wide);
        WorkerTasks tasks = new WorkerTasks(wideJdbc, new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(wide)), clock);
        try {
            java.util.Set<UUID> handed = java.util.concurrent.ConcurrentHashMap.newKeySet();
            java.util.concurrent.atomic.AtomicInteger handedAsWritten = new java.util.concurrent.atomic.AtomicInteger();
            for (int round = 0; round < 5; round++) {
                tasks.submit(member, job(), 1, "{}"); // one waiting: a lease call competes too
                List<java.util.concurrent.Future<List<WorkerTasks.Task>>> answers = new java.util.ArrayList<>();
                var start = new java.util.concurrent.CountDownLatch(1);
                for (int w = 0; w < 16; w++) {
                    String worker = "w" + w;
                    UUID job = job(w % 2 == 0 ? TENANT : OTHER_TENANT);
                    answers.add(writes.submit(() -> {
                        start.await();
                        if (worker.equals("w0")) {
                            return tasks.lease(member, worker, 1, LEASE, limit);
                        }
                        WorkerTasks.Submitted s = tasks.submitLeased(member, job, 1, "{}", null, null, null, worker, LEASE, limit);
                        return s.leased() ? List.of(s.task()) : List.<WorkerTasks.Task>of();
                    }));
                }
                wideJdbc.queryForObject("SELECT 1", Integer.class); // the pool's connections made before the start
                start.countDown();
                int got = 0;
                for (int w = 0; w < answers.size(); w++) {
                    for (WorkerTasks.Task task : answers.get(w).get()) {
                        assertThat(handed.add(task.taskId())).as("a task handed twice: " + task).isTrue();
                        got++;
                        if (w > 0) {
                            handedAsWritten.incrementAndGet();
                        }
                    }
                }
                Integer leased = jdbc.queryForObject("SELECT count(*) FROM worker_tasks WHERE provider = ? AND status = 'leased'",
                        Integer.class, member);
                // At most the limit; maybe fewer (racers that each counted the others over the limit all gave back).
                assertThat(got).as("round " + round + ": handed at once").isLessThanOrEqualTo(limit).isEqualTo(leased);
                // Every lease ends, every task left waiting too: the next round starts with all places free.
                for (WorkerTasks.Task task : jdbc.query("SELECT * FROM worker_tasks WHERE provider = ? AND status = 'leased'",
                        (rs, i) -> tasks.find(rs.getObject("task_id", UUID.class)).orElseThrow(), member)) {
                    assertThat(tasks.complete(task.taskId(), task.leaseToken(), "k", "image/png", null, null).ok()).isTrue();
                }
                jdbc.update("UPDATE worker_tasks SET status = 'cancelled' WHERE provider = ? AND status = 'waiting'", member);
            }
            // The first of a round's writers to commit counts itself alone and keeps its lease: tasks are handed as
            // written every round (a hand-off that never leased would leave only the lease call's).
            assertThat(handedAsWritten.get()).as("tasks handed as they were written, over 5 rounds").isGreaterThanOrEqualTo(5);
        } finally {
            writes.shutdown();
            wide.close();
        }
    }

    @Test
    void noMoreThanTheMembersLimitAreLeasedAtOnceOverAllItsWorkers() throws Exception {
        for (int i = 0; i < 6; i++) {
            tasks.submit(member, job(), 1, "{}");
        }
        // Two workers asking at once for more than the limit: together they get the limit, never more.
        var asks = java.util.concurrent.Executors.newFixedThreadPool(2);
        try {
            var a = asks.submit(() -> tasks.lease(member, "w1", 3, LEASE, 4));
            var b = asks.submit(() -> tasks.lease(member, "w2", 3, LEASE, 4));
            assertThat(a.get().size() + b.get().size()).isEqualTo(4);
        } finally {
            asks.shutdown();
        }
        assertThat(tasks.lease(member, "w3", 3, LEASE, 4)).as("all four places held").isEmpty();
        WorkerTasks.Task held = jdbc.query("SELECT * FROM worker_tasks WHERE provider = ? AND status = 'leased' LIMIT 1",
                (rs, i) -> tasks.find(rs.getObject("task_id", UUID.class)).orElseThrow(), member).get(0);
        assertThat(tasks.fail(held.taskId(), held.leaseToken(), "terminal", "done", null).ok()).isTrue();
        assertThat(tasks.lease(member, "w3", 3, LEASE, 4)).as("one place freed").hasSize(1);
        clock.advance(LEASE.plusSeconds(1));
        assertThat(tasks.lease(member, "w4", 10, LEASE, 4)).as("leases that ran out hold no place").hasSize(4);
    }
}
