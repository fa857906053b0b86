package io.jobgate.benchpeers;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.jobrunr.configuration.JobRunr;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.scheduling.JobScheduler;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.server.JobActivator;
import org.jobrunr.server.carbonaware.CarbonAwareJobProcessingConfiguration;
import org.jobrunr.storage.StorageProviderUtils.DatabaseOptions;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * JobRunr as its documentation shows it: its PostgreSQL storage provider (tables created by
 * JobRunr's own migrations in a schema of its own), {@code jobs} fire-and-forget jobs enqueued with
 * {@link JobScheduler#enqueue} from {@code threads} threads (a lambda calling a static method that
 * does nothing), then a {@link BackgroundJobServer} with {@code threads} workers started on the
 * backlog. Drained means JobRunr counts every job SUCCEEDED. The server's poll interval is 5 s (its
 * default is 15 s); JobRunr also fetches more work as soon as workers are idle.
 *
 * <p>Called by the bench through {@link Function} only (the class loaders share nothing else):
 * settings in, figures out.
 */
public final class JobRunrPeer implements Function<Map<String, String>, Map<String, Object>> {

    private static final AtomicInteger EXECUTED = new AtomicInteger();

    /** The job: nothing. */
    public static void work() {
        EXECUTED.incrementAndGet();
    }

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
        String schema = settings.getOrDefault("schema", "jobgate_peer_jobrunr");
        EXECUTED.set(0);
        Map<String, Object> figures = new LinkedHashMap<>();
        figures.put("name", "JobRunr " + PeerDatabase.version(JobRunr.class));
        try (PeerDatabase db = PeerDatabase.open(settings, schema, threads + 8)) {
            PostgresStorageProvider storage = new PostgresStorageProvider(db.dataSource, DatabaseOptions.CREATE);
            JacksonJsonMapper json = new JacksonJsonMapper();
            try {
                JobScheduler scheduler = JobRunr.configure().useJsonMapper(json).useStorageProvider(storage)
                        .initialize().getJobScheduler();
                double enqueueSeconds = PeerDatabase.enqueue(jobs, threads, i -> scheduler.enqueue(() -> JobRunrPeer.work()));
                long enqueued = storage.countJobs(StateName.ENQUEUED);
                if (enqueued != jobs) {
                    throw new IllegalStateException("JobRunr: " + enqueued + " jobs enqueued of " + jobs);
                }
                JobActivator activator = new JobActivator() {
                    @Override
                    public <T> T activateJob(Class<T> type) {
                        return null; // static methods only
                    }
                };
                BackgroundJobServer server = new BackgroundJobServer(storage, json, activator,
                        BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration()
                                .andName("jobgate-bench")
                                .andWorkerCount(threads)
                                .andPollInterval(Duration.ofSeconds(5))
                                .andCarbonAwareJobProcessingConfiguration(
                                        CarbonAwareJobProcessingConfiguration.usingDisabledCarbonAwareJobProcessingConfiguration()));
                long start = System.nanoTime();
                server.start();
                double drainSeconds;
                try {
                    long deadline = start + Duration.ofSeconds(Long.parseLong(settings.getOrDefault("timeout-seconds", "600"))).toNanos();
                    while (EXECUTED.get() < jobs || storage.countJobs(StateName.SUCCEEDED) < jobs) {
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("JobRunr: " + EXECUTED.get() + " of " + jobs + " executed before the timeout");
                        }
                        Thread.sleep(EXECUTED.get() < jobs ? 20 : 5);
                    }
                    drainSeconds = (System.nanoTime() - start) / 1e9;
                } finally {
                    server.stop();
                }
                figures.put("enqueue-per-second", jobs / enqueueSeconds);
                figures.put("drain-per-second", jobs / drainSeconds);
                figures.put("enqueue-seconds", enqueueSeconds);
                figures.put("drain-seconds", drainSeconds);
            } finally {
                JobRunr.destroy();
                storage.close();
            }
        }
        return figures;
    }
}
