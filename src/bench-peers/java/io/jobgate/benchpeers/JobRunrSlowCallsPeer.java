package io.jobgate.benchpeers;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.jobrunr.configuration.JobRunr;
import org.jobrunr.jobs.states.StateName;
import org.jobrunr.scheduling.JobScheduler;
import org.jobrunr.server.BackgroundJobServer;
import org.jobrunr.server.BackgroundJobServerConfiguration;
import org.jobrunr.server.JobActivator;
import org.jobrunr.server.carbonaware.CarbonAwareJobProcessingConfiguration;
import org.jobrunr.server.configuration.BackgroundJobServerThreadType;
import org.jobrunr.server.configuration.DefaultBackgroundJobServerWorkerPolicy;
import org.jobrunr.storage.StorageProviderUtils.DatabaseOptions;
import org.jobrunr.storage.sql.postgres.PostgresStorageProvider;
import org.jobrunr.utils.mapper.jackson.JacksonJsonMapper;

/**
 * {@code bench --only inflight}'s peer, in a JVM of its own: JobRunr as a team would use it for slow
 * provider calls. Each job POSTs the same image request the gateway's OpenAI adapter sends to the same
 * stand-in ({@code io.jobgate.bench.SlowProvider}) and reads the answer; {@code workers} workers, on
 * virtual threads where the JVM has them (Java 21+), JobRunr's PostgreSQL storage in a schema of its
 * own. Enqueue and processing overlap as they would in production: the server starts first, then the
 * jobs are enqueued from 16 threads. Prints one line {@code RESULT k=v ...}: the seconds from the first
 * enqueue to the last job SUCCEEDED, and this JVM's most threads and resident memory seen (sampled).
 *
 * <p>Arguments: jdbc-url user password schema stand-in-url jobs workers timeout-seconds
 * [warm-up-jobs warm-up-latency-ms latency-ms]: warm-up jobs run first, unmeasured, with the stand-in's
 * answers set to the warm-up latency ({@code GET /latency?ms=}), then set back to the measured latency.
 */
public final class JobRunrSlowCallsPeer {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    private static final AtomicInteger DONE = new AtomicInteger();
    private static final AtomicInteger FAILED = new AtomicInteger();
    /**
     * The provider's limit, as a team would have to hold it ({@code -Dpeer.max-calls=N}): JobRunr's workers
     * do not bound the jobs it runs at once on virtual threads (with 2,000 workers it held 3,152 calls at
     * the stand-in), and a real provider answers 429 beyond its account's concurrency. Unset: no bound.
     */
    private static final java.util.concurrent.Semaphore PROVIDER_LIMIT = Integer.getInteger("peer.max-calls", 0) > 0
            ? new java.util.concurrent.Semaphore(Integer.getInteger("peer.max-calls")) : null;

