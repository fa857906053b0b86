package io.jobgate.api;

import java.time.Clock;
import java.time.Duration;
import java.util.List;

import io.jobgate.adapter.AdapterCaller;
import io.jobgate.admission.AdmissionService;
import io.jobgate.canary.CanaryWiring;
import io.jobgate.common.SettingsReader;
import io.jobgate.evaluation.Evaluations;
import io.jobgate.job.JobWiring;
import io.jobgate.job.Redrives;
import io.jobgate.notify.NotifyWiring;
import io.jobgate.ops.Meters;
import io.jobgate.preset.PresetDefaults;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.summary.JobSummaries;
import io.jobgate.tenant.TenantDirectory;
import io.jobgate.upload.UploadStore;
import io.jobgate.usage.UsageReport;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/** The wiring of api, the doors: the HTTP API (jobs, uploads, usage, tenants' webhooks, providers' webhooks, admin) and the JMS intake. */
public final class ApiWiring {

    private ApiWiring() {
    }

    /** @param servesApi whether this instance runs the API role (its HTTP doors listen here) */
    public static void bind(CamelContext context, SettingsReader settings, boolean servesApi, JdbcTemplate jdbc,
                            TransactionTemplate transactions, S3Client s3, String bucket, Clock clock, TenantDirectory tenants,
                            PresetDefaults presetDefaults, ProviderCatalog providers, UploadStore uploads, JobWiring.Jobs jobs,
                            AdmissionService admission, Meters meters, AdapterCaller adapters, Reconciler reconciler,
                            CanaryWiring.Canary canary, Evaluations evaluations, NotifyWiring.Webhooks webhooks,
                            io.jobgate.pool.PoolPlacer pools, io.jobgate.pool.PoolViews poolViews,
                            io.jobgate.workers.WorkersWiring.Workers workers) throws Exception {
        Registry registry = context.getRegistry();
        // Where no route answers (starting, stopping, unknown paths): problem documents, never a bare 404.
        HttpEdges.install(context);
        // /observe beyond health (metrics, Jolokia): loopback or the admin key.
        ManagementAccess.install(context, settings.optional("jobgate.admin.api-key-sha256").orElse(null),
                settings.bool("jobgate.management.allow-loopback"));
        // /console: the admin key, from this machine only while it is the shipped demo key (ConsoleAccess).
        ConsoleAccess.install(context, settings.optional("jobgate.admin.api-key-sha256").orElse(null),
                settings.bool("jobgate.management.allow-loopback"));
        registry.bind("tenantAuth", new TenantAuth(tenants));
        registry.bind("problemResponder", new ProblemResponder(meters));
        registry.bind("jobsApi", new JobsApi(admission, jobs.store(), jobs.finalizer(), s3, bucket,
                new JobSummaries(jdbc, jobs.store())));
        // Tenants' webhooks (docs/webhooks.md): their endpoints and the deliveries to them.
        registry.bind("tenantWebhooksApi", new TenantWebhooksApi(webhooks.endpoints(), webhooks.deliveries(), jobs.store(),
                Duration.ofHours(settings.intValue("jobgate.tenant-webhooks.secret-overlap-hours", 0, 24 * 7))));
        // GET /v1/jobs/{id}?wait=N: held in front of the route, no thread while it waits (WaitingReads says why).
        WaitingReads waitingReads = new WaitingReads(context, tenants, jobs.store(),
                settings.intValue("jobgate.api.max-waiting-reads", 0, 1_000_000),
                settings.millis("jobgate.api.waiting-reads-period-ms", 50, 10_000), meters::waitingReadEnded);
        meters.waitingReads(waitingReads::waiting);
        registry.bind("waitingReads", waitingReads);
        // A worker's lease with wait_seconds: a long poll, held as those reads are (LeaseWaits).
        LeaseWaits leaseWaits = new LeaseWaits(context, providers, workers.tasks(), workers.seen(),
                settings.intValue("jobgate.workers.max-waiting-leases", 0, 1_000_000),
                settings.millis("jobgate.workers.lease-waits-period-ms", 50, 60_000), meters::leaseWaitEnded);
        meters.leaseWaits(leaseWaits::waiting);
        registry.bind("leaseWaits", leaseWaits);
        if (servesApi) {
            HeldRequests.install(context, List.of(waitingReads, leaseWaits));
            context.addService(waitingReads, true, true);
            context.addService(leaseWaits, true, true);
            workers.adapter().onTaskWaiting(member -> leaseWaits.tasksWaiting(member, 1));
            // A task written here goes, as it is written, to a poll waiting here (LeaseWaits.take).
            workers.adapter().handTo(leaseWaits, workers.leaseFor(),
                    member -> providers.find(member).map(io.jobgate.provider.Provider::maxConcurrency).orElse(0));
        }
        registry.bind("workersApi", new WorkersApi(providers, workers.tasks(), workers.objects(), reconciler, workers.leaseFor(),
                servesApi ? leaseWaits : null, workers.seen(), workers.held()));
        registry.bind("uploadsApi", new UploadsApi(uploads, clock, settings.longValue("jobgate.uploads.max-bytes", 1, 1L << 31),
                s3, bucket));
        registry.bind("usageApi", new UsageApi(new UsageReport(jdbc), clock));
        registry.bind("webhooksApi", new WebhooksApi(providers, adapters, reconciler, jdbc, clock,
                settings.seconds("jobgate.webhooks.tolerance-seconds", 1, 86_400), settings.bool("jobgate.demo")));
        registry.bind("poolAdmin", new PoolAdmin(pools.pools(), pools.health(), poolViews));
        registry.bind("canaryAdmin", new CanaryAdmin(canary.lifecycle(), canary.views(), evaluations, clock));
        registry.bind("adminApi", new AdminApi(settings.optional("jobgate.admin.api-key-sha256").orElse(null), reconciler, jobs.store(),
                new Redrives(jdbc, transactions, jobs.transitions())).withEvaluations(evaluations));
        registry.bind("presetsAdmin", new PresetsAdmin(presetDefaults));
        registry.bind("adminUsage", new AdminUsage(new UsageReport(jdbc), providers, pools.pools(), clock));
        registry.bind("jmsIntake", new JmsIntake(tenants, admission, meters));
    }
}
