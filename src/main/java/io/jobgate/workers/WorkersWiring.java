package io.jobgate.workers;

import java.time.Clock;
import java.time.Duration;

import io.jobgate.infra.Settings;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/** The wiring of workers: the pull members' tasks, their adapter (bean {@code pullAdapter}), how long a lease lasts. */
public final class WorkersWiring {

    private WorkersWiring() {
    }

    /** @param leaseFor how long a lease lasts without a heartbeat ({@code jobgate.workers.lease-seconds}) */
    public record Workers(WorkerTasks tasks, PullAdapter adapter, Duration leaseFor) {
    }

    public static Workers bind(CamelContext context, Settings settings, JdbcTemplate jdbc, Clock clock, S3Client s3, String bucket) {
        WorkerTasks tasks = new WorkerTasks(jdbc, clock);
        PullAdapter adapter = new PullAdapter(tasks, s3, bucket);
        context.getRegistry().bind("workerTasks", tasks);
        context.getRegistry().bind("pullAdapter", adapter);
        return new Workers(tasks, adapter, Duration.ofSeconds(settings.intValue("jobgate.workers.lease-seconds", 5, 3600)));
    }
}
