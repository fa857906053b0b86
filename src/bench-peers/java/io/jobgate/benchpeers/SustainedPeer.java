package io.jobgate.benchpeers;

import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

import com.github.kagkarlsson.scheduler.Scheduler;
import com.github.kagkarlsson.scheduler.SchedulerName;
import com.github.kagkarlsson.scheduler.task.helper.OneTimeTask;
import com.github.kagkarlsson.scheduler.task.helper.Tasks;
import com.sun.management.OperatingSystemMXBean;
import org.jobrunr.configuration.JobRunr;
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
 * {@code bench --only sustained --peers}' runner, in a JVM of its own: JobRunr or db-scheduler given
 * the same open-loop arrivals as the gateway (each enqueue at its planned time from a client of its
 * own, whatever the answers), the same warm-up and steps, each job one POST of the gateway's image
 * request to the same stand-in, {@code workers} workers. Configured as a team wanting short waits
 * would: JobRunr's poll interval at the smallest its SQL storage allows (5 s; virtual threads on Java
 * 21+), db-scheduler polling every 100 ms with immediate execution (a job scheduled for now is picked
 * up at once by the instance that scheduled it).
 *
 * <p>Prints {@code STEP-START i} and {@code STEP-END i} at each step's edges (the bench reads
 * PostgreSQL's CPU there), then, once every job is done, one line per step:
 * {@code STEP i rate=.. accepted=.. failed=.. finished=.. backlog=.. p50=.. p95=.. p99=.. enqueue-p99=.. cpu-ms=.. seconds=..}
 * (latencies in ms, from the planned enqueue to the job's end; a job never done counts as the slowest).
 *
 * <p>Arguments: peer (jobrunr|db-scheduler) jdbc-url user password schema stand-in-url rates step-seconds
 * warm-up-seconds workers.
 */
public final class SustainedPeer {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
    /** Job index → when it ended (epoch ms). */
    private static final Map<Integer, Long> DONE = new ConcurrentHashMap<>();
    private static String url;

    /** The job: one call to the stand-in, its answer read; its end time kept. */
    public static void call(int index) throws Exception {
        HttpResponse<String> answer = HTTP.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"gpt-image-1\", \"prompt\": \"bench\", "
                        + "\"size\": \"1024x1536\", \"quality\": \"medium\", \"output_format\": \"png\", \"n\": 1}"))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (answer.statusCode() != 200 || !answer.body().contains("b64_json")) {
            throw new IllegalStateException("stand-in answered " + answer.statusCode()); // the scheduler retries it
        }
        DONE.putIfAbsent(index, System.currentTimeMillis());
    }

    /** How a peer enqueues job {@code index} now; stop ends it. */
    private interface Peer extends AutoCloseable {
        void enqueue(int index) throws Exception;
    }

    /** One step's arrivals. */
    private static final class Step {
        final int rate;
        final int first;
        int count;
        long startMillis;
        long endMillis;
        long backlog;
        long cpuMillis;
        final AtomicLong failed = new AtomicLong();
        final Map<Integer, Long> planned = new ConcurrentHashMap<>();
        final List<Long> enqueueMillis = java.util.Collections.synchronizedList(new ArrayList<>());

        Step(int rate, int first) {
            this.rate = rate;
            this.first = first;
        }
    }

    public static void main(String[] args) throws Exception {
        String name = args[0];
        Map<String, String> settings = new HashMap<>();
        settings.put("jdbc-url", args[1]);
        settings.put("user", args[2]);
        settings.put("password", args[3]);
        String schema = args[4];
        url = args[5] + "/v1/images/generations";
        int[] rates = Arrays.stream(args[6].split(",")).mapToInt(Integer::parseInt).toArray();
        int stepSeconds = Integer.parseInt(args[7]);
        int warmUpSeconds = Integer.parseInt(args[8]);
        int workers = Integer.parseInt(args[9]);
        OperatingSystemMXBean os = ManagementFactory.getPlatformMXBean(OperatingSystemMXBean.class);
        ExecutorService clients = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "peer-sender");
            t.setDaemon(true);
            return t;
        });
        try (PeerDatabase db = PeerDatabase.open(settings, schema, workers + 8);
             Peer peer = name.equals("jobrunr") ? jobRunr(db, workers) : dbScheduler(db, workers)) {
            System.out.println("NAME " + (name.equals("jobrunr") ? "JobRunr " + PeerDatabase.version(JobRunr.class)
                    : "db-scheduler " + PeerDatabase.version(Scheduler.class)));
            int next = 0;
            Step warm = new Step(Math.max(20, rates[0] / 2), next);
            next = offer(peer, clients, warm, warmUpSeconds);
            awaitDone(next, Duration.ofSeconds(120));
            List<Step> steps = new ArrayList<>();
            for (int i = 0; i < rates.length; i++) {
                Step step = new Step(rates[i], next);
                steps.add(step);
                System.out.println("STEP-START " + i);
                long cpu = os.getProcessCpuTime();
                next = offer(peer, clients, step, stepSeconds);
                step.cpuMillis = (os.getProcessCpuTime() - cpu) / 1_000_000;
                System.out.println("STEP-END " + i);
                step.backlog = Math.max(0, next - DONE.size()); // enqueued (the warm-up's too), not yet done
                if (step.backlog > 10L * step.rate) {
                    break; // as the gateway's steps: the backlog grew past 10 s of arrivals
                }
            }
            awaitDone(next, Duration.ofSeconds(600));
            for (int i = 0; i < steps.size(); i++) {
                print(i, steps.get(i));
            }
        }
        System.exit(0);
    }

    /** Sends {@code step.rate} jobs/s for {@code seconds}, each at its planned time; answers the next index. */
    private static int offer(Peer peer, ExecutorService clients, Step step, int seconds) throws InterruptedException {
        step.startMillis = System.currentTimeMillis();
        step.count = step.rate * seconds;
        for (int k = 0; k < step.count; k++) {
            long planned = step.startMillis + Math.round(k * 1000.0 / step.rate);
            long wait = planned - System.currentTimeMillis();
            if (wait > 0) {
                Thread.sleep(wait); // the arrivals' clock
            }
            int index = step.first + k;
            step.planned.put(index, planned);
            clients.execute(() -> {
                try {
                    peer.enqueue(index);
                    step.enqueueMillis.add(System.currentTimeMillis() - planned);
                } catch (Exception e) {
                    step.failed.incrementAndGet();
                }
            });
        }
        step.endMillis = step.startMillis + seconds * 1000L;
        long rest = step.endMillis - System.currentTimeMillis();
        if (rest > 0) {
            Thread.sleep(rest);
        }
        return step.first + step.count;
    }

    private static void awaitDone(int jobs, Duration atMost) throws InterruptedException {
        long until = System.nanoTime() + atMost.toNanos();
        while (DONE.size() < jobs && System.nanoTime() < until) {
            Thread.sleep(50); // the scheduler's workers: nothing to wait on but their count
        }
    }

    private static void print(int i, Step step) {
        List<Long> latencies = new ArrayList<>();
        long never = 0;
        long finished = DONE.values().stream().filter(t -> t >= step.startMillis && t < step.endMillis).count();
        for (Map.Entry<Integer, Long> e : step.planned.entrySet()) {
            Long done = DONE.get(e.getKey());
            if (done == null) {
                never++;
            } else {
                latencies.add(done - e.getValue());
            }
        }
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        long[] enqueue;
        synchronized (step.enqueueMillis) {
            enqueue = step.enqueueMillis.stream().mapToLong(Long::longValue).sorted().toArray();
        }
        System.out.printf("STEP %d rate=%d accepted=%d failed=%d finished=%d backlog=%d p50=%s p95=%s p99=%s enqueue-p99=%s cpu-ms=%d seconds=%.3f%n",
                i, step.rate, enqueue.length, step.failed.get(), finished, step.backlog, quantile(sorted, never, 0.50),
                quantile(sorted, never, 0.95), quantile(sorted, never, 0.99), quantile(enqueue, 0, 0.99), step.cpuMillis,
                (step.endMillis - step.startMillis) / 1000.0);
    }

    /** The {@code q} quantile in ms with {@code never} jobs counted as slowest ("never" when it is one of them). */
    private static String quantile(long[] sorted, long never, double q) {
        long n = sorted.length + never;
        if (n == 0) {
            return "n/a";
        }
        long index = (long) Math.ceil(q * n) - 1;
        return index >= sorted.length ? "never" : Long.toString(sorted[(int) Math.max(0, index)]);
    }

    private static Peer jobRunr(PeerDatabase db, int workers) {
        PostgresStorageProvider storage = new PostgresStorageProvider(db.dataSource, DatabaseOptions.CREATE);
        JacksonJsonMapper json = new JacksonJsonMapper();
        JobScheduler scheduler = JobRunr.configure().useJsonMapper(json).useStorageProvider(storage).initialize().getJobScheduler();
        boolean virtual = Runtime.version().feature() >= 21;
        BackgroundJobServer server = new BackgroundJobServer(storage, json, new JobActivator() {
            @Override
            public <T> T activateJob(Class<T> type) {
                return null; // static methods only
            }
        }, BackgroundJobServerConfiguration.usingStandardBackgroundJobServerConfiguration().andName("jobgate-bench-sustained")
                .andBackgroundJobServerWorkerPolicy(new DefaultBackgroundJobServerWorkerPolicy(workers,
                        virtual ? BackgroundJobServerThreadType.VirtualThreads : BackgroundJobServerThreadType.PlatformThreads))
                .andPollInterval(Duration.ofSeconds(5)) // the smallest its SQL storage accepts
                .andCarbonAwareJobProcessingConfiguration(CarbonAwareJobProcessingConfiguration.usingDisabledCarbonAwareJobProcessingConfiguration()));
        server.start();
        return new Peer() {
            @Override
            public void enqueue(int index) {
                scheduler.enqueue(() -> SustainedPeer.call(index));
            }

            @Override
            public void close() {
                server.stop();
                JobRunr.destroy();
                storage.close();
            }
        };
    }

    private static Peer dbScheduler(PeerDatabase db, int workers) throws Exception {
        try (Connection c = db.dataSource.getConnection(); Statement s = c.createStatement()) {
            s.execute(DbSchedulerPeer.DDL);
        }
        OneTimeTask<Integer> task = Tasks.oneTime("jobgate-peer-call", Integer.class)
                .execute((instance, context) -> {
                    try {
                        call(instance.getData());
                    } catch (Exception e) {
                        throw new IllegalStateException(e); // db-scheduler's failure handler retries it
                    }
                });
        Scheduler scheduler = Scheduler.create(db.dataSource, task).threads(workers)
                .pollingInterval(Duration.ofMillis(100)).enableImmediateExecution()
                .schedulerName(new SchedulerName.Fixed("jobgate-bench-sustained"))
                .shutdownMaxWait(Duration.ofSeconds(10)).build();
        scheduler.start();
        return new Peer() {
            @Override
            public void enqueue(int index) {
                scheduler.schedule(task.instance("job-" + index, index), Instant.now());
            }

            @Override
            public void close() {
                scheduler.stop();
            }
        };
    }
}
