package io.jobgate.infra;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.apache.camel.CamelContext;
import org.springframework.jms.connection.CachingConnectionFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The parts under the gateway: PostgreSQL (pool, migrations, the relay's pool), Artemis (a cached
 * JMS connection factory), the S3 API, each embedded unless its URL is set, and the side parts on
 * the class path. Nothing waits that need not: PostgreSQL, the broker, the S3 server (with its
 * client and bucket) and the side parts start on threads of their own while the gateway is wired;
 * each is awaited only when the context starts (before any route; the schema is migrated there),
 * so the routes are loaded meanwhile. Each is a Camel service, stopped after
 * the routes in reverse order. How long each took goes to {@link StartupTimes}.
 *
 * @param dataSource      the gateway's pool
 * @param relayDataSource the relay's pool (claims commit without waiting for the WAL flush)
 * @param jms             the JMS connection factory
 * @param s3              the S3 client, its bucket ensured
 */
public record Parts(HikariDataSource dataSource, HikariDataSource relayDataSource, CachingConnectionFactory jms, S3Client s3,
                    ObjectUrls urls) {

    /**
     * The relay pool's sessions. Its claims and published marks commit without waiting for the WAL
     * flush: one lost in a database crash only means the event is published again, which consumers
     * already tolerate (at least once); everything else commits durably (a flush less on the accept ->
     * call path). And its statements never read a table whole: each pool session plans a statement
     * once (generic plans, {@link Database}), often while the outbox is still small, and keeps that plan
     * until the table is next analyzed; a round's claim planned on a fresh database read the whole
     * outbox and jobs table every round once a backlog had grown (measured: 8,000 outbox rows and
     * 3,600 jobs a round, each round). Every relay statement has its index (RelayPlansTest). Without the
     * JIT: the planner's penalty on a scan it cannot avoid (the window's 17 rows) lifts the claim's cost
     * past {@code jit_above_cost}, and PostgreSQL then compiled it for 2 s each round (measured). Without
     * merge joins: planned on small tables (CI's, a fresh gateway's), the claim joined a tenant's head of due
     * events to the outbox by a merge join over {@code outbox_pkey}, then sorted it, and that plan, kept, reads
     * the outbox from its oldest event up to the head's in every round; the relay's joins are a few index
     * probes each, never a merge of two ordered tables.
     */
    public static final String RELAY_SESSION_OPTIONS = "-c synchronous_commit=off -c enable_seqscan=off -c enable_mergejoin=off -c jit=off";

    /**
     * @param producerPasswordDigests the tenants' JMS producers (user → SHA-256 of the password), for an embedded broker
     * @param producerTenants         the same users → their tenant
     */
    public static Parts start(CamelContext context, Settings settings, Path dataDir, StartupTimes times,
                              Map<String, String> producerPasswordDigests, Map<String, String> producerTenants) throws Exception {
        // The gateway's broker user. For the embedded broker, whose only other users are the
        // producers, its password is made per start unless an operator sets one.
        boolean brokerEmbedded = settings.optional("jobgate.broker.url").isEmpty();
        // A broker in the gateway's JVM dies with it: a pair's node is a process of its own.
        if (settings.optional(EmbeddedBroker.Replication.SETTING).isPresent()) {
            throw new io.jobgate.common.StartRefused("refusing to start: " + EmbeddedBroker.Replication.SETTING + " is set, but a node of a replicated "
                    + "broker pair runs on its own (java -jar jobgate.jar broker) and the gateway names both nodes in "
                    + "jobgate.broker.url; unset " + Settings.environmentName(EmbeddedBroker.Replication.SETTING) + " for the gateway "
                    + "(docs/operating.md, \"Artemis: a replicated pair\")");
        }
        String brokerUser = settings.optional("jobgate.broker.user").orElse(brokerEmbedded ? "jobgate" : null);
        String brokerPassword = settings.optional("jobgate.broker.password")
                .orElse(brokerEmbedded ? UUID.randomUUID().toString() : null);
        BrokerLogins brokerLogins = !brokerEmbedded ? null
                : new BrokerLogins(brokerUser, brokerPassword, producerPasswordDigests, producerTenants);

        // One gateway per data directory, decided before any embedded part touches it; held until
        // the context has stopped everything else (the first service added stops last).
        boolean embeddedData = brokerEmbedded || settings.optional("jobgate.db.url").isEmpty()
                || settings.optional("jobgate.s3.endpoint").isEmpty();
        DataDirectoryLock dataLock = embeddedData ? DataDirectoryLock.acquire(dataDir) : null;
        if (dataLock != null) {
            context.addService(ManagedResource.stoppedBy("data-directory-lock", dataLock::close), true, true);
        }

        // The embedded parts start side by side; PostgreSQL and Flyway on this thread meanwhile.
        // (Settings are read here, on the configuring thread.)
        Path brokerXml = settings.path("jobgate.broker.config");
        String brokerHost = settings.required("jobgate.broker.embedded-host");
        int brokerPort = settings.intValue("jobgate.broker.embedded-port", 0, 65535);
        int s3Port = settings.intValue("jobgate.s3.embedded-port", 0, 65535);
        BackgroundStart<EmbeddedBroker> embeddedBroker = !brokerEmbedded ? null
                : BackgroundStart.of("artemis", () -> EmbeddedBroker.start(brokerXml, dataDir.resolve("artemis"), brokerHost,
                        brokerPort, brokerLogins));
        // The S3 server starts, and the bucket is checked (the AWS SDK's first request, as costly as
        // the server's start), on a thread of their own too; the client is handed out at once.
        ObjectStorage.Starting s3 = ObjectStorage.startInBackground(settings, dataDir.resolve("objects"), s3Port);
        // Side parts found on the class path (the bundled provider simulator): named by none of this code.
        Map<SidePart, BackgroundStart<SidePart.Running>> sideParts = new LinkedHashMap<>();
        for (SidePart part : ServiceLoader.load(SidePart.class)) {
            BackgroundStart<SidePart.Running> started = part.start(settings);
            if (started != null) {
                sideParts.put(part, started);
            }
        }
        try {
            HikariDataSource[] pools = database(context, settings, dataDir, times);
            CachingConnectionFactory jms = broker(context, settings, embeddedBroker, brokerUser, brokerPassword, times);
            S3Client s3Client = objectStorage(context, s3, times);
            for (var side : sideParts.entrySet()) {
                SidePart.Running running = side.getValue().await();
                times.part(side.getKey().name(), side.getValue().millis());
                context.addService(ManagedResource.stoppedBy(side.getKey().name(), running::close), true, true);
                running.overrides().forEach(context.getPropertiesComponent()::addOverrideProperty);
            }
            return new Parts(pools[0], pools[1], jms, s3Client, s3.urls());
        } catch (Exception e) {
            if (embeddedBroker != null) {
                embeddedBroker.stopIfUnclaimed(EmbeddedBroker::stop);
            }
            s3.started().stopIfUnclaimed(ObjectStorage.Started::stop);
            sideParts.values().forEach(started -> started.stopIfUnclaimed(SidePart.Running::close));
            if (dataLock != null) {
                dataLock.close();
            }
            throw e;
        }
    }

    /**
     * The gateway's pool and the relay's, handed out at once: an embedded PostgreSQL starts in the
     * background meanwhile (the pools are given its URL once it listens), and is awaited, with the
     * schema migrated, when the context starts, before the services added after this one and the
     * routes. Until then the pools open no connection ({@link StartingDataSource}).
     */
    private static HikariDataSource[] database(CamelContext context, Settings settings, Path dataDir, StartupTimes times)
            throws Exception {
        String url = settings.optional("jobgate.db.url").orElse(null);
        String user = settings.required("jobgate.db.user");
        String password = settings.optional("jobgate.db.password").orElse("");
        BackgroundStart<EmbeddedPostgresServer> embedded = null;
        if (url == null) {
            Path baseDir = dataDir.resolve("postgres");
            int port = settings.intValue("jobgate.db.embedded-port", 0, 65535);
            EmbeddedPostgresServer.Durability durability =
                    EmbeddedPostgresServer.Durability.of(settings.required("jobgate.db.embedded-durability"));
            // The port is chosen in the background start (after an orphaned server on the directory is
            // stopped, which gives its port back); the pools learn the server's URL when it is up.
            embedded = BackgroundStart.of("postgres", () -> EmbeddedPostgresServer.start(baseDir, port, durability));
            url = EmbeddedPostgresServer.jdbcUrl(port);
            user = "postgres";
            password = "";
        }
        StartingDataSource pool = Database.startingPool("jobgate-db", url, user, password,
                settings.intValue("jobgate.db.pool-size", 1, 500), "");
        StartingDataSource relayPool = Database.startingPool("jobgate-relay-db", url, user, password, 4,
                RELAY_SESSION_OPTIONS);
        BackgroundStart<EmbeddedPostgresServer> postgres = embedded;
        // Named for what stops last: the embedded server, or only the pools.
        context.addService(ManagedResource.startedAndStoppedBy(postgres != null ? "embedded-postgres" : "db-pools", () -> {
            try {
                if (postgres != null) {
                    String serverUrl = postgres.await().jdbcUrl();
                    pool.setJdbcUrl(serverUrl);
                    relayPool.setJdbcUrl(serverUrl);
                    times.part("postgres", postgres.millis());
                }
                long begun = System.nanoTime();
                pool.ready();
                Database.migrate(pool);
                times.part("schema", (System.nanoTime() - begun) / 1_000_000);
                relayPool.ready();
            } catch (Exception | Error e) {
                pool.failed(e);
                relayPool.failed(e);
                throw e;
            }
        }, () -> {
            relayPool.close();
            pool.close();
            if (postgres != null) {
                postgres.stop(EmbeddedPostgresServer::stop);
            }
        }), true, true);
        return new HikariDataSource[] {pool, relayPool};
    }

    private static CachingConnectionFactory broker(CamelContext context, Settings settings,
            BackgroundStart<EmbeddedBroker> embedded, String user, String password, StartupTimes times) throws Exception {
        String url = settings.optional("jobgate.broker.url").orElse(null);
        if (url == null) {
            // Awaited when the context starts, before the routes (whose JMS consumers need it) and
            // after they are loaded: nothing connects before then (the factory below connects lazily).
            context.addService(ManagedResource.startedAndStoppedBy("embedded-artemis", () -> {
                embedded.await();
                times.part("broker", embedded.millis());
            }, () -> embedded.stop(EmbeddedBroker::stop)), true, true);
            url = EmbeddedBroker.CLIENT_URL;
        }
        ActiveMQConnectionFactory artemis = new ActiveMQConnectionFactory(url);
        // No client-side buffering: a worker busy with a long provider call must not sit on
        // dispatch messages an idle worker could take.
        artemis.setConsumerWindowSize(0);
        if (user != null) {
            artemis.setUser(user);
            artemis.setPassword(password);
        }
        // One shared connection, sessions and producers cached: a relay round sends many messages. Reset
        // when the broker is lost, not when the client failed over to the backup by itself.
        CachingConnectionFactory caching = new FailoverKeepingConnectionFactory(artemis);
        caching.setSessionCacheSize(20);
        caching.setCacheConsumers(false);
        caching.setReconnectOnException(true);
        context.addService(ManagedResource.stoppedBy("jms-connection-factory", () -> {
            caching.destroy();
            artemis.close();
        }), true, true);
        return caching;
    }

    /**
     * The S3 client the beans and camel-aws2-s3 hold; the embedded server behind it is awaited when
     * the context starts, before any route. (A dynamic proxy of S3Client handed out here once cost
     * half a second of start-up: it loads and initialises every request class of the S3 API.)
     */
    private static S3Client objectStorage(CamelContext context, ObjectStorage.Starting s3, StartupTimes times)
            throws Exception {
        context.addService(ManagedResource.startedAndStoppedBy("s3", () -> {
            s3.started().await();
            times.part("s3", s3.started().millis());
        }, () -> s3.started().stop(ObjectStorage.Started::stop)), true, true);
        return s3.client();
    }
}
