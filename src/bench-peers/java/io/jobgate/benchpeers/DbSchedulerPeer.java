package io.jobgate.benchpeers;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerClient;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;

/**
 * db-scheduler as a team would use it for one-time jobs: {@code jobs} one-time task instances
 * scheduled through its {@link SchedulerClient} from {@code threads} threads (one JDBC insert each,
 * autocommit), then a {@link Scheduler} with {@code threads} executor threads started on the backlog;
 * the task body does nothing. The table is its {@code scheduled_tasks} (its PostgreSQL DDL) in a
 * schema of its own. Drained means the table is empty again (db-scheduler deletes a one-time task's
 * row when it completes). {@code polling} is {@code fetch} (its default, fetch-and-lock-on-execute) or
 * {@code lock-and-fetch} ({@code SELECT ... FOR UPDATE SKIP LOCKED}).
 *
 * <p>Called by the bench through {@link Function} only (the class loaders share nothing else):
 * settings in, figures out.
 */
public final class DbSchedulerPeer implements Function<Map<String, String>, Map<String, Object>> {

    /** Its PostgreSQL table, as its documentation gives it. */
    static final String DDL = """
            CREATE TABLE scheduled_tasks (
              task_name text NOT NULL,
              task_instance text NOT NULL,
              task_data bytea,
              execution_time timestamp with time zone NOT NULL,
              picked boolean NOT NULL,
              picked_by text,
              last_success timestamp with time zone,
              last_failure timestamp with time zone,
              consecutive_failures int,
              last_heartbeat timestamp with time zone,
              version bigint NOT NULL,
              priority smallint,
              PRIMARY KEY (task_name, task_instance));
            CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time);
            CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat);
            CREATE INDEX priority_execution_time_idx ON scheduled_tasks (priority DESC, execution_time ASC);
            """;

    @Override
    public Map<String, Object> apply(Map<String, String> settings) {
        try {
            return PeerDatabase.warmThenMeasure(settings, this::run);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private Map<String, Object> run(Map<String, String> settings) throws Exception {
        int jobs = Integer.parseInt(settings.getOrDefault("jobs", "20000"));
        int threads = Integer.parseInt(settings.getOrDefault("threads", "16"));
        String polling = settings.getOrDefault("polling", "fetch");
        String schema = settings.getOrDefault("schema", "jobgate_peer_dbscheduler");
        AtomicInteger executed = new AtomicInteger();
        OneTimeTask<Void> task = Tasks.oneTime("jobgate-peer-noop").execute((instance, context) -> executed.incrementAndGet());
        Map<String, Object> figures = new LinkedHashMap<>();
        figures.put("name", "db-scheduler " + PeerDatabase.version(Scheduler.class) + (polling.equals("fetch") ? "" : " (" + polling + ")"));
        try (PeerDatabase db = PeerDatabase.open(settings, schema, threads + 4)) {
            try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
                s.execute(DDL);
            }
            SchedulerClient client = SchedulerClient.Builder.create(db.dataSource, task).build();
            Instant due = Instant.now();
            double enqueueSeconds = PeerDatabase.enqueue(jobs, threads,
                    i -> client.scheduleIfNotExists(task.instance("job-" + i), due));
            long rows = db.count("SELECT count(*) FROM scheduled_tasks");
            if (rows != jobs) {
                throw new IllegalStateException("db-scheduler: " + rows + " rows after scheduling " + jobs);
            }
            var builder = Scheduler.create(db.dataSource, task).threads(threads)
                    .pollingInterval(Duration.ofSeconds(1))
                    .schedulerName(new SchedulerName.Fixed("jobgate-bench"))
                    .shutdownMaxWait(Duration.ofSeconds(10));
            if (polling.equals("lock-and-fetch")) {
                builder.pollUsingLockAndFetch(0.5, 1.0);
            } else if (!polling.equals("fetch")) {
                throw new IllegalArgumentException("db-scheduler polling " + polling + ": fetch or lock-and-fetch");
            }
            Scheduler scheduler = builder.build();
            long start = System.nanoTime();
            scheduler.start();
            double drainSeconds;
            try {
                long deadline = start + Duration.ofSeconds(Long.parseLong(settings.getOrDefault("timeout-seconds", "600"))).toNanos();
                while (executed.get() < jobs || db.count("SELECT count(*) FROM scheduled_tasks") > 0) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("db-scheduler: " + executed.get() + " of " + jobs + " executed before the timeout");
                    }
                    Thread.sleep(executed.get() < jobs ? 20 : 5);
                }
                drainSeconds = (System.nanoTime() - start) / 1e9;
            } finally {
                scheduler.stop();
            }
            figures.put("enqueue-per-second", jobs / enqueueSeconds);
            figures.put("drain-per-second", jobs / drainSeconds);
            figures.put("enqueue-seconds", enqueueSeconds);
            figures.put("drain-seconds", drainSeconds);
        }
        return figures;
    }
}
