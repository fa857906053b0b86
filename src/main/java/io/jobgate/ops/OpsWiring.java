package io.jobgate.ops;

import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import io.jobgate.job.JobTransitions;
import jakarta.jms.ConnectionFactory;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.StartupListener;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The wiring of ops, in two steps: the parts' health checks as soon as the parts exist, then jobgate's metrics
 * and the providers' health once the providers and the state machine are wired.
 */
public final class OpsWiring {

    private OpsWiring() {
    }

    public static void healthChecks(CamelContext context, DataSource dataSource, ConnectionFactory jms, S3Client s3, String bucket)
            throws Exception {
        Registry registry = context.getRegistry();
        // Health probes run on threads of their own (BackgroundHealthCheck), from the moment the gateway has
        // started: /observe/health is answered on the HTTP server's event loop and must never wait for a
        // server that is down.
        List<BackgroundHealthCheck> healthChecks = List.of(new DatabaseHealthCheck(dataSource),
                new BrokerHealthCheck(jms),
                new ObjectStorageHealthCheck(s3, bucket));
        registry.bind("databaseHealthCheck", healthChecks.get(0));
        registry.bind("brokerHealthCheck", healthChecks.get(1));
        registry.bind("objectStorageHealthCheck", healthChecks.get(2));
        context.addStartupListener(new StartupListener() {
            @Override
            public void onCamelContextStarted(CamelContext started, boolean alreadyStarted) {
                // probes start once every route runs (below)
            }

            @Override
            public void onCamelContextFullyStarted(CamelContext started, boolean alreadyStarted) {
                healthChecks.forEach(BackgroundHealthCheck::startProbing);
                started.getRegistry().lookupByNameAndType("providerGatesHealthCheck", BackgroundHealthCheck.class)
                        .startProbing();
            }
        });
    }

    /**
     * @param providers     the providers' names, one series each
     * @param providerNotes each provider's name and what health adds to its gate (its route not running, the classes
     *                      it was left out for, its canary)
     */
    public static Meters metrics(CamelContext context, JdbcTemplate jdbc, DataSource dataSource, Clock clock, List<String> providers,
                                 Supplier<Map<String, String>> providerNotes, JobTransitions transitions) {
        Registry registry = context.getRegistry();
        registry.bind("providerGatesHealthCheck", new ProviderGatesHealthCheck(dataSource, providerNotes, clock));
        // jobgate's series beside Camel's.
        Meters meters = new Meters(context, jdbc, clock, providers);
        registry.bind("meters", meters);
        transitions.observe(new TransitionMeters(meters));
        return meters;
    }
}
