package io.jobgate.infra;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The wiring of infra: first what this instance is (its roles, its clock, its folders), then the parts under
 * the gateway (PostgreSQL, Artemis, S3, side parts) and the beans made of them.
 */
public final class InfraWiring {

    private static final Logger LOG = LoggerFactory.getLogger(InfraWiring.class);

    private InfraWiring() {
    }

    /** What this instance runs, the one clock of its decisions, where it keeps its data and reads its configuration. */
    public record Instance(Roles roles, Clock clock, Path dataDir, Path configDir) {
    }

    /** The parts and what is made of them: the pools, the retried transactions, the bucket every stored object goes in. */
    public record Stores(Parts parts, HikariDataSource dataSource, JdbcTemplate jdbc, TransactionTemplate transactions, S3Client s3,
                         String bucket) {
    }

    public static Instance instance(CamelContext context, Settings settings) throws IOException {
        // What this instance runs, decided first: a wrong role name stops the start before any part starts.
        Roles roles = Roles.from(settings);
        roles.placeholders().forEach(context.getPropertiesComponent()::addOverrideProperty);
        roles.notes().forEach(note -> LOG.warn("{} (an old per-role switch; use {})", note, Roles.SETTING));
        // Which routes start here (a route's group is its role; a provider's enabled switch): bound before
        // the route files are read, and asked again for each file reloaded later.
        context.getRegistry().bind("routeStartRules", new RouteStartRules(roles,
                settings.bool("jobgate.evaluation.enabled"), settings::optional));
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
        return new Instance(roles, clock, dataDir, configDir);
    }

    /**
     * Starts the parts, each embedded unless a URL points at an external server; their servers and pools are
     * Camel services, so the context stops them after the routes, in reverse order.
     *
     * @param producerPasswordDigests the tenants' JMS producers (user → SHA-256 of the password), for an embedded broker
     * @param producerTenants         the same users → their tenant
     */
    public static Stores stores(CamelContext context, Settings settings, Path dataDir, StartupTimes startupTimes,
                                Map<String, String> producerPasswordDigests, Map<String, String> producerTenants) throws Exception {
        Parts parts = Parts.start(context, settings, dataDir, startupTimes, producerPasswordDigests, producerTenants);
        HikariDataSource dataSource = parts.dataSource();
        Registry registry = context.getRegistry();
        registry.bind("relayDataSource", parts.relayDataSource());
        registry.bind("jmsConnectionFactory", parts.jms());
        registry.bind("s3Client", parts.s3());
        registry.bind("dataSource", dataSource);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        // Deadlocks, serialization failures and a failover of the database run the transaction again
        // instead of losing an outcome.
        TransactionTemplate transactions = new RetryingTransactions(dataSource, 3,
                settings.seconds("jobgate.db.failover-wait-seconds", 0, 3600));
        return new Stores(parts, dataSource, jdbc, transactions, parts.s3(), settings.required("jobgate.s3.bucket"));
    }
}
