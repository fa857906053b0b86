package io.jobgate.console;

import io.jobgate.evaluation.Evaluations;
import io.jobgate.job.JobStore;
import io.jobgate.job.Redrives;
import io.jobgate.notify.WebhookDeliveries;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/** Binds the console's beans: the pages ({@code consolePages}) and the admin API's search and story ({@code jobsAdmin}). */
public final class ConsoleWiring {

    private ConsoleWiring() {
    }

    public static void bind(CamelContext context, JdbcTemplate jdbc, JobStore jobs, Redrives redrives, WebhookDeliveries deliveries,
                            Evaluations evaluations, S3Client s3, String bucket) {
        JobSearch search = new JobSearch(jdbc);
        JobStory stories = new JobStory(jdbc, jobs, redrives, deliveries, evaluations, s3, bucket);
        context.getRegistry().bind("jobsAdmin", new JobsAdmin(search, stories));
        context.getRegistry().bind("consolePages", new ConsolePages(search, stories, jobs, s3, bucket));
    }
}
