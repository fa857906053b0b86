package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.api.JmsIntake;
import io.jobgate.api.JobsApi;
import io.jobgate.api.ProblemResponder;
import io.jobgate.api.TenantAuth;
import io.jobgate.api.UploadsApi;
import io.jobgate.infra.ManagedResource;
import io.jobgate.infra.Parts;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.infra.Roles;
import io.jobgate.infra.Settings;
import io.jobgate.infra.StartupTimes;
import io.jobgate.admission.AdmissionLimits;
import io.jobgate.admission.AdmissionService;
import io.jobgate.admission.AdmissionWriter;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobTransitions;
import io.jobgate.reconcile.ReconcileSettings;
import io.jobgate.relay.RelaySettings;
import io.jobgate.worker.SweeperSettings;
import io.jobgate.worker.WorkerSettings;
import io.jobgate.job.JobStore;
import io.jobgate.ops.DatabaseHealthCheck;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.provider.ProviderSettingsSource;
import io.jobgate.relay.DeadLetters;
import io.jobgate.relay.OutboxRelay;
import io.jobgate.relay.RelayNotifications;
import io.jobgate.relay.RelayWakeup;
import io.jobgate.tenant.TenantDirectory;
import io.jobgate.upload.UploadStore;
import io.jobgate.api.AdminApi;
import io.jobgate.api.WebhooksApi;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.adapter.AdapterCaller;
import io.jobgate.adapter.Backoff;
import io.jobgate.job.JobLeases;
import io.jobgate.output.OutputStore;
import io.jobgate.worker.Sweeper;
import io.jobgate.worker.Worker;
import org.apache.camel.CamelConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.Configuration;
import org.apache.camel.spi.Registry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Wires the gateway: the three parts (PostgreSQL, Artemis, S3 API), each embedded unless a URL
 * points at an external server, then the domain beans the routes call by name. Embedded servers
 * and pools are Camel services, so the context stops them after the routes, in reverse order.
 */
@Configuration
public class JobgateConfiguration implements CamelConfiguration {

    private static final Logger LOG = LoggerFactory.getLogger(JobgateConfiguration.class);


