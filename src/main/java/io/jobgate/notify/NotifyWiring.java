package io.jobgate.notify;

import java.time.Clock;

import io.jobgate.common.SettingsReader;
import io.jobgate.job.JobStore;
import io.jobgate.ops.Meters;
import jakarta.jms.ConnectionFactory;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;

/** The wiring of notify, tenants' webhooks (docs/webhooks.md): their endpoints, the fan-out into deliveries, the sender. */
public final class NotifyWiring {

    private NotifyWiring() {
    }

    public record Webhooks(WebhookEndpoints endpoints, DeliveryFanOut fanOut, WebhookDeliveries deliveries) {
    }

    public static Webhooks bind(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, DataSource dataSource,
                                ConnectionFactory jms, Clock clock, JobStore jobs, Meters meters) {
        Registry registry = context.getRegistry();
        // Their endpoints, which jobs may name (webhook_url).
        WebhookEndpoints webhookEndpoints = new WebhookEndpoints(jdbc, clock,
                new EndpointUrls(settings.bool("jobgate.tenant-webhooks.allow-http-loopback"),
                        settings.optional("jobgate.tenant-webhooks.allowed-networks").orElse(""), java.net.InetAddress::getAllByName));
        // A status round of the relay writes the deliveries of the events it takes.
        DeliveryFanOut deliveryFanOut = new DeliveryFanOut(jobs, clock);
        // The sender, and the retired subscription's drain.
        WebhookDeliveries webhookDeliveries = new WebhookDeliveries(jdbc, clock,
                DeliverySchedule.parse(settings.required("jobgate.tenant-webhooks.retry-schedule")));
        registry.bind("retiredFanOutSubscription", new RetiredFanOutSubscription(jms, dataSource, deliveryFanOut));
        registry.bind("webhookSender", new WebhookSender(webhookDeliveries, webhookEndpoints, meters, clock,
                new WebhookSender.Settings(settings.intValue("jobgate.tenant-webhooks.tenant-concurrency", 1, 1000),
                        settings.intValue("jobgate.tenant-webhooks.max-in-flight", 1, 100_000),
                        settings.seconds("jobgate.tenant-webhooks.timeout-seconds", 1, 300))));
        return new Webhooks(webhookEndpoints, deliveryFanOut, webhookDeliveries);
    }
}