    /** The job: one call, its answer read (a failure throws, and JobRunr retries it). */
    public static void call(String url) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(180))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"gpt-image-1\", \"prompt\": \"bench\", "
                        + "\"size\": \"1024x1536\", \"quality\": \"medium\", \"output_format\": \"png\", \"n\": 1}"))
                .build();
        HttpResponse<String> answer;
        if (PROVIDER_LIMIT != null) {
            PROVIDER_LIMIT.acquire();
        }
        try {
            answer = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } finally {
            if (PROVIDER_LIMIT != null) {
                PROVIDER_LIMIT.release();
            }
        }
        if (answer.statusCode() != 200 || !answer.body().contains("b64_json")) {
            FAILED.incrementAndGet();
            throw new IllegalStateException("stand-in answered " + answer.statusCode());
        }
        DONE.incrementAndGet();
    }

    private static void get(String url) throws Exception {
        HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.discarding());
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> settings = new HashMap<>();
        settings.put("jdbc-url", args[0]);
        settings.put("user", args[1]);
        settings.put("password", args[2]);
        String schema = args[3];
        String url = args[4] + "/v1/images/generations";
        int jobs = Integer.parseInt(args[5]);
        int workers = Integer.parseInt(args[6]);
        long timeoutNanos = Duration.ofSeconds(Long.parseLong(args[7])).toNanos();
        int warmUp = args.length > 8 ? Integer.parseInt(args[8]) : 0;
        boolean virtual = Runtime.version().feature() >= 21;
        Sampler sampler = new Sampler();
        sampler.start();
        try (PeerDatabase db = PeerDatabase.open(settings, schema, 32)) {
            PostgresStorageProvider storage = new PostgresStorageProvider(db.dataSource, DatabaseOptions.CREATE);
            JacksonJsonMapper json = new JacksonJsonMapper();
            try {
                JobScheduler scheduler = JobRunr.configure().useJsonMapper(json).useStorageProvider(storage)
                        .initialize().getJobScheduler();
                JobActivator activator = new JobActivator() {
                    @Override
                    public <T> T activateJob(Class<T> type) {
                        return null; // static methods only
                    }
                };
                BackgroundJobServer server = new BackgroundJobServer(storage, json, activator,
                        BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration()
                                .andName("jobgate-bench-inflight")
                                .andBackgroundJobServerWorkerPolicy(new DefaultBackgroundJobServerWorkerPolicy(workers,
                                        virtual ? BackgroundJobServerThreadType.VirtualThreads : BackgroundJobServerThreadType.PlatformThreads))
                                .andPollInterval(Duration.ofSeconds(5))
                                .andCarbonAwareJobProcessingConfiguration(
                                        CarbonAwareJobProcessingConfiguration.usingDisabledCarbonAwareJobProcessingConfiguration()));
                server.start();
                if (warmUp > 0) {
                    get(args[4] + "/latency?ms=" + args[9]);
                    long warmStart = System.nanoTime();
                    PeerDatabase.enqueue(warmUp, 16, i -> scheduler.enqueue(() -> JobRunrSlowCallsPeer.call(url)));
                    while (DONE.get() < warmUp || storage.countJobs(StateName.SUCCEEDED) < warmUp) {
                        if (System.nanoTime() - warmStart > timeoutNanos) {
                            throw new IllegalStateException("JobRunr's warm-up: " + DONE.get() + " of " + warmUp + " done before the timeout");
                        }
                        Thread.sleep(50);
                    }
                    get(args[4] + "/latency?ms=" + args[10]);
                    get(args[4] + "/reset");
                }
                System.out.println("WARMED-UP"); // the bench reads PostgreSQL's CPU from here on
                System.out.flush();
                long cpuAtStart = java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.OperatingSystemMXBean.class)
                        .getProcessCpuTime() / 1_000_000;
                long start = System.nanoTime();
                double enqueueSeconds = PeerDatabase.enqueue(jobs, 16, i -> scheduler.enqueue(() -> JobRunrSlowCallsPeer.call(url)));
                try {
                    while (DONE.get() < warmUp + jobs || storage.countJobs(StateName.SUCCEEDED) < warmUp + jobs) {
                        if (System.nanoTime() - start > timeoutNanos) {
                            throw new IllegalStateException("JobRunr: " + DONE.get() + " of " + jobs + " done before the timeout");
                        }
                        Thread.sleep(50);
                    }
                } finally {
                    server.stop();
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                long cpuMillis = java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.OperatingSystemMXBean.class)
                        .getProcessCpuTime() / 1_000_000 - cpuAtStart;
                System.out.printf("RESULT name=JobRunr-%s%s threads-type=%s seconds=%.3f enqueue-seconds=%.3f failed-calls=%d "
                                + "max-threads=%d max-rss-mib=%d cpu-ms=%d%n", PeerDatabase.version(JobRunr.class),
                        PROVIDER_LIMIT == null ? "" : ",provider-limit-" + Integer.getInteger("peer.max-calls"), virtual ? "virtual" : "platform",
                        seconds, enqueueSeconds, FAILED.get(), sampler.maxThreads, sampler.maxRssKib / 1024, cpuMillis);
            } finally {
                JobRunr.destroy();
                storage.close();
            }
        } finally {
            sampler.interrupt();
        }
        System.exit(0);
    }

    /** This JVM's threads and resident set, every 200 ms, from /proc (Linux). */
    private static final class Sampler extends Thread {
        volatile int maxThreads;
        volatile long maxRssKib;

        Sampler() {
            super("peer-sampler");
            setDaemon(true);
        }

        @Override
        public void run() {
            while (!isInterrupted()) {
                try {
                    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                        if (line.startsWith("VmRSS:")) {
                            maxRssKib = Math.max(maxRssKib, Long.parseLong(line.replaceAll("\\D", "")));
                        } else if (line.startsWith("Threads:")) {
                            maxThreads = Math.max(maxThreads, Integer.parseInt(line.replaceAll("\\D", "")));
                        }
                    }
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    return; // no /proc: no figures
                }
            }
        }
    }
}
