package io.jobgate.pool;

import java.util.Map;
import java.util.UUID;

import com.github.tomakehurst.wiremock.WireMockServer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.anyRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.anyUrl;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A pool job whose submit reached its member but whose reply was lost is settled on that member by lookup, and never
 * sent to the other: pool {@code renders} = the bundled simulator (weight 1; it accepts the task and drops the
 * connection for a job correlated {@code sim-fault-lose_reply-…}, and answers a lookup by the job's Idempotency-Key)
 * and poolb (weight 0, a WireMock speaking like OpenAI Images, which would render at once).
 */
class PoolReconcileTest extends GatewayTestBase {

    WireMockServer b;

    @Override
    protected Map<String, String> settings() throws Exception {
        b = fakeProvider();
        return GatewayTestSupport.with(GatewayTestSupport.SIMULATING, Map.of(
                "jobgate.provider.poolb.base-url", b.baseUrl(),
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/pools/providers",
                "jobgate.pools.dirs", "src/test/resources/pools/lookup",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/pools/adapters/*.camel.yaml"));
    }

    @Test
    void aLostReplyIsSettledOnItsMemberByLookupAndTheOtherMemberNeverHearsOfTheJob() {
        b.stubFor(post(PoolFailoverTest.PATH).willReturn(aResponse().withStatus(200).withBody(PoolFailoverTest.pngReply())));
        ApiClient.Response r = api.send(api.request("/v1/jobs", ACME).header("Content-Type", "application/json")
                .header("Idempotency-Key", "k-" + UUID.randomUUID()).header("X-Correlation-Id", "sim-fault-lose_reply-" + UUID.randomUUID())
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(PoolFailoverTest.request("\"pool\": \"renders\""))).build());
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        assertThat(r.json().path("provider").asText()).isEqualTo("simulator");

        Jobs.awaitStatus(id, "succeeded");
        // One attempt, its reply lost (submission_unknown), then the task found by the reconciler's lookup on the simulator.
        assertThat(Db.rows("SELECT adapter, outcome FROM attempts WHERE job_id = '" + id + "' ORDER BY attempt"))
                .extracting(a -> a.get("adapter") + ":" + a.get("outcome")).containsExactly("simulator:submission_unknown");
        assertThat(Db.single("SELECT provider, pool, attempts FROM jobs WHERE job_id = ?", id))
                .containsEntry("provider", "simulator").containsEntry("pool", "renders").containsEntry("attempts", 1);
        assertThat(b.findAll(anyRequestedFor(anyUrl()))).as("poolb never hears of a job that may render on the simulator").isEmpty();
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isZero();
    }
}