    @Override
    public void configure(CamelContext context) throws Exception {
        // Where the start's time goes, logged once the gateway is ready.
        StartupTimes startupTimes = StartupTimes.install(context);
        // Camel's MBeans described for JMX once the gateway is ready, not on the start's critical path.
        io.jobgate.ops.LateMBeans.install(context);
        Settings settings = new Settings(context);
        // What this instance runs, decided first: a wrong role name stops the start before any part starts.
        Roles roles = Roles.from(settings);
        roles.placeholders().forEach(context.getPropertiesComponent()::addOverrideProperty);
        roles.notes().forEach(note -> LOG.warn("{} (an old per-role switch; use {})", note, Roles.SETTING));
        // Which routes start here (a route's group is its role; a provider's enabled switch): bound before
        // the route files are read, and asked again for each file reloaded later.
        context.getRegistry().bind("routeStartRules", new io.jobgate.infra.RouteStartRules(roles,
                settings.bool("jobgate.evaluation.enabled"), settings::optional));
        Registry registry = context.getRegistry();
        io.jobgate.adapter.HttpMethodConverter.register(context);
        // The one clock of every decision (due times, leases, lifetimes, checks), passed into SQL:
        // the system's, unless a test bound one of its own before configuration to move time.
        Clock clock = registry.lookupByNameAndType("clock", Clock.class);
        if (clock == null) {
            clock = Clock.systemUTC();
            registry.bind("clock", clock);
        }
        Path dataDir = settings.path("jobgate.data-dir");
        Path configDir = settings.path("jobgate.config-dir");
        Files.createDirectories(dataDir);
        LOG.info("jobgate data directory {}, config directory {}", dataDir, configDir);

        // --- The parts: PostgreSQL, Artemis, S3, side parts (the tenants first: the embedded broker
        // logs in their JMS producers) ----------------------------------------------------------
        TenantDirectory tenants = TenantDirectory.load(Arrays.stream(settings.required("jobgate.tenants.files").split(",")).map(String::trim).map(Path::of).toList());
        // A shipped demo secret never answers beyond this machine: checked before anything listens.
        List<String> reachable = io.jobgate.tenant.DemoCredentials.reachable(tenants,
                roles.runs(Roles.Role.API) ? settings.optional("jobgate.admin.api-key-sha256").orElse(null) : null,
                roles.runs(Roles.Role.API) && settings.bool("jobgate.simulator.enabled")
                        ? settings.optional("jobgate.simulator.webhook-secret").orElse(null) : null,
                roles.runs(Roles.Role.API) ? settings.optional("camel.server.host").orElse("") : "127.0.0.1",
                settings.optional("jobgate.broker.url").isPresent() ? null
                        : settings.required("jobgate.broker.embedded-host"));
        if (!reachable.isEmpty()) {
            if (!settings.bool("jobgate.demo")) {
                throw new io.jobgate.common.StartRefused("refusing to start: a shipped demo credential would answer beyond this machine: "
                        + String.join("; ", reachable) + ". Replace it with a secret of your own (its SHA-256 where the file "
                        + "names it; docs/operating.md, \"Demo credentials\"), listen on loopback (camel.server.host = 127.0.0.1), "
                        + "or set jobgate.demo = true (JOBGATE_DEMO=true) to run the demo on a reachable address");
            }
            reachable.forEach(line -> LOG.warn("demo credential reachable beyond this machine (jobgate.demo = true): {}", line));
        }
        Parts parts = Parts.start(context, settings, dataDir, startupTimes, tenants.brokerProducers().stream()
                .filter(p -> p.passwordSha256() != null)
                .collect(java.util.stream.Collectors.toMap(TenantDirectory.BrokerProducer::user,
                        TenantDirectory.BrokerProducer::passwordSha256)),
                tenants.brokerProducers().stream().collect(java.util.stream.Collectors.toMap(
                        TenantDirectory.BrokerProducer::user, TenantDirectory.BrokerProducer::tenantId)));
        HikariDataSource dataSource = parts.dataSource();
        registry.bind("relayDataSource", parts.relayDataSource());
        registry.bind("jmsConnectionFactory", parts.jms());
        registry.bind("s3Client", parts.s3());
        registry.bind("dataSource", dataSource);
        // Health probes run on threads of their own (BackgroundHealthCheck), from the moment the gateway has
        // started: /observe/health is answered on the HTTP server's event loop and must never wait for a
        // server that is down.
        List<io.jobgate.ops.BackgroundHealthCheck> healthChecks = List.of(new DatabaseHealthCheck(dataSource),
                new io.jobgate.ops.BrokerHealthCheck(parts.jms()),
                new io.jobgate.ops.ObjectStorageHealthCheck(parts.s3(), settings.required("jobgate.s3.bucket")));
        registry.bind("databaseHealthCheck", healthChecks.get(0));
        registry.bind("brokerHealthCheck", healthChecks.get(1));
        registry.bind("objectStorageHealthCheck", healthChecks.get(2));
        context.addStartupListener(new org.apache.camel.StartupListener() {
            @Override
            public void onCamelContextStarted(CamelContext started, boolean alreadyStarted) {
                // probes start once every route runs (below)
            }

            @Override
            public void onCamelContextFullyStarted(CamelContext started, boolean alreadyStarted) {
                healthChecks.forEach(io.jobgate.ops.BackgroundHealthCheck::startProbing);
                started.getRegistry().lookupByNameAndType("providerGatesHealthCheck", io.jobgate.ops.BackgroundHealthCheck.class)
                        .startProbing();
            }
        });
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        // Deadlocks, serialization failures and a failover of the database run the transaction again
        // instead of losing an outcome.
        TransactionTemplate transactions = new RetryingTransactions(dataSource, 3,
                settings.seconds("jobgate.db.failover-wait-seconds", 0, 3600));
        S3Client s3 = parts.s3();

        // --- What jobs are made of: tenants, presets, providers, uploads ---------------------------
        PresetCatalog presets = PresetCatalog.load(configDir.resolve("presets"));
        // Written when the context starts, once the database is up and migrated (it starts meanwhile).
        context.addService(ManagedResource.startedAndStoppedBy("tenants-and-presets", () -> {
            tenants.syncTo(jdbc);
            presets.verifyImmutable(jdbc);
        }, () -> { }), true, true);
        // Which version new jobs get when they name none: the operator's choice, else the latest.
        io.jobgate.preset.PresetDefaults presetDefaults = new io.jobgate.preset.PresetDefaults(jdbc, transactions, presets, clock);
        presets.useDefaults(presetDefaults::pinned);
        ProviderCatalog providers = ProviderCatalog.load(Arrays.stream(settings.required("jobgate.providers.dirs").split(","))
                .map(String::trim).filter(d -> !d.isEmpty()).map(Path::of).toList(), settings);
        context.getPropertiesComponent().addPropertiesSource(new ProviderSettingsSource(providers));
        // Every (preset, class, provider that may serve it): a default that cannot stops the start here.
        // One line per provider (why, per class, is in health): by design for the v1 presets, whose sizes
        // are minimums some providers' size tables stay below, so not a warning on every start.
        providers.verifyFits(presets.all()).stream()
                .collect(java.util.stream.Collectors.groupingBy(line -> line.substring(0, line.indexOf(" left out for ")),
                        java.util.TreeMap::new, java.util.stream.Collectors.mapping(
                                line -> line.substring(line.indexOf(" left out for ") + 14, line.indexOf(": ")),
                                java.util.stream.Collectors.joining(", "))))
                .forEach((provider, classes) -> LOG.info("provider {} is left out for {} (the reasons: /observe/health)",
                        provider, classes));
        // Every call a provider allows gets a connection at once (a call waiting for one would spend its lease).
        io.jobgate.adapter.AdapterHttpPool.Size pool = io.jobgate.adapter.AdapterHttpPool.size(context, providers.all(),
                settings.intValue("jobgate.http.spare-connections", 0, 100_000),
                settings.millis("jobgate.http.max-idle-ms", 0, 3_600_000),
                settings.optional("camel.component.http.connections-per-route").map(Integer::valueOf),
                settings.optional("camel.component.http.max-total-connections").map(Integer::valueOf));
        io.jobgate.adapter.AdapterRoutes adapterRoutes = new io.jobgate.adapter.AdapterRoutes(context);
        providers.watchAdapters(adapterRoutes);
        providers.readAdapterSources(adapterRoutes::source);
        UploadStore uploads = new UploadStore(jdbc, transactions);
        String bucket = settings.required("jobgate.s3.bucket");
        registry.bind("tenantDirectory", tenants);
        registry.bind("presetCatalog", presets);
        registry.bind("providerCatalog", providers);
        // Health shows each provider: its gate, and whether its route runs and which classes it was left out for.
        var canaryNotes = new java.util.concurrent.atomic.AtomicReference<java.util.function.Supplier<Map<String, String>>>(Map::of);
        registry.bind("providerGatesHealthCheck", new io.jobgate.ops.ProviderGatesHealthCheck(dataSource,
                () -> providerNotes(providers, providers.leftOut(presets.all()), canaryNotes.get().get()), clock));

        // --- Metrics: jobgate's series beside Camel's ---------------------------------------------------
        io.jobgate.ops.Meters meters = new io.jobgate.ops.Meters(context, jdbc, clock,
                providers.all().stream().map(io.jobgate.provider.Provider::name).toList());
        registry.bind("meters", meters);

        // --- A job's life: the state machine and its one finalize ------------------------------------
        JobStore jobs = new JobStore(jdbc);
        JobTransitions transitions = new JobTransitions(
                new org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate(jdbc), transactions, clock);
        JobFinalizer finalizer = new JobFinalizer(transitions).refunding(
                settings.intValue("jobgate.refunds.failed-percent", 0, 100),
                settings.intValue("jobgate.refunds.cancelled-percent", 0, 100));
        registry.bind("jobStore", jobs);
        registry.bind("jobTransitions", transitions);
        transitions.observe(new io.jobgate.ops.TransitionMeters(meters));
        registry.bind("jobFinalizer", finalizer);

        // --- Admission (group commit) and the outbox relay it wakes ----------------------------------
        AdmissionLimits limits = AdmissionLimits.from(settings);
        String instanceId = java.util.UUID.randomUUID().toString();
        AdmissionWriter writer = new AdmissionWriter(dataSource, limits, instanceId);
        // The dispatch window, unless set: what the providers allow in flight; as many answers again, that
        // wait to be finished with their provider slots given back (ProviderCalls.mustWaitToFinish: their
        // jobs hold the window until recorded, and a window of the calls alone kept the next wave of calls
        // behind the finishes of the last); and one message per starting consumer, so a slot freed by an
        // ending call finds a job already dispatched.
        int callsAllowed = io.jobgate.adapter.AdapterHttpPool.callsAllowed(providers.all());
        RelaySettings relay = RelaySettings.from(settings, roles.runs(Roles.Role.RELAY),
                2 * callsAllowed + settings.intValue("jobgate.worker.concurrency", 1, 10_000));
        // When relay rounds may start (routes/outbox-relay.camel.yaml, round-gap): wakes count, rounds mark their start and end.
        io.jobgate.relay.RelayPace relayPace = new io.jobgate.relay.RelayPace(relay.roundGapMs());
        registry.bind("relayPace", relayPace);
        RelayWakeup wakeup = new RelayWakeup(context.createProducerTemplate(), relay.enabled(), relayPace);
        writer.afterCommit(wakeup::wake);
        registry.bind("relayWakeup", wakeup); // a call that ended gave its slot back: the next job may go (routes/worker.camel.yaml)
        // A dispatch this instance wrote for later (a retry, a gate's reopening) wakes its relay when due.
        io.jobgate.relay.RelayTimer relayTimer = new io.jobgate.relay.RelayTimer(clock, wakeup::wake);
        if (relay.enabled()) {
            context.addService(relayTimer, true, true);
            transitions.observe((event, moved, change) -> {
                if (event.has(JobTransitions.Effect.DISPATCH_AT)) {
                    relayTimer.wakeAt(change.at());
                }
            });
        }
        writer.onAdmitted(admitted -> {
            meters.ledger(admitted.job().tenantId(), "debit", admitted.job().costMicros());
            meters.metered(admitted.job().tenantId(), admitted.job().kind(), admitted.usage().unit(), admitted.usage().units(),
                    admitted.job().costMicros());
        });
        if (relay.enabled()) {
            // Admissions on other instances wake this relay too (PostgreSQL LISTEN/NOTIFY).
            context.addService(new RelayNotifications(dataSource::getJdbcUrl, dataSource.getUsername(),
                    dataSource.getPassword(), instanceId, wakeup::wake), true, true);
        }
        context.addService(writer, true, true);
        // Tenants' webhooks (docs/webhooks.md): their endpoints, which jobs may name (webhook_url).
        io.jobgate.notify.WebhookEndpoints webhookEndpoints = new io.jobgate.notify.WebhookEndpoints(jdbc, clock,
                new io.jobgate.notify.EndpointUrls(settings.bool("jobgate.tenant-webhooks.allow-http-loopback"),
                        settings.optional("jobgate.tenant-webhooks.allowed-networks").orElse(""), java.net.InetAddress::getAllByName));
        AdmissionService admission = new AdmissionService(clock, presets, providers, uploads, jobs, writer, limits,
                (tenant, url) -> webhookEndpoints.findByUrl(tenant, url).filter(io.jobgate.notify.WebhookEndpoints.Endpoint::enabled)
                        .map(io.jobgate.notify.WebhookEndpoints.Endpoint::id));
        registry.bind("admissionWriter", writer);
        registry.bind("admissionService", admission);
        java.util.Map<String, Integer> callLimits = new java.util.LinkedHashMap<>();
        providers.all().forEach(p -> callLimits.put(p.name(), p.maxConcurrency()));
        // Each provider's slot rows (V19) exist before its first call, so a start claims its slot in one statement:
        // made as the context starts, before any route (the database is still starting while this method runs).
        io.jobgate.job.ProviderSlots slotRows = new io.jobgate.job.ProviderSlots(jdbc);
        context.addStartupListener(new org.apache.camel.StartupListener() {
            @Override
            public void onCamelContextStarted(CamelContext started, boolean alreadyStarted) {
                callLimits.forEach(slotRows::ensureRows);
            }
        });
        // Tenants' webhooks (docs/webhooks.md): a status round writes the deliveries of the events it takes.
        io.jobgate.notify.DeliveryFanOut deliveryFanOut = new io.jobgate.notify.DeliveryFanOut(jobs, clock);
        OutboxRelay outboxRelay = new OutboxRelay(parts.jms(), parts.relayDataSource(), clock, relay, callLimits, deliveryFanOut, relayPace);
        registry.bind("outboxRelay", outboxRelay);
        registry.bind("deadLetters", new DeadLetters(finalizer));

        // --- Workers: leases and the provider gate, adapters, outputs, the sweeper -------------------
        WorkerSettings workerSettings = WorkerSettings.from(settings);
        Backoff backoff = workerSettings.backoff();
        // Canary candidates beside stable adapters (docs/canary.md): a share of attempts, gates, stop, rollback.
        io.jobgate.canary.Canaries canaries = new io.jobgate.canary.Canaries(jdbc, providers, adapterRoutes::candidateSource, clock);
        io.jobgate.canary.CanaryLifecycle canaryLifecycle = new io.jobgate.canary.CanaryLifecycle(jdbc, transactions, transitions,
                finalizer, providers, canaries);
        io.jobgate.canary.CanaryViews canaryViews = new io.jobgate.canary.CanaryViews(jdbc, providers, canaries, clock);
        canaryLifecycle.onStop((provider, revision, gate, reason, requeued) -> meters.canaryStopped(provider, gate));
        org.apache.camel.ProducerTemplate canaryEvents = context.createProducerTemplate();
        canaryLifecycle.publishWith(event -> canaryEvents.sendBodyAndHeader("jms:topic:" + OutboxRelay.EVENTS_TOPIC,
                io.jobgate.common.Json.write(event), "JobgateEvent", "canary"));
        // Answered calls' slots go back early in batches, one statement (and one wake of the relay) each (step end-call).
        io.jobgate.job.ProviderGates gates = new io.jobgate.job.ProviderGates(jdbc, transactions, clock);
        io.jobgate.job.CandidateAttempts candidateAttempts = new io.jobgate.job.CandidateAttempts(jdbc, transactions, transitions);
        // The worker's one door to a job: every write of a start and of a decision on an answer.
        JobLeases leases = new JobLeases(jdbc, transactions, transitions, finalizer, gates, candidateAttempts);
        io.jobgate.worker.CallEnds callEnds = new io.jobgate.worker.CallEnds(leases::endCalls, wakeup::wake);
        context.addService(ManagedResource.startedAndStoppedBy("call-ends", callEnds::start, callEnds::close), true, true);
        registry.bind("callEnds", callEnds);
        gates.onDispatchDue(relayTimer::wakeAt); // a no-op unless the relay (and so its timer) runs here
        registry.bind("providerGates", gates);
        registry.bind("providerReadiness", new io.jobgate.adapter.ProviderReadiness(providers, gates, clock,
                settings.millis("jobgate.providers.readiness-period-ms", 1000, 86_400_000),
                settings.millis("jobgate.providers.readiness-backoff-ms", 10, 60_000)));
        OutputStore outputs = new OutputStore(context.createProducerTemplate(), bucket, workerSettings.maxOutputBytes(),
                workerSettings.inMemoryOutputBytes(), presets, s3);
        AdapterCaller adapters = new AdapterCaller(context);
        io.jobgate.adapter.ProviderCancel providerCancel = new io.jobgate.adapter.ProviderCancel(jdbc, providers, adapters);
        registry.bind("providerCancel", providerCancel);
        providerCancel.onAnswer(meters::providerCancel);
        registry.bind("jobLeases", leases);
        registry.bind("outputStore", outputs);
        registry.bind("adapterAnswer", new io.jobgate.adapter.AdapterAnswer(providers));
        registry.bind("multipartForm", new io.jobgate.adapter.MultipartForm());
        registry.bind("awsSigV4", new io.jobgate.adapter.AwsSigV4());
        Sweeper sweeper = new Sweeper(jdbc, leases, finalizer, providers, clock, SweeperSettings.from(settings), s3, bucket);
        registry.bind("sweeper", sweeper);
        registry.bind("retention", new io.jobgate.worker.Retention(jdbc, clock,
                java.time.Duration.ofHours(settings.intValue("jobgate.retention.outbox-hours", 1, 24 * 3650)),
                java.time.Duration.ofHours(settings.intValue("jobgate.retention.webhook-receipts-hours", 1, 24 * 3650)),
                settings.seconds("jobgate.webhooks.tolerance-seconds", 1, 86_400),
                java.time.Duration.ofHours(settings.intValue("jobgate.retention.webhook-deliveries-hours", 1, 24 * 3650)),
                settings.intValue("jobgate.retention.batch", 1, 100_000)));
        registry.bind("uploadRetention", new io.jobgate.upload.UploadRetention(jdbc, transactions, clock,
                java.time.Duration.ofHours(settings.intValue("jobgate.retention.uploads-hours", 1, 24 * 3650)),
                settings.intValue("jobgate.retention.batch", 1, 100_000), s3, bucket));

        // --- Reconciliation: evidence from the poller, webhooks and operators ------------------------
        Reconciler reconciler = new Reconciler(jdbc, transitions, finalizer, providers, presets, adapters, outputs,
                gates, ReconcileSettings.from(settings), backoff, canaries, candidateAttempts);
        registry.bind("reconciler", reconciler);
        io.jobgate.worker.AttemptStarts attemptStarts = new io.jobgate.worker.AttemptStarts(leases, canaries, clock);
        registry.bind("attemptStarts", attemptStarts);
        Worker worker = new Worker(workerSettings, leases, attemptStarts, presets, providers, s3, bucket, outputs, backoff);
        registry.bind("worker", worker);
        registry.bind("outcomeRecorder", new io.jobgate.worker.OutcomeRecorder(leases, outputs,
                new io.jobgate.worker.AttemptDecisions(leases, canaries, clock, backoff,
                        reconciler.firstCheck()),
                meters, providerCancel));
        registry.bind("canaries", canaries);
        registry.bind("canaryLifecycle", canaryLifecycle);
        // Evaluation (docs/evaluation.md): outputs read back by the evaluator route and scored.
        registry.bind("tesseractOcr", new io.jobgate.evaluation.TesseractOcr(settings.required("jobgate.evaluation.tesseract-command"),
                java.time.Duration.ofMillis(settings.intValue("jobgate.evaluation.deadline-ms", 1000, 3_600_000))));
        io.jobgate.evaluation.Evaluations evaluations = new io.jobgate.evaluation.Evaluations(jdbc, s3, bucket,
                context.createProducerTemplate(), clock, settings.intValue("jobgate.evaluation.batch", 1, 1000),
                java.time.Duration.ofHours(settings.intValue("jobgate.evaluation.lookback-hours", 1, 24 * 365)));
        evaluations.onScored((provider, revision, held, score) -> meters.evaluated(provider, revision, score.correct(), score.total(),
                score.totalsCorrect()));
        registry.bind("evaluations", evaluations);
        canaryNotes.set(canaryViews::healthNotes);
        // The worker's name is the lease owner in the jobs table: logged to tell instances apart there.
        LOG.info("jobgate roles: {}{}", roles, roles.runs(Roles.Role.WORKER) ? "; workers lease jobs as " + worker.name() : "");
        // Where calls wait on their provider (routes/worker.camel.yaml, hand-off-call): no JMS transaction,
        // no consumer, and on Java 21+ no platform thread per call.
        io.jobgate.worker.ProviderCalls providerCalls = io.jobgate.worker.ProviderCalls.create(
                settings.intValue("jobgate.worker.finish-concurrency", 1, 1000),
                providers.all().stream().mapToInt(io.jobgate.provider.Provider::maxConcurrency).sum(),
                settings.intValue("jobgate.worker.concurrency", 1, 10000),
                settings.optional("jobgate.worker.max-calls").isPresent()
                        ? settings.intValue("jobgate.worker.max-calls", 1, 1_000_000) : 0);
        registry.bind("providerCalls", providerCalls);
        io.jobgate.worker.AnswersInMemory answersInMemory = io.jobgate.worker.AnswersInMemory.open(dataDir.resolve("answers-waiting"),
                settings.optional("jobgate.worker.answers-in-memory-max-bytes").isPresent()
                        ? settings.longValue("jobgate.worker.answers-in-memory-max-bytes", 0, Long.MAX_VALUE)
                        : io.jobgate.worker.AnswersInMemory.defaultBudget());
        registry.bind("answersInMemory", answersInMemory);
        // Adapters' decoded outputs (OpenAI's images) count against the same budget as the answers waiting to be finished.
        registry.bind("jsonParts", new io.jobgate.adapter.JsonParts(answersInMemory));
        meters.answersInMemory(answersInMemory::heldBytes, answersInMemory::onDiskBytes, answersInMemory::setAsideTotal);
        Map<String, Integer> capacity = new java.util.TreeMap<>();
        providers.all().forEach(p -> capacity.put(p.name(), p.maxConcurrency()));
        meters.providerCalls(providerCalls::inFlight, providerCalls::peak, providerCalls::handedOff, providerCalls::waitingToFinish,
                capacity, providerCalls.maxCalls(), providerCalls::startsHeldAtCap);
        if (roles.runs(Roles.Role.WORKER)) {
            LOG.info("provider calls: up to {} in flight ({}; each provider's max-concurrency, over all instances){}, carried on {}; "
                    + "HTTP pool {} connections per host, {} in all{}; dispatch window {}", pool.callsAllowed(),
                    capacity.entrySet().stream().map(e -> e.getKey() + " " + e.getValue())
                            .collect(java.util.stream.Collectors.joining(", ")),
                    providerCalls.maxCalls() > 0 ? ", this instance " + providerCalls.maxCalls() + " at once (jobgate.worker.max-calls)" : "",
                    providerCalls.carrier(), pool.perRoute(), pool.total(),
                    pool.operatorSet() ? " (camel.component.http.* as set)" : "", relay.maxRunning());
            if (pool.perRoute() < pool.callsAllowed()) {
                LOG.warn("camel.component.http.connections-per-route {} is below the {} calls the providers allow: calls beyond it "
                        + "wait for a connection inside the HTTP client", pool.perRoute(), pool.callsAllowed());
            }
        }
        // Alive while this process lives (a lock PostgreSQL drops with the process): if it dies, the
        // leases and claims below are taken over at the next sweep instead of when they run out.
        // Taken when the context starts, before the routes that lease and claim.
        var liveness = new java.util.concurrent.atomic.AtomicReference<io.jobgate.infra.InstanceLiveness>();
        context.addService(ManagedResource.startedAndStoppedBy("instance-liveness", () -> {
            liveness.set(io.jobgate.infra.InstanceLiveness.start(dataSource));
            for (String owner : List.of(worker.name(), reconciler.owner(), outboxRelay.owner())) {
                liveness.get().register(owner);
                sweeper.runsHere(owner);
            }
        }, () -> {
            if (liveness.get() != null) {
                liveness.get().close();
            }
        }), true, true);
        // On a clean stop, after the routes (services stop in reverse order, before the pools): the
        // leases this worker still holds go back at once instead of running out.
        context.addService(ManagedResource.stoppedBy("lease-hand-back", () -> sweeper.handBack(worker.name())), true, true);
        // Before that hand-back (added after it, so stopped before it): the route provider-call already had
        // the shutdown timeout for its calls in flight (it stops last, shutdownRoute Defer); a few seconds
        // more for those recording their outcome, so a stop stays within the timeout plus these.
        context.addService(ManagedResource.stoppedBy("provider-calls-drain",
                () -> providerCalls.drain(java.time.Duration.ofSeconds(5))), true, true);

        // --- The doors: HTTP API, webhooks, admin, JMS intake ----------------------------------------
        // Where no route answers (starting, stopping, unknown paths): problem documents, never a bare 404.
        io.jobgate.api.HttpEdges.install(context);
        // /observe beyond health (metrics, Jolokia): loopback or the admin key.
        io.jobgate.api.ManagementAccess.install(context, settings.optional("jobgate.admin.api-key-sha256").orElse(null),
                settings.bool("jobgate.management.allow-loopback"));
        registry.bind("tenantAuth", new TenantAuth(tenants));
        registry.bind("problemResponder", new ProblemResponder(meters));
        registry.bind("jobsApi", new JobsApi(admission, jobs, finalizer, s3, bucket, new io.jobgate.summary.JobSummaries(jdbc, jobs)));
        // A transcription's summary (docs/summaries.md), ordered once its transcript ended (route summary-orders).
        registry.bind("summaryOrders", new io.jobgate.summary.SummaryOrders(jdbc, clock, presets, providers, jobs, writer, limits,
                s3, bucket, java.time.Duration.ofSeconds(settings.intValue("jobgate.summaries.retry-seconds", 1, 86_400))));
        // Tenants' webhooks (docs/webhooks.md): the sender, the retired subscription's drain (endpoints and the fan-out: above).
        io.jobgate.notify.WebhookDeliveries webhookDeliveries = new io.jobgate.notify.WebhookDeliveries(jdbc, clock,
                io.jobgate.notify.DeliverySchedule.parse(settings.required("jobgate.tenant-webhooks.retry-schedule")));
        registry.bind("retiredFanOutSubscription", new io.jobgate.notify.RetiredFanOutSubscription(parts.jms(), dataSource, deliveryFanOut));
        registry.bind("webhookSender", new io.jobgate.notify.WebhookSender(webhookDeliveries, webhookEndpoints, meters, clock,
                new io.jobgate.notify.WebhookSender.Settings(settings.intValue("jobgate.tenant-webhooks.tenant-concurrency", 1, 1000),
                        settings.intValue("jobgate.tenant-webhooks.max-in-flight", 1, 100_000),
                        settings.seconds("jobgate.tenant-webhooks.timeout-seconds", 1, 300))));
        registry.bind("tenantWebhooksApi", new io.jobgate.api.TenantWebhooksApi(webhookEndpoints, webhookDeliveries, jobs,
                java.time.Duration.ofHours(settings.intValue("jobgate.tenant-webhooks.secret-overlap-hours", 0, 24 * 7))));
        // GET /v1/jobs/{id}?wait=N: held in front of the route, no thread while it waits (WaitingReads says why).
        io.jobgate.api.WaitingReads waitingReads = new io.jobgate.api.WaitingReads(context, tenants, jobs,
                settings.intValue("jobgate.api.max-waiting-reads", 0, 1_000_000),
                settings.millis("jobgate.api.waiting-reads-period-ms", 50, 10_000), meters::waitingReadEnded);
        meters.waitingReads(waitingReads::waiting);
        registry.bind("waitingReads", waitingReads);
        if (roles.runs(Roles.Role.API)) {
            waitingReads.install();
            context.addService(waitingReads, true, true);
        }
        registry.bind("uploadsApi", new UploadsApi(uploads, clock, settings.longValue("jobgate.uploads.max-bytes", 1, 1L << 31),
                s3, bucket));
        registry.bind("usageApi", new io.jobgate.api.UsageApi(new io.jobgate.usage.UsageReport(jdbc), clock));
        registry.bind("usageRollups", new io.jobgate.usage.UsageRollups(jdbc, settings.intValue("jobgate.usage.rollup-batch", 1, 100_000)));
        registry.bind("webhooksApi", new WebhooksApi(providers, adapters, reconciler, jdbc, clock,
                settings.seconds("jobgate.webhooks.tolerance-seconds", 1, 86_400), settings.bool("jobgate.demo")));
        registry.bind("canaryAdmin", new io.jobgate.api.CanaryAdmin(canaryLifecycle, canaryViews, evaluations, clock));
        registry.bind("adminApi", new AdminApi(settings.optional("jobgate.admin.api-key-sha256").orElse(null), reconciler, jobs,
                new io.jobgate.job.Redrives(jdbc, transactions, transitions)).withEvaluations(evaluations));
        registry.bind("presetsAdmin", new io.jobgate.api.PresetsAdmin(presetDefaults));
        registry.bind("adminUsage", new io.jobgate.api.AdminUsage(new io.jobgate.usage.UsageReport(jdbc), providers, clock));
        registry.bind("jmsIntake", new JmsIntake(tenants, admission, meters));
        registry.bind("startupTimes", startupTimes);
        startupTimes.wired();
    }

    /** Per provider what health adds to its gate: its route not running (why), classes it was left out for. */
    private static Map<String, String> providerNotes(ProviderCatalog providers, List<String> leftOut, Map<String, String> canaries) {
        Map<String, String> notes = new java.util.TreeMap<>();
        for (io.jobgate.provider.Provider provider : providers.all()) {
            List<String> parts = new java.util.ArrayList<>();
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
