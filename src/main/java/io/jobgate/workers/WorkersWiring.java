package io.jobgate.workers;

import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.infra.ObjectUrls;
import io.jobgate.infra.Settings;
import io.jobgate.ops.Meters;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The wiring of workers: the pull members' tasks, their adapter (bean {@code pullAdapter}) and the submits it holds
 * until their worker's end, how long a lease lasts, the
 * workers seen, what operators see of them, and the removal of stored outputs nothing can read any more.
 */
public final class WorkersWiring {

    /** A worker counts in {@code jobgate_pull_workers} while its last call is this recent. */
    static final Duration ACTIVE_WITHIN = Duration.ofMinutes(1);

    /** The provider entry after which a pull member none of whose workers was seen counts as down. */
    public static final String WORKER_ABSENT_SECONDS = "worker-absent-seconds";

    private WorkersWiring() {
    }

    /** @param leaseFor how long a lease lasts without a heartbeat ({@code jobgate.workers.lease-seconds}) */
    public record Workers(WorkerTasks tasks, PullAdapter adapter, TaskObjects objects, Duration leaseFor, WorkersSeen seen,
                          WorkersView view, HeldSubmits held) {
    }

    public static Workers bind(CamelContext context, Settings settings, JdbcTemplate jdbc,
                               org.springframework.transaction.support.TransactionTemplate transactions, Clock clock, S3Client s3,
                               ObjectUrls urls, String bucket, java.util.function.Function<String, Duration> absentAfter) {
        WorkerTasks tasks = new WorkerTasks(jdbc, transactions, clock);
        TaskObjects objects = new TaskObjects(s3, urls, bucket, clock);
        WorkersSeen seen = new WorkersSeen(jdbc, clock);
        HeldSubmits held = new HeldSubmits();
        PullAdapter adapter = new PullAdapter(tasks, objects, seen, held, absentAfter);
        context.getRegistry().bind("workerTasks", tasks);
        context.getRegistry().bind("pullAdapter", adapter);
        context.getRegistry().bind("workersSeen", seen);
        context.getRegistry().bind("workerOutputRetention", new WorkerOutputRetention(jdbc, clock, s3, bucket,
                settings.intValue("jobgate.retention.batch", 1, 100_000)));
        return new Workers(tasks, adapter, objects, Duration.ofSeconds(settings.intValue("jobgate.workers.lease-seconds", 5, 3600)),
                seen, new WorkersView(jdbc, clock), held);
    }

    /**
     * The pull members' series (docs/operating.md, "Metrics and dashboards"): tasks leased, ended and calls refused,
     * counted where they happen; per member its open tasks and its workers seen within a minute, read at each metrics
     * refresh (none without pull members).
     *
     * @param members the pull members' names
     */
    public static void meter(Workers workers, Meters meters, Clock clock, List<String> members) {
        workers.tasks().onEvents(new WorkerTasks.Listener() {
            @Override
            public void leased(String provider, int tasks) {
                meters.pullLeases(provider, tasks);
            }

            @Override
            public void ended(String provider, WorkerTasks.Status status) {
                meters.pullTaskEnded(provider, status.wire());
            }

            @Override
            public void refused(String provider, WorkerTasks.Refusal refusal) {
                meters.pullCallRefused(provider, refusal.code());
            }
        });
        if (members.isEmpty()) {
            return;
        }
        Map<String, String> gauges = new LinkedHashMap<>();
        gauges.put("jobgate_pull_tasks", "a pull member's open tasks: waiting, leased, or leased under a lease that ran out (lease_expired)");
        gauges.put("jobgate_pull_workers", "a pull member's workers whose last call came within the last minute");
        meters.gauges(gauges, 0, () -> {
            Map<String, Map<Map<String, String>, Double>> series = new HashMap<>();
            Map<Map<String, String>, Double> open = new HashMap<>();
            workers.view().openTasks(members, clock.instant()).forEach((provider, tasks) -> {
                open.put(Map.of("provider", provider, "status", "waiting"), (double) tasks.waiting());
                open.put(Map.of("provider", provider, "status", "leased"), (double) tasks.leased());
                open.put(Map.of("provider", provider, "status", "lease_expired"), (double) tasks.leasedPastExpiry());
            });
            series.put("jobgate_pull_tasks", open);
            Map<Map<String, String>, Double> active = new HashMap<>();
            workers.view().workersSeenWithin(members, ACTIVE_WITHIN).forEach((provider, n) ->
                    active.put(Map.of("provider", provider), n.doubleValue()));
            series.put("jobgate_pull_workers", active);
            return series;
        });
    }
}
