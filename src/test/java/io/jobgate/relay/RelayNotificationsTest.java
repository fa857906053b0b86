package io.jobgate.relay;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.Test;

import static org.awaitility.Awaitility.await;

/**
 * Another instance's admission (a job and its dispatch event committed by someone else, with the
 * notification admission sends) wakes this instance's relay at once; its poll is set to a minute
 * here, so only the notification can explain a dispatch within seconds.
 */
class RelayNotificationsTest extends GatewayTestBase {

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.relay.period-ms", "60000");
    }

    /** A job admitted elsewhere: the rows an admission writes that matter to the relay. */
    static UUID admittedElsewhere() {
        UUID id = UUID.randomUUID();
        Db.execute("""
                UPDATE tenant_accounts SET running_jobs = 0 WHERE tenant_id = 'globex';
                UPDATE tenant_releases SET running_jobs = 0 WHERE tenant_id = 'globex';
                UPDATE dispatch_window SET running = 0;
                DELETE FROM provider_window""");
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        jobs.job("globex").id(id).key("elsewhere-" + id).provider("simulator").insert();
        jobs.dispatch(id, "globex", java.time.Instant.now());
        return id;
    }

    static boolean dispatched(UUID id) {
        return Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND dispatched_at IS NOT NULL", id) == 1;
    }

    @BeanInject
    CamelContext context;

    @Test
    void anotherInstancesAdmissionWakesThisRelay() {
        await().atMost(Duration.ofSeconds(10)).until(() -> Db.count(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN jobgate_dispatch%'") >= 1);
        // Past the poll timer's first round, 0.5 s after its start (the next one is a minute away).
        await().atMost(Duration.ofSeconds(10)).until(() -> context.getRoute("outbox-relay-poll").getUptimeMillis() > 2_500);
        UUID quiet = admittedElsewhere();
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(() -> !dispatched(quiet));

        Db.execute("SELECT pg_notify('jobgate_dispatch', 'another-instance')");

        await().atMost(Duration.ofSeconds(5)).until(() -> dispatched(quiet));
    }
}
