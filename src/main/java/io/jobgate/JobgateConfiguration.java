package io.jobgate;

import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import io.jobgate.adapter.AdapterHttpPool;
import io.jobgate.adapter.AdapterWiring;
import io.jobgate.adapter.Backoff;
import io.jobgate.admission.AdmissionWiring;
import io.jobgate.api.ApiWiring;
import io.jobgate.canary.CanaryWiring;
import io.jobgate.common.Json;
import io.jobgate.evaluation.EvaluationWiring;
import io.jobgate.evaluation.Evaluations;
import io.jobgate.infra.InfraWiring;
import io.jobgate.infra.ManagedResource;
import io.jobgate.infra.Roles;
import io.jobgate.infra.Settings;
import io.jobgate.infra.StartupTimes;
import io.jobgate.job.JobWiring;
import io.jobgate.notify.NotifyWiring;
import io.jobgate.notify.WebhookEndpoints;
import io.jobgate.ops.LateMBeans;
import io.jobgate.ops.Meters;
import io.jobgate.ops.OpsWiring;
import io.jobgate.output.OutputStore;
import io.jobgate.output.OutputWiring;
import io.jobgate.preset.PresetWiring;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.pool.PoolPlacer;
import io.jobgate.pool.PoolViews;
import io.jobgate.pool.PoolWiring;
import io.jobgate.provider.ProviderWiring;
import io.jobgate.reconcile.ReconcileWiring;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.relay.OutboxRelay;
import io.jobgate.relay.RelayWiring;
import io.jobgate.summary.SummaryWiring;
import io.jobgate.tenant.TenantDirectory;
import io.jobgate.tenant.TenantWiring;
import io.jobgate.upload.UploadStore;
import io.jobgate.upload.UploadWiring;
import io.jobgate.usage.UsageWiring;
import io.jobgate.worker.WorkerSettings;
import io.jobgate.worker.WorkerWiring;
import org.apache.camel.CamelConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.Configuration;
import org.apache.camel.ProducerTemplate;

/**
 * Wires the gateway: the three parts (PostgreSQL, Artemis, S3 API), each embedded unless a URL points at an
 * external server, then the domain beans the routes call by name. Each package binds its own beans, under the
 * names the routes call them by, in a wiring class of its own ({@code InfraWiring}, {@code JobWiring}, ...,
 * beside the beans, using only what its package may use); this runs them in the order they depend on each
 * other, and holds only the joins between two packages that neither may make.
 *
 * <p>Embedded servers and pools are Camel services, so the context stops them after the routes, in reverse
 * order of their adding: moving a wiring that adds services (infra, the adapters' pool, relay, admission,
 * worker, api) moves where they stop.
 */
@Configuration
public class JobgateConfiguration implements CamelConfiguration {

