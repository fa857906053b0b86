package io.jobgate;

import java.util.List;
import java.util.Map;

import io.jobgate.support.ApiClient;
import io.jobgate.support.GatewayTestBase;
import org.apache.camel.CamelContext;
import org.apache.camel.ServiceStatus;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * An instance with {@code jobgate.roles = worker}: its workers consume jobs.dispatch, and nothing
 * else of the gateway runs on it — no job API (the REST routes are not built; /v1 is 404 even with a
 * valid key), no JMS intake, relay, sweeper or poller — while /observe stays up on the port.
 */
class WorkerOnlyInstanceTest extends GatewayTestBase {

    @BeanInject
    CamelContext context;

    @Override
    protected Map<String, String> settings() {
        // The test support sets the old per-role switches for every class; blank here, so the roles decide alone.
        return Map.of("jobgate.roles", "worker",
                "jobgate.relay.enabled", "", "jobgate.worker.enabled", "",
                "jobgate.sweeper.enabled", "", "jobgate.reconcile.enabled", "");
    }

    /** The roles are this class's alone: a gateway started later in this JVM without prepare() must not inherit them. */
    @AfterAll
    void clearRoles() {
        System.clearProperty("jobgate.roles");
    }

    @Test
    void theJobApiIsNotServedButHealthIs() {
        // 404 not_found, not 503 "retry in a moment": no retry will find the job API on this instance.
        ApiClient.Response list = api.get(ACME, "/v1/jobs");
        assertThat(list.status()).as(list.text()).isEqualTo(404);
        assertThat(list.code()).isEqualTo("not_found");
        ApiClient.Response post = api.postJob(ACME, "worker-only-1", """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "W AG", "invoice_id": "W-1", "currency": "EUR", "line_items": []}}""");
        assertThat(post.status()).as(post.text()).isEqualTo(404);
        assertThat(context.getRoutes()).as("no HTTP route started (the REST DSL's, the console's)").noneMatch(r ->
                r.getEndpoint().getEndpointUri().startsWith("platform-http:")
                        && context.getRouteController().getRouteStatus(r.getId()).isStarted());
        ApiClient.Response console = api.get(ADMIN, "/console/jobs");
        assertThat(console.status()).as(console.text()).isEqualTo(404);

        ApiClient.Response health = api.get(null, "/observe/health");
        assertThat(health.status()).as(health.text()).isEqualTo(200);
    }

    @Test
    void onlyTheWorkersConsume() {
        assertThat(context.getRouteController().getRouteStatus("worker")).isEqualTo(ServiceStatus.Started);
        for (String other : List.of("jms-intake", "outbox-relay", "outbox-relay-poll", "outbox-status-relay",
                "dispatch-dead-letters", "sweeper", "quarantine-sweeper", "reconciler")) {
            assertThat(context.getRouteController().getRouteStatus(other)).as(other).isNotEqualTo(ServiceStatus.Started);
        }
    }
}
