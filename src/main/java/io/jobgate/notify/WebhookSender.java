package io.jobgate.notify;

import io.jobgate.common.ApiProblem;
import io.jobgate.common.WebhookSignature;
import io.jobgate.ops.Meters;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.camel.Body;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends claimed deliveries (routes/tenant-webhooks.camel.yaml: claim-due-deliveries, then send-delivery
 * for each) by the Standard Webhooks specification: {@code webhook-id} (the delivery's, the same on every
 * attempt), {@code webhook-timestamp} (this attempt's), {@code webhook-signature} ({@code v1,} HMAC-SHA256 by
 * the endpoint's secret, and by its previous one while a rotation's overlap lasts). The request goes out
 * without waiting: a receiver that answers slowly or never holds no thread, only one of its tenant's few
 * places in flight, until the deadline ends it. Redirects are not followed (a 3xx is a failed attempt),
 * the receiver's body is not read, and the URL is checked again before each send.
 */
public final class WebhookSender {

    private static final Logger LOG = LoggerFactory.getLogger(WebhookSender.class);

    /** The settings ({@code jobgate.tenant-webhooks.*}). */
    public record Settings(int perTenant, int maxInFlight, Duration timeout) {
    }

    private final WebhookDeliveries deliveries;
    private final WebhookEndpoints endpoints;
    private final Meters meters;
    private final Clock clock;
    private final Settings settings;
    private final HttpClient http;
    private final AtomicInteger inFlight = new AtomicInteger();

