package io.jobgate;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Arrays;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.api.JmsIntake;
import io.jobgate.api.JobsApi;
import io.jobgate.api.ProblemResponder;
import io.jobgate.api.TenantAuth;
import io.jobgate.api.UploadsApi;
import io.jobgate.infra.BackgroundStart;
import io.jobgate.infra.SidePart;
import io.jobgate.infra.BrokerLogins;
import io.jobgate.infra.Database;
import io.jobgate.infra.EmbeddedBroker;
import io.jobgate.infra.EmbeddedPostgresServer;
import io.jobgate.infra.EmbeddedS3Server;
import io.jobgate.infra.ManagedResource;
import io.jobgate.infra.ObjectStorage;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.infra.Settings;
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
import io.jobgate.worker.JobLeases;
import io.jobgate.output.OutputStore;
import io.jobgate.worker.Sweeper;
import io.jobgate.worker.Worker;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.BindToRegistry;
import org.apache.camel.CamelConfiguration;
import org.apache.camel.CamelContext;
import org.apache.camel.Configuration;
import org.apache.camel.spi.Registry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jms.connection.CachingConnectionFactory;
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
        Settings settings = new Settings(context);
        Registry registry = context.getRegistry();
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

        // Read first: the embedded broker logs in the tenants' JMS producers.
        TenantDirectory tenants = TenantDirectory.load(Arrays.stream(settings.required("jobgate.tenants.files").split(",")).map(String::trim).map(Path::of).toList());
        // The gateway's broker user. For the embedded broker, whose only other users are the
        // producers, its password is made per start unless an operator sets one.
        boolean brokerEmbedded = settings.optional("jobgate.broker.url").isEmpty();
        String brokerUser = settings.optional("jobgate.broker.user").orElse(brokerEmbedded ? "jobgate" : null);
        String brokerPassword = settings.optional("jobgate.broker.password")
                .orElse(brokerEmbedded ? java.util.UUID.randomUUID().toString() : null);
        BrokerLogins brokerLogins = !brokerEmbedded ? null : new BrokerLogins(brokerUser, brokerPassword,
                tenants.brokerProducers().stream().filter(p -> p.passwordSha256() != null).collect(
                        java.util.stream.Collectors.toMap(TenantDirectory.BrokerProducer::user,
                                TenantDirectory.BrokerProducer::passwordSha256)));

        // The embedded parts start side by side; PostgreSQL and Flyway on this thread meanwhile.
        // (Settings are read here, on the configuring thread.)
        Path brokerXml = settings.path("jobgate.broker.config");
        String brokerHost = settings.required("jobgate.broker.embedded-host");
        int brokerPort = settings.intValue("jobgate.broker.embedded-port", 0, 65535);
        int s3Port = settings.intValue("jobgate.s3.embedded-port", 0, 65535);
        BackgroundStart<EmbeddedBroker> embeddedBroker = !brokerEmbedded ? null
                : BackgroundStart.of("artemis", () -> EmbeddedBroker.start(brokerXml, dataDir.resolve("artemis"), brokerHost,
                        brokerPort, brokerLogins));
        BackgroundStart<EmbeddedS3Server> embeddedS3 = settings.optional("jobgate.s3.endpoint").isPresent() ? null
                : BackgroundStart.of("s3", () -> EmbeddedS3Server.start(dataDir.resolve("objects"), s3Port));
        // Side parts found on the class path (the bundled provider simulator): named by none of this code.
        java.util.Map<SidePart, BackgroundStart<SidePart.Running>> sideParts = new java.util.LinkedHashMap<>();
        for (SidePart part : java.util.ServiceLoader.load(SidePart.class)) {
            BackgroundStart<SidePart.Running> started = part.start(settings);
            if (started != null) {
                sideParts.put(part, started);
            }
        }
        HikariDataSource dataSource;
        try {
            dataSource = database(context, settings, dataDir);
            registry.bind("jmsConnectionFactory", broker(context, settings, embeddedBroker, brokerUser, brokerPassword));
            registry.bind("s3Client", objectStorage(context, settings, embeddedS3));
            for (var side : sideParts.entrySet()) {
                SidePart.Running running = side.getValue().await();
                context.addService(ManagedResource.stoppedBy(side.getKey().name(), running::close), true, true);
                running.overrides().forEach(context.getPropertiesComponent()::addOverrideProperty);
            }
        } catch (Exception e) {
            if (embeddedBroker != null) {
                embeddedBroker.stopIfUnclaimed(EmbeddedBroker::stop);
            }
            if (embeddedS3 != null) {
                embeddedS3.stopIfUnclaimed(EmbeddedS3Server::stop);
            }
            sideParts.values().forEach(started -> started.stopIfUnclaimed(SidePart.Running::close));
            throw e;
        }
        registry.bind("dataSource", dataSource);
        registry.bind("databaseHealthCheck", new DatabaseHealthCheck(dataSource));
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        // Deadlocks and serialization failures run the transaction again instead of losing an outcome.
        TransactionTemplate transactions = new RetryingTransactions(dataSource, 3);
        S3Client s3 = registry.lookupByNameAndType("s3Client", S3Client.class);

        tenants.syncTo(jdbc);
        PresetCatalog presets = PresetCatalog.load(configDir.resolve("presets"));
        presets.verifyImmutable(jdbc);
        ProviderCatalog providers = ProviderCatalog.load(Arrays.stream(settings.required("jobgate.providers.dirs").split(",")).map(String::trim).filter(d -> !d.isEmpty())
                .map(Path::of).toList(), settings);
        context.getPropertiesComponent().addPropertiesSource(new ProviderSettingsSource(providers));

        UploadStore uploads = new UploadStore(jdbc);
        JobStore jobs = new JobStore(jdbc);
        JobTransitions transitions = new JobTransitions(
                new org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate(jdbc), transactions, clock);
        registry.bind("jobTransitions", transitions);
        JobFinalizer finalizer = new JobFinalizer(transitions).refunding(
                settings.intValue("jobgate.refunds.failed-percent", 0, 100),
                settings.intValue("jobgate.refunds.cancelled-percent", 0, 100));
        AdmissionLimits limits = AdmissionLimits.from(settings);
        String instanceId = java.util.UUID.randomUUID().toString();
        AdmissionWriter writer = new AdmissionWriter(dataSource, limits, instanceId);
        RelaySettings relay = RelaySettings.from(settings);
        boolean relayEnabled = relay.enabled();
        RelayWakeup wakeup = new RelayWakeup(context.createProducerTemplate(), relayEnabled);
        writer.afterCommit(wakeup::wake);
        if (relayEnabled) {
            // Admissions on other instances wake this relay too (PostgreSQL LISTEN/NOTIFY).
            context.addService(new RelayNotifications(dataSource.getJdbcUrl(), dataSource.getUsername(),
                    dataSource.getPassword(), instanceId, wakeup::wake), true, true);
        }
        context.addService(writer, true, true);
        AdmissionService admission = new AdmissionService(clock, presets, providers, uploads, jobs, writer, limits);
        long maxUploadBytes = settings.longValue("jobgate.uploads.max-bytes", 1, 1L << 31);

        registry.bind("tenantDirectory", tenants);
        registry.bind("presetCatalog", presets);
        registry.bind("providerCatalog", providers);
        registry.bind("multipartForm", new io.jobgate.adapter.MultipartForm());
        registry.bind("admissionWriter", writer);
        registry.bind("admissionService", admission);
        registry.bind("jobFinalizer", finalizer);
        registry.bind("jobStore", jobs);
        registry.bind("tenantAuth", new TenantAuth(tenants));
        String bucket = settings.required("jobgate.s3.bucket");
        registry.bind("jobsApi", new JobsApi(admission, jobs, finalizer, s3, bucket));
        registry.bind("uploadsApi", new UploadsApi(uploads, clock, maxUploadBytes));
        registry.bind("problemResponder", new ProblemResponder());
        registry.bind("jmsIntake", new JmsIntake(tenants, admission));
        registry.bind("outboxRelay", new OutboxRelay(registry.lookupByNameAndType("jmsConnectionFactory",
                jakarta.jms.ConnectionFactory.class), clock, relay));
        registry.bind("deadLetters", new DeadLetters(finalizer));

        JobLeases leases = new JobLeases(jdbc, transactions, transitions, finalizer);
        WorkerSettings workerSettings = WorkerSettings.from(settings);
        OutputStore outputs = new OutputStore(context.createProducerTemplate(), bucket, workerSettings.maxOutputBytes(), presets);
        Backoff backoff = workerSettings.backoff();
        registry.bind("jobLeases", leases);
        registry.bind("adapterAnswer", new io.jobgate.adapter.AdapterAnswer());
        registry.bind("outputStore", outputs);
        AdapterCaller adapters = new AdapterCaller(context);
        ReconcileSettings reconcile = ReconcileSettings.from(settings);
        Reconciler reconciler = new Reconciler(jdbc, transitions, finalizer, providers, presets, adapters, outputs, reconcile,
                backoff);
        registry.bind("reconciler", reconciler);
        registry.bind("worker", new Worker(workerSettings, leases, finalizer, presets, providers, s3, bucket, outputs,
                clock, backoff, reconciler.firstCheck()));
        registry.bind("webhooksApi", new WebhooksApi(providers, adapters, reconciler, jdbc, clock,
                settings.seconds("jobgate.webhooks.tolerance-seconds", 1, 86_400)));
        registry.bind("usageApi", new io.jobgate.api.UsageApi(jdbc, clock));
        registry.bind("adminApi", new AdminApi(settings.optional("jobgate.admin.api-key-sha256").orElse(null), reconciler, jobs));
        registry.bind("sweeper", new Sweeper(jdbc, leases, finalizer, providers, clock, SweeperSettings.from(settings), s3, bucket));
    }

    private static HikariDataSource database(CamelContext context, Settings settings, Path dataDir) throws Exception {
        String url = settings.optional("jobgate.db.url").orElse(null);
        String user = settings.required("jobgate.db.user");
        String password = settings.optional("jobgate.db.password").orElse("");
        if (url == null) {
            EmbeddedPostgresServer postgres = EmbeddedPostgresServer.start(dataDir.resolve("postgres"),
                    settings.intValue("jobgate.db.embedded-port", 0, 65535),
                    EmbeddedPostgresServer.Durability.of(settings.required("jobgate.db.embedded-durability")));
            context.addService(ManagedResource.stoppedBy("embedded-postgres", postgres::stop), true, true);
            url = postgres.jdbcUrl();
            user = "postgres";
            password = "";
        }
        HikariDataSource pool = Database.pool(url, user, password, settings.intValue("jobgate.db.pool-size", 1, 500));
        context.addService(ManagedResource.stoppedBy("db-pool", pool::close), true, true);
        Database.migrate(pool);
        // The relay's claims and published marks commit without waiting for the WAL flush: one lost in
        // a database crash only means the event is published again, which consumers already tolerate
        // (at least once). Everything else commits durably. Saves a flush on the accept -> call path.
        HikariDataSource relayPool = Database.pool("jobgate-relay-db", url, user, password, 4, "-c synchronous_commit=off");
        context.addService(ManagedResource.stoppedBy("relay-db-pool", relayPool::close), true, true);
        context.getRegistry().bind("relayDataSource", relayPool);
        return pool;
    }

    private static CachingConnectionFactory broker(CamelContext context, Settings settings,
            BackgroundStart<EmbeddedBroker> embedded, String user, String password) throws Exception {
        String url = settings.optional("jobgate.broker.url").orElse(null);
        if (url == null) {
            EmbeddedBroker broker = embedded.await();
            context.addService(ManagedResource.stoppedBy("embedded-artemis", broker::stop), true, true);
            url = broker.clientUrl();
        }
        ActiveMQConnectionFactory artemis = new ActiveMQConnectionFactory(url);
        // No client-side buffering: a worker busy with a long provider call must not sit on
        // dispatch messages an idle worker could take.
        artemis.setConsumerWindowSize(0);
        if (user != null) {
            artemis.setUser(user);
            artemis.setPassword(password);
        }
        // One shared connection, sessions and producers cached: a relay round sends many messages.
        CachingConnectionFactory caching = new CachingConnectionFactory(artemis);
        caching.setSessionCacheSize(20);
        caching.setCacheConsumers(false);
        caching.setReconnectOnException(true);
        context.addService(ManagedResource.stoppedBy("jms-connection-factory", () -> {
            caching.destroy();
            artemis.close();
        }), true, true);
        return caching;
    }

    private static S3Client objectStorage(CamelContext context, Settings settings,
            BackgroundStart<EmbeddedS3Server> embedded) throws Exception {
        String endpoint = settings.optional("jobgate.s3.endpoint").orElse(null);
        String accessKey = settings.optional("jobgate.s3.access-key").orElse(null);
        String secretKey = settings.optional("jobgate.s3.secret-key").orElse(null);
        if (endpoint == null) {
            EmbeddedS3Server server = embedded.await();
            context.addService(ManagedResource.stoppedBy("embedded-s3", server::stop), true, true);
            endpoint = server.endpoint();
            accessKey = server.accessKey();
            secretKey = server.secretKey();
        } else if (accessKey == null || secretKey == null) {
            throw new IllegalStateException("jobgate.s3.access-key and jobgate.s3.secret-key are required with jobgate.s3.endpoint");
        }
        S3Client s3 = ObjectStorage.client(endpoint, settings.required("jobgate.s3.region"), accessKey, secretKey);
        context.addService(ManagedResource.stoppedBy("s3-client", s3::close), true, true);
        ObjectStorage.ensureBucket(s3, settings.required("jobgate.s3.bucket"));
        return s3;
    }
}
