package io.jobgate.workers;

import java.time.Clock;
import java.time.Duration;

import io.jobgate.infra.ObjectUrls;
import io.jobgate.infra.Settings;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/** The wiring of workers: the pull members' tasks, their adapter (bean {@code pullAdapter}), how long a lease lasts. */
public final class WorkersWiring {

    private WorkersWiring() {
    }

    /** @param leaseFor how long a lease lasts without a heartbeat ({@code jobgate.workers.lease-seconds}) */
    public record Workers(WorkerTasks tasks, PullAdapter adapter, TaskObjects objects, Duration leaseFor) {
    }

    public static Workers bind(CamelContext context, Settings settings, JdbcTemplate jdbc,
                               org.springframework.transaction.support.TransactionTemplate transactions, Clock clock, S3Client s3,
                               ObjectUrls urls, String bucket) {
        WorkerTasks tasks = new WorkerTasks(jdbc, transactions, clock);
        TaskObjects objects = new TaskObjects(s3, urls, bucket, clock);
        PullAdapter adapter = new PullAdapter(tasks, objects);
        context.getRegistry().bind("workerTasks", tasks);
        context.getRegistry().bind("pullAdapter", adapter);
        return new Workers(tasks, adapter, objects, Duration.ofSeconds(settings.intValue("jobgate.workers.lease-seconds", 5, 3600)));
    }
}