    public WebhookSender(WebhookDeliveries deliveries, WebhookEndpoints endpoints, Meters meters, Clock clock, Settings settings) {
        this.deliveries = deliveries;
        this.endpoints = endpoints;
        this.meters = meters;
        this.clock = clock;
        this.settings = settings;
        this.http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER)
                .connectTimeout(settings.timeout().compareTo(Duration.ofSeconds(5)) < 0 ? settings.timeout() : Duration.ofSeconds(5))
                .build();
    }

    /** Route step: the due deliveries this instance has room for (its in-flight cap), fairly between tenants. */
    public List<WebhookDeliveries.Claimed> claimDue() {
        return deliveries.claim(settings.perTenant(), settings.maxInFlight() - inFlight.get(),
                settings.timeout().plusSeconds(10)); // the send's deadline, and a margin for its record
    }

    /** Deliveries this instance is sending now. */
    public int inFlight() {
        return inFlight.get();
    }

    /**
     * Where a send starts: its endpoint read, its URL checked again (a name resolved: DNS may be slow for one
     * tenant's host) and its request handed to the HTTP client, off the round's one thread, so no tenant's
     * slow name holds up another's sends. A thread only while it does that; the wait for the receiver holds none.
     */
    private final java.util.concurrent.ExecutorService starts = java.util.concurrent.Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "tenant-webhook-send");
        t.setDaemon(true);
        return t;
    });

    /** Route step: starts one delivery's attempt; its record is written when the receiver answers or the deadline passes. */
    public void send(@Body WebhookDeliveries.Claimed claimed) {
        inFlight.incrementAndGet();
        try {
            starts.execute(() -> {
                try {
                    start(claimed);
                } catch (RuntimeException e) {
                    inFlight.decrementAndGet();
                    LOG.warn("webhook delivery {}: attempt {} not started ({}); it is sent again when its claim runs out",
                            claimed.deliveryId(), claimed.attempt(), e.toString());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException e) {
            inFlight.decrementAndGet();
        }
    }

    private void start(WebhookDeliveries.Claimed claimed) {
        Optional<WebhookEndpoints.Target> target = endpoints.target(claimed.endpointId());
        if (target.isEmpty() || !target.get().enabled()) {
            inFlight.decrementAndGet();
            deliveries.cancelPending(claimed.endpointId(), "endpoint disabled");
            return;
        }
        URI uri;
        try {
            uri = endpoints.urls().check(target.get().url());
        } catch (ApiProblem refused) {
            try {
                finish(claimed, new WebhookDeliveries.Result(0, refused.code() + ": " + refused.getMessage(), 0, null));
            } finally {
                inFlight.decrementAndGet();
            }
            return;
        }
        byte[] body = claimed.body().getBytes(StandardCharsets.UTF_8);
        long timestamp = clock.instant().getEpochSecond();
        HttpRequest request = HttpRequest.newBuilder(uri).timeout(settings.timeout())
                .header("Content-Type", "application/json")
                .header("User-Agent", "jobgate-webhooks")
                .header("webhook-id", claimed.deliveryId())
                .header("webhook-timestamp", Long.toString(timestamp))
                .header("webhook-signature", WebhookSignature.header(target.get().secrets(), claimed.deliveryId(), timestamp, body))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body)).build();
        long started = System.nanoTime();
        http.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream()).whenComplete((response, failure) -> {
            long ms = (System.nanoTime() - started) / 1_000_000;
            try {
                finish(claimed, failure == null ? answered(response, ms) : new WebhookDeliveries.Result(0, failed(failure), ms, null));
            } catch (RuntimeException e) {
                // Not recorded (the database, most likely): the claim runs out and the delivery is sent again.
                LOG.warn("webhook delivery {}: attempt {} not recorded ({}); it is sent again when its claim runs out",
                        claimed.deliveryId(), claimed.attempt(), e.toString());
            } finally {
                inFlight.decrementAndGet();
            }
        });
    }

    private static WebhookDeliveries.Result answered(HttpResponse<InputStream> response, long ms) {
        try (InputStream ignored = response.body()) {
            // Closed unread: what the receiver says beyond its status is not kept (nor waited for).
        } catch (java.io.IOException e) {
            // closing only
        }
        int status = response.statusCode();
        String error = null;
        if (status >= 300 && status < 400) {
            error = "redirect not followed (" + status + " to " + response.headers().firstValue("Location").orElse("?") + ")";
        } else if (status == 410) {
            error = "endpoint gone (410): disabled";
        } else if (status < 200 || status >= 300) {
            error = "HTTP " + status;
        }
        Duration retryAfter = response.headers().firstValue("Retry-After").flatMap(WebhookSender::seconds).orElse(null);
        return new WebhookDeliveries.Result(status, error, ms, retryAfter);
    }

    private static Optional<Duration> seconds(String value) {
        try {
            long s = Long.parseLong(value.trim());
            return s >= 0 ? Optional.of(Duration.ofSeconds(Math.min(s, 86_400))) : Optional.empty();
        } catch (NumberFormatException e) {
            return Optional.empty(); // an HTTP date: the schedule's own delay is taken
        }
    }

    private static String failed(Throwable failure) {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        if (cause instanceof HttpTimeoutException) {
            return "no answer within the deadline";
        }
        return "not delivered: " + cause.getClass().getSimpleName() + (cause.getMessage() == null ? "" : " (" + cause.getMessage() + ")");
    }

    private void finish(WebhookDeliveries.Claimed claimed, WebhookDeliveries.Result result) {
        if (result.gone()) {
            endpoints.disable(claimed.endpointId(), "the receiver answered 410 Gone to delivery " + claimed.deliveryId());
        }
        String state = deliveries.record(claimed, result);
        if (result.gone()) {
            deliveries.cancelPending(claimed.endpointId(), "endpoint gone (410): disabled");
        }
        String outcome = switch (state) {
            case "pending" -> "retry";
            default -> state;
        };
        meters.tenantWebhook(claimed.tenantId(), outcome, Duration.ofMillis(result.durationMs()));
        if (!result.delivered()) {
            LOG.info("webhook delivery {} of job {} to endpoint {}: attempt {} {}; now {}", claimed.deliveryId(), claimed.jobId(),
                    claimed.endpointId(), claimed.attempt(), result.error(), state);
        }
    }
}
