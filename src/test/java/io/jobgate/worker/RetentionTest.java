package io.jobgate.worker;

import java.time.Clock;
import java.time.Duration;
import java.util.UUID;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Retention removes only what its rule allows: published events past their grace (but never the
 * newest dispatch event of a job still open, by which a worker leases it) and old webhook receipts;
 * the relay goes on publishing meanwhile.
 */
class RetentionTest extends GatewayTestBase {

    @BeanInject
    Retention retention;

    String submit(String key) {
        ApiClient.Response r = api.postJob(ACME, key, """
                {"preset_id": "invoice-clean", "aspect_class": "square",
                 "inputs": {"supplier_name": "Kept AG", "invoice_id": "R-1", "currency": "EUR", "line_items": []}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return r.json().path("job_id").asText();
    }

    long published(String job, String type) {
        return Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid AND event_type = ? AND published_at IS NOT NULL", job, type);
    }

    @Test
    void oldPublishedEventsGoExceptTheDispatchOfAnOpenJobAndOldReceiptsGo() {
        String cancelled = submit("ret-" + UUID.randomUUID());
        String open = submit("ret-" + UUID.randomUUID());
        assertThat(api.post(ACME, "/v1/jobs/" + cancelled + "/cancel").status()).isEqualTo(200);
        await().atMost(Duration.ofSeconds(10)).until(() -> published(cancelled, "status") >= 2 && published(open, "dispatch") == 1
                && published(open, "status") >= 1);
        long openDispatch = Db.count("SELECT max(event_id) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch'", open);
        // Two days pass for everything published so far.
        Db.execute("UPDATE outbox SET published_at = published_at - interval '2 days' WHERE published_at IS NOT NULL");
        Db.execute("""
                INSERT INTO webhook_receipts (provider, webhook_id, outcome, received_at) VALUES
                    ('fakeasync', 'msg-old', 'applied', now() - interval '2 days'),
                    ('fakeasync', 'msg-new', 'applied', now() - interval '1 hour')""");

        int removed = 0;
        for (int n; (n = retention.removeOutbox()) > 0; ) {
            removed += n;
        }
        assertThat(removed).isPositive();
        assertThat(Db.count("SELECT count(*) FROM outbox WHERE job_id = ?::uuid", cancelled)).as("a final job's events").isZero();
        assertThat(published(open, "status")).as("an open job's status events").isZero();
        assertThat(Db.count("SELECT max(event_id) FROM outbox WHERE job_id = ?::uuid AND event_type = 'dispatch'", open))
                .as("the newest dispatch event of an open job stays: a worker leases the job by it").isEqualTo(openDispatch);

        assertThat(retention.removeReceipts()).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'msg-new'")).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM webhook_receipts WHERE webhook_id = 'msg-old'")).isZero();

        // The relay is unaffected: a new job is dispatched as before.
        String later = submit("ret-" + UUID.randomUUID());
        await().atMost(Duration.ofSeconds(10)).until(() -> published(later, "dispatch") == 1);
    }

    @Test
    void endedWebhookDeliveriesGoWithTheirAttemptsAfterTheirKeepAndPendingOnesStay() {
        Db.execute("""
                INSERT INTO webhook_endpoints (endpoint_id, tenant_id, url, event_types, secret, created_at, updated_at)
                VALUES ('00000000-0000-0000-0000-00000000e001', 'acme', 'https://203.0.113.7/kept', '{job.succeeded}', 'whsec_a',
                        now(), now())""");
        for (String[] d : new String[][] {{"msg_old_done", "delivered", "now() - interval '40 days'"},
                {"msg_old_dead", "dead", "now() - interval '31 days'"}, {"msg_new_done", "delivered", "now() - interval '1 day'"},
                {"msg_old_pending", "pending", "NULL"}}) {
            Db.execute("INSERT INTO webhook_deliveries (delivery_id, endpoint_id, tenant_id, job_id, seq, event_type, occurred_at, state,"
                    + " next_attempt_at, created_at, ended_at) VALUES ('" + d[0] + "', '00000000-0000-0000-0000-00000000e001', 'acme',"
                    + " gen_random_uuid(), " + Math.abs(d[0].hashCode()) + ", 'job.succeeded', now() - interval '41 days', '" + d[1] + "',"
                    + " now() - interval '41 days', now() - interval '41 days', " + d[2] + ")");
            Db.execute("INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, http_status)"
                    + " VALUES ('" + d[0] + "', 1, now() - interval '41 days', 5, 500)");
        }
        assertThat(retention.removeDeliveries()).isEqualTo(2);
        assertThat(Db.rows("SELECT delivery_id FROM webhook_deliveries ORDER BY delivery_id")).extracting(r -> r.get("delivery_id"))
                .containsExactly("msg_new_done", "msg_old_pending");
        assertThat(Db.count("SELECT count(*) FROM webhook_delivery_attempts")).as("the attempts went with them").isEqualTo(2);
    }

    @Test
    void receiptsMustOutliveTheSignatureWindow() {
        assertThatThrownBy(() -> new Retention(null, Clock.systemUTC(), Duration.ofHours(24), Duration.ofMinutes(5),
                Duration.ofMinutes(5), Duration.ofDays(30), 10)).hasMessageContaining("tolerance");
    }
}
