package io.jobgate.workers;

import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.support.JobFactory;
import io.jobgate.support.MovableClock;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A pull member's lookup when no task was recorded for the attempt: its submit waited for the worker on an instance
 * that stopped before answering (docs/workers.md, "A submit waits"). The lookup finds the task by the job and attempt
 * and the job adopts it, whatever the worker did: leased is pending, failed is its category; only an attempt whose
 * submit wrote no task is absent (a resubmit is safe). Without this, the job's next attempt rendered the job a second
 * time (seen in the chaos soak: a gateway killed while its submits waited).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PullAdapterLookupTest {

    static final String TENANT = "pull-lookup-tenant";

    HikariDataSource db;
    JdbcTemplate jdbc;
    final MovableClock clock = new MovableClock();
    WorkerTasks tasks;
    PullAdapter adapter;
    final String member = "gpubox-" + UUID.randomUUID().toString().substring(0, 8);
    final DefaultCamelContext camel = new DefaultCamelContext();

    @BeforeAll
    void start() {
        db = TestDatabase.migratedPool(2);
        jdbc = new JdbcTemplate(db);
        TestTenants.tenant(jdbc, TENANT, 100, 10, 1_000_000);
        tasks = new WorkerTasks(jdbc, new org.springframework.transaction.support.TransactionTemplate(
                new org.springframework.jdbc.datasource.DataSourceTransactionManager(db)), clock);
        adapter = new PullAdapter(tasks, null, new WorkersSeen(jdbc, clock), new HeldSubmits(), name -> null);
    }

    @AfterAll
    void close() {
        jdbc.update("DELETE FROM worker_tasks WHERE provider = ?", member);
        db.close();
    }

    @Test
    void aTaskNoAnswerRecordedIsFoundByItsAttemptAndAdopted() throws Exception {
        UUID job = JobFactory.on(jdbc).job(TENANT).provider(member).status("submission_unknown").attempts(1).insert();
        WorkerTasks.Task task = tasks.submit(member, job, 1, "{}");
        tasks.lease(member, "w-1", 1, Duration.ofSeconds(30), 10);

        Exchange leased = lookup(job, 1);
        assertThat(leased.getProperty("JobgateOutcome")).isEqualTo("pending");
        assertThat(leased.getProperty("JobgateProviderTask")).as("adopted").isEqualTo(task.taskId().toString());

        WorkerTasks.Task live = tasks.find(task.taskId()).orElseThrow();
        assertThat(tasks.fail(task.taskId(), live.leaseToken(), "terminal", "model refused", null).ok()).isTrue();
        Exchange failed = lookup(job, 1);
        assertThat(failed.getProperty("JobgateOutcome")).as("the worker's own word, not a resubmit").isEqualTo("declined");
        assertThat(failed.getProperty("JobgateErrorMessage")).isEqualTo("model refused");

        assertThat(lookup(job, 2).getProperty("JobgateOutcome")).as("an attempt whose submit wrote no task").isEqualTo("absent");
    }

    private Exchange lookup(UUID job, int attempt) throws Exception {
        Exchange exchange = new DefaultExchange(camel);
        exchange.setProperty("JobgateOperation", "lookup");
        exchange.setProperty("JobgateProvider", member);
        exchange.setProperty("JobgateJobId", job.toString());
        exchange.setProperty("JobgateAttempt", attempt);
        adapter.adapt(exchange);
        return exchange;
    }
}
