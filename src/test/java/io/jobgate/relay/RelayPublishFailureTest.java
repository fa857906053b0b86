package io.jobgate.relay;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.JMSException;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A round whose publish the broker refuses (a failover under way) ends its claims within a second
 * instead of holding them their whole length, and leaves them claimed (run out, not cleared), so the
 * next round publishes them again on the slot their jobs already took. The broker is refused by a
 * connection factory that fails as a broker being failed over does; the database is the real one.
 * No relay runs in this gateway: the claim is the test's own.
 */
class RelayPublishFailureTest extends GatewayTestBase {

    @BeanInject("relayDataSource")
    javax.sql.DataSource relayDataSource;
    @BeanInject
    CamelContext context;

    @Override
    protected Map<String, String> settings() {
        return Map.of("jobgate.relay.enabled", "false");
    }

    @Test
    void aRefusedPublishEndsItsClaimsInASecondAndLeavesThemForTheReclaim() {
        ApiClient.Response r = api.postJob(ACME, "refused-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "Refused AG", "invoice_id": "R-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        String job = r.json().path("job_id").asText();
        long event = Db.count("SELECT event_id FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch'", job);
        String token = UUID.randomUUID().toString();
        Instant now = Instant.now();
        Db.update("UPDATE outbox SET claimed_until = ?, claim_token = ?::uuid WHERE event_id = ?",
                Timestamp.from(now.plusSeconds(30)), token, event);

        ConnectionFactory failingOver = (ConnectionFactory) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {ConnectionFactory.class}, (proxy, method, args) -> {
                    throw new JMSException("AMQ219016: Connection failure detected. Unblocking a blocking call that will never get a response");
                });
        OutboxRelay relay = new OutboxRelay(failingOver, relayDataSource, Clock.systemUTC(),
                new RelaySettings(true, 100, 30, 100, 4, 0), Map.of(), (connection, taken) -> { }, new RelayPace(0));
        Exchange round = new DefaultExchange(context);
        round.getMessage().setBody(List.of(Map.of("event_id", event, "job_id", UUID.fromString(job), "tenant_id", "acme")));
        round.getMessage().setHeader("claimToken", token);

        assertThatThrownBy(() -> relay.publishDispatch(round)).isInstanceOf(JMSException.class);
        Timestamp until = (Timestamp) Db.single("SELECT claimed_until FROM outbox WHERE event_id = ?", event).get("claimed_until");
        assertThat(until).as("still claimed, so a reclaim (no second slot) publishes it").isNotNull();
        assertThat(until.toInstant()).as("ended within a second, not after the claim's 30 s")
                .isBefore(Instant.now().plus(Duration.ofSeconds(2)));
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE event_id = ? AND published_at IS NULL", event)).isEqualTo(1);
    }
}