    @Override
    public void configure(CamelContext context) throws Exception {
        // Where the start's time goes, logged once the gateway is ready.
        StartupTimes startupTimes = StartupTimes.install(context);
        // Camel's MBeans described for JMX once the gateway is ready, not on the start's critical path.
        LateMBeans.install(context);
        Settings settings = new Settings(context);
        InfraWiring.Instance instance = InfraWiring.instance(context, settings);
        Roles roles = instance.roles();
        Clock clock = instance.clock();

        // --- The parts: PostgreSQL, Artemis, S3, side parts (the tenants first: the embedded broker
        // logs in their JMS producers) ----------------------------------------------------------
        TenantDirectory tenants = TenantWiring.bind(context, settings, roles.runs(Roles.Role.API));
        InfraWiring.Stores stores = InfraWiring.stores(context, settings, instance.dataDir(), startupTimes,
                producerPasswordDigests(tenants), producerTenants(tenants));
        OpsWiring.healthChecks(context, stores.dataSource(), stores.parts().jms(), stores.s3(), stores.bucket());

        // --- What jobs are made of: tenants, presets, providers, adapters, uploads -------------------
        PresetWiring.Presets presets = PresetWiring.bind(context, instance.configDir(), stores.jdbc(), stores.transactions(), clock);
        // Tenants and presets written when the context starts, once the database is up and migrated (it starts
        // meanwhile); here, as neither tenant nor preset may use infra's services.
        context.addService(ManagedResource.startedAndStoppedBy("tenants-and-presets", () -> {
            tenants.syncTo(stores.jdbc());
            presets.catalog().verifyImmutable(stores.jdbc());
        }, () -> { }), true, true);
        ProviderCatalog providers = ProviderWiring.bind(context, settings, presets.catalog());
        AdapterWiring.Routes adapterRoutes = AdapterWiring.routes(context, settings, providers);
        UploadStore uploads = UploadWiring.bind(context, settings, stores.jdbc(), stores.transactions(), clock, stores.s3(),
                stores.bucket());
        // Each provider's calls allowed at once, as its adapter has it (so read after the adapters' sources):
        // its slot rows and the relay's rounds, which know no provider.
        Map<String, Integer> callLimits = new LinkedHashMap<>();
        providers.all().forEach(p -> callLimits.put(p.name(), p.maxConcurrency()));

        // --- A job's life: the state machine and its one finalize, the provider gates ------------------
        JobWiring.Jobs jobs = JobWiring.bind(context, settings, stores.jdbc(), stores.transactions(), clock, callLimits);
        // The pools (config/pools/): checked against the providers and presets here, placed by their gates.
        PoolPlacer pools = PoolWiring.bind(context, settings, stores.jdbc(), providers, presets.catalog(), jobs.gates(), clock, tenants);

        // --- Metrics: jobgate's series beside Camel's, and the providers' health -------------------------
        // Health shows each provider: its gate, and whether its route runs and which classes it was left out for;
        // its canary once canaries are wired (below). Joined here: ops may use neither provider nor canary.
        var canaryNotes = new AtomicReference<Supplier<Map<String, String>>>(Map::of);
        Meters meters = OpsWiring.metrics(context, stores.jdbc(), stores.dataSource(), clock,
                providers.all().stream().map(Provider::name).toList(),
                () -> providerNotes(providers, providers.leftOut(presets.catalog().all()), canaryNotes.get().get()), jobs.transitions());
        PoolViews poolViews = PoolWiring.meter(pools, meters, stores.jdbc(), clock);
        AdapterWiring.Calls adapters = AdapterWiring.calls(context, settings, stores.jdbc(), clock, providers, jobs.gates());
        adapters.cancel().onAnswer(meters::providerCancel); // adapter may not use ops

        // --- Admission (group commit), the outbox relay it wakes, tenants' webhooks ----------------------
        NotifyWiring.Webhooks webhooks = NotifyWiring.bind(context, settings, stores.jdbc(), stores.dataSource(), stores.parts().jms(),
                clock, jobs.store(), meters);
        RelayWiring.Relay relay = RelayWiring.bind(context, settings, roles, stores, clock, jobs.transitions(), jobs.finalizer(),
                AdapterHttpPool.callsAllowed(providers.all()), callLimits, webhooks.fanOut());
        jobs.gates().onDispatchDue(relay.timer()::wakeAt); // a no-op unless the relay (and so its timer) runs here; job may not use relay
        pools.health().onDispatchDue(relay.timer()::wakeAt); // jobs waiting on a probe, due at its result; pool may not use relay
        // A job may name a tenant's enabled webhook endpoint (webhook_url): admission may not use notify.
        AdmissionWiring.Admission admission = AdmissionWiring.bind(context, settings, stores, clock, presets.catalog(), providers, uploads,
                jobs.store(), relay, (tenant, url) -> webhooks.endpoints().findByUrl(tenant, url)
                        .filter(WebhookEndpoints.Endpoint::enabled).map(WebhookEndpoints.Endpoint::id), pools);
        admission.writer().onAdmitted(admitted -> { // admission may not use ops
            meters.ledger(admitted.job().tenantId(), "debit", admitted.job().costMicros());
            meters.metered(admitted.job().tenantId(), admitted.job().kind(), admitted.usage().unit(), admitted.usage().units(),
                    admitted.job().costMicros());
        });
        // The tenant's rules of where its jobs run hold for the summary ordered after its transcript (summary may not use tenant).
        SummaryWiring.bind(context, settings, stores.jdbc(), clock, presets.catalog(), jobs.store(), admission, stores.s3(),
                stores.bucket(), (tenant, provider) -> tenants.byId(tenant).map(t -> t.whyNot(provider)).orElse(null));

        // --- Canary revisions, outputs, reconciliation, evaluation ----------------------------------------
        CanaryWiring.Canary canary = CanaryWiring.bind(context, stores.jdbc(), stores.transactions(), clock, providers,
                adapterRoutes.routes()::candidateSource, jobs.transitions(), jobs.finalizer());
        // Canary uses neither ops nor relay: its stops are counted, and its events published on the relay's topic, from here.
        canary.lifecycle().onStop((provider, revision, gate, reason, requeued) -> meters.canaryStopped(provider, gate));
        ProducerTemplate canaryEvents = context.createProducerTemplate();
        canary.lifecycle().publishWith(event -> canaryEvents.sendBodyAndHeader("jms:topic:" + OutboxRelay.EVENTS_TOPIC,
                Json.write(event), "JobgateEvent", "canary"));
        // Read once for the outputs' sizes, and the one backoff the reconciler and the worker share.
        WorkerSettings workerSettings = WorkerSettings.from(settings);
        Backoff backoff = workerSettings.backoff();
        OutputStore outputs = OutputWiring.bind(context, stores.s3(), stores.bucket(), workerSettings.maxOutputBytes(),
                workerSettings.inMemoryOutputBytes(), presets.catalog());
        Reconciler reconciler = ReconcileWiring.bind(context, settings, stores.jdbc(), jobs, providers, presets.catalog(),
                adapters.caller(), outputs, backoff, canary.canaries());
        Evaluations evaluations = EvaluationWiring.bind(context, settings, stores.jdbc(), stores.s3(), stores.bucket(), clock);
        evaluations.onScored((provider, revision, held, score) -> meters.evaluated(provider, revision, score.correct(), score.total(),
                score.totalsCorrect())); // evaluation may not use ops
        canaryNotes.set(canary.views()::healthNotes);

        // --- Workers: leases, the worker's steps and their outcomes, the sweeper, the calls in flight -------
        WorkerWiring.bind(context, settings, roles, instance.dataDir(), stores, clock, workerSettings, backoff, providers,
                presets.catalog(), jobs, canary.canaries(), adapterRoutes, adapters, outputs, meters, relay, reconciler.firstCheck(),
                List.of(reconciler.owner(), relay.outbox().owner()), pools);

        // --- The doors: HTTP API, webhooks, admin, JMS intake ----------------------------------------
        UsageWiring.bind(context, stores.jdbc(), settings.intValue("jobgate.usage.rollup-batch", 1, 100_000));
        // External workers (docs/workers.md): the pull members' tasks; the protocol their workers speak is the API's.
        io.jobgate.workers.WorkersWiring.Workers workers = io.jobgate.workers.WorkersWiring.bind(context, settings, stores.jdbc(),
                stores.transactions(), clock, stores.s3(), stores.parts().urls(), stores.bucket(), workerAbsentAfter(providers)::get);
        ApiWiring.bind(context, settings, roles.runs(Roles.Role.API), stores.jdbc(), stores.transactions(), stores.s3(), stores.bucket(),
                clock, tenants, presets.defaults(), providers, uploads, jobs, admission.service(), meters, adapters.caller(), reconciler,
                canary, evaluations, webhooks, pools, poolViews, workers);
        // The operator console (docs/console.md) and the admin API's job search and story it shows.
        io.jobgate.console.ConsoleWiring.bind(context, new io.jobgate.console.ConsoleWiring.Parts(stores.jdbc(), jobs.store(),
                jobs.finalizer(), new io.jobgate.job.Redrives(stores.jdbc(), stores.transactions(), jobs.transitions()), reconciler,
                webhooks.deliveries(), evaluations, canary.lifecycle(), canary.views(), poolViews, providers, meters::refusalsByTenant,
                stores.s3(), stores.bucket(), clock));
        // What operators see of them: GET /v1/admin/workers and the jobgate_pull_* series.
        io.jobgate.workers.WorkersWiring.meter(workers, meters, clock,
                io.jobgate.api.WorkersAdmin.pullMembers(providers).stream().map(Provider::name).toList());
        context.getRegistry().bind("workersAdmin", new io.jobgate.api.WorkersAdmin(providers, workers.view(), pools.pools()));
        context.getRegistry().bind("startupTimes", startupTimes);
        startupTimes.wired();
    }

