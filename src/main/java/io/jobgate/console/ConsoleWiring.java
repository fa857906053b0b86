package io.jobgate.console;

import io.jobgate.job.JobSearch;
import java.time.Clock;
import java.util.Map;
import java.util.function.Supplier;

import io.jobgate.canary.CanaryLifecycle;
import io.jobgate.canary.CanaryViews;
import io.jobgate.evaluation.Evaluations;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStore;
import io.jobgate.job.Redrives;
import io.jobgate.notify.WebhookDeliveries;
import io.jobgate.pool.PoolViews;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.reconcile.Reconciler;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Binds the console's beans: its pages ({@code consolePages}), its actions ({@code consoleActions}) and the admin API's
 * search and story ({@code jobsAdmin}).
 */
public final class ConsoleWiring {

    private ConsoleWiring() {
    }

    /** What the console reads and acts through: the same stores and rules as the admin API's. */
    public record Parts(JdbcTemplate jdbc, JobStore jobs, JobFinalizer finalizer, Redrives redrives, Reconciler reconciler,
                        WebhookDeliveries deliveries, Evaluations evaluations, CanaryLifecycle canaries, CanaryViews canaryViews,
                        PoolViews pools, ProviderCatalog providers, Supplier<Map<String, Long>> refusals, S3Client s3, String bucket,
                        Clock clock) {
    }

    public static void bind(CamelContext context, Parts p) {
        JobSearch search = new JobSearch(p.jdbc());
        OperatorActions actions = new OperatorActions(p.jdbc(), p.jobs(), p.finalizer(), p.redrives(), p.reconciler(), p.deliveries(),
                p.canaries());
        JobStory stories = new JobStory(p.jdbc(), p.jobs(), p.redrives(), p.deliveries(), p.evaluations(), actions, p.s3(), p.bucket());
        Failures failures = new Failures(p.jdbc(), actions);
        Overview overview = new Overview(p.jdbc(), p.providers(), p.canaryViews(), p.pools(), p.refusals(), p.clock());
        context.getRegistry().bind("jobsAdmin", new JobsAdmin(search, stories));
        context.getRegistry().bind("consolePages", new ConsolePages(search, stories, p.jobs(), overview, failures, actions, p.s3(),
                p.bucket()));
        context.getRegistry().bind("consoleActions", new ConsoleActions(actions, failures));
    }
}
