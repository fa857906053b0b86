package io.jobgate.worker;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;

import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What is kept, and for how long (route {@code retention}, role sweeper). Jobs, attempts and the
 * ledger are evidence and stay. A published outbox event is removed once older than {@code
 * jobgate.retention.outbox-hours}, except a dispatch event of a job that is not final: a worker
 * leases a job only for its newest dispatch event, so that one stays while the job may still run.
 * The relay never touches published events, so the two never race. A webhook receipt is removed
 * once older than {@code jobgate.retention.webhook-receipts-hours}, which must exceed the signature
 * tolerance (a redelivery after that is refused as stale before any receipt is looked up). A tenant's
 * webhook delivery that ended (delivered, dead, cancelled) goes with its attempts once older than
 * {@code jobgate.retention.webhook-deliveries-hours}; a pending one stays.
 * Small batches, so no sweep holds many locks or runs long; each batch is picked through the time
 * index and deleted by key (= ANY of an array), never by a join that reads the whole table.
 */
public final class Retention {

    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final Duration outbox;
    private final Duration receipts;
    private final Duration deliveries;
    private final int batch;

    public Retention(JdbcTemplate jdbc, Clock clock, Duration outbox, Duration receipts, Duration webhookTolerance,
                     Duration deliveries, int batch) {
        this.deliveries = deliveries;
        if (receipts.compareTo(webhookTolerance.plusMinutes(1)) < 0) {
            throw new IllegalStateException("jobgate.retention.webhook-receipts-hours must exceed jobgate.webhooks.tolerance-seconds"
                    + " (a receipt must outlive the window in which its delivery may come again)");
        }
        this.jdbc = jdbc;
        this.clock = clock;
        this.outbox = outbox;
        this.receipts = receipts;
        this.batch = batch;
    }

    /** Route step: one batch of each; headers say how many went. */
    public void sweep(Exchange exchange) {
        exchange.getMessage().setHeader("outboxRemoved", removeOutbox());
        exchange.getMessage().setHeader("receiptsRemoved", removeReceipts());
        exchange.getMessage().setHeader("deliveriesRemoved", removeDeliveries());
    }

    /** Ended webhook deliveries past their keep (their attempts go with them, ON DELETE CASCADE). */
    public int removeDeliveries() {
        return jdbc.update("""
                DELETE FROM webhook_deliveries WHERE delivery_id = ANY (ARRAY(
                    SELECT delivery_id FROM webhook_deliveries WHERE state <> 'pending' AND ended_at < ?
                     ORDER BY ended_at LIMIT ? FOR UPDATE SKIP LOCKED))""",
                Timestamp.from(clock.instant().minus(deliveries)), batch);
    }

    public int removeOutbox() {
        return jdbc.update("""
                DELETE FROM outbox WHERE event_id = ANY (ARRAY(
                    SELECT o.event_id FROM outbox o
                     WHERE o.published_at IS NOT NULL AND o.published_at < ?
                       AND (o.event_type <> 'dispatch'
                            OR (SELECT j.finalized_at FROM jobs j WHERE j.job_id = o.job_id) IS NOT NULL)
                     ORDER BY o.published_at LIMIT ? FOR UPDATE SKIP LOCKED))""",
                Timestamp.from(clock.instant().minus(outbox)), batch);
    }

    public int removeReceipts() {
        return jdbc.update("""
                DELETE FROM webhook_receipts WHERE ctid = ANY (ARRAY(
                    SELECT ctid FROM webhook_receipts WHERE received_at < ?
                     ORDER BY received_at LIMIT ? FOR UPDATE SKIP LOCKED))""",
                Timestamp.from(clock.instant().minus(receipts)), batch);
    }
}