    /**
     * Per pull member that has one, its {@code worker-absent-seconds}; a value that is not a whole number of seconds
     * from 15 stops the start.
     */
    private static Map<String, java.time.Duration> workerAbsentAfter(ProviderCatalog providers) {
        Map<String, java.time.Duration> after = new java.util.HashMap<>();
        for (var provider : providers.all()) {
            String value = provider.settings().get(io.jobgate.workers.WorkersWiring.WORKER_ABSENT_SECONDS);
            if (value == null || value.isBlank()) {
                continue;
            }
            // A worker's calls are recorded at most every 5 s (WorkersSeen): a shorter absence would be seen where none is.
            if (!value.trim().matches("[1-9][0-9]{1,6}") || Long.parseLong(value.trim()) < 15) {
                throw new IllegalStateException("jobgate.provider." + provider.name() + "."
                        + io.jobgate.workers.WorkersWiring.WORKER_ABSENT_SECONDS + " is a whole number of seconds from 15, not '"
                        + value + "'");
            }
            after.put(provider.name(), java.time.Duration.ofSeconds(Long.parseLong(value.trim())));
        }
        return after;
    }

        /** The tenants' JMS producers an embedded broker logs in: user → SHA-256 of the password (those that have one). */
    private static Map<String, String> producerPasswordDigests(TenantDirectory tenants) {
        return tenants.brokerProducers().stream()
                .filter(p -> p.passwordSha256() != null)
                .collect(Collectors.toMap(TenantDirectory.BrokerProducer::user, TenantDirectory.BrokerProducer::passwordSha256));
    }

    /** The same producers' users → their tenant. */
    private static Map<String, String> producerTenants(TenantDirectory tenants) {
        return tenants.brokerProducers().stream()
                .collect(Collectors.toMap(TenantDirectory.BrokerProducer::user, TenantDirectory.BrokerProducer::tenantId));
    }

    /** Per provider what health adds to its gate: its route not running (why), classes it was left out for. */
    private static Map<String, String> providerNotes(ProviderCatalog providers, List<String> leftOut, Map<String, String> canaries) {
        Map<String, String> notes = new TreeMap<>();
        for (Provider provider : providers.all()) {
            List<String> parts = new ArrayList<>();
            parts.add("up to " + provider.maxConcurrency() + " calls in flight");
            providers.notRunning(provider.name()).ifPresent(why -> parts.add("not running: " + why));
            if (canaries.containsKey(provider.name())) {
                parts.add(canaries.get(provider.name()));
            }
            leftOut.stream().filter(line -> line.startsWith(provider.name() + " left out for "))
                    .map(line -> line.substring(provider.name().length() + 1)).forEach(parts::add);
            notes.put(provider.name(), String.join("; ", parts));
        }
        return notes;
    }
}
