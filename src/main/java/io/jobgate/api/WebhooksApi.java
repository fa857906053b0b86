package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.job.WaitingJob;
import io.jobgate.common.WebhookSignature;
import io.jobgate.reconcile.FalWebhookSignature;
import io.jobgate.adapter.AdapterCaller;
import io.jobgate.adapter.AdapterContract;
import io.jobgate.adapter.AdapterResult;
import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@code POST /v1/providers/{provider}/webhook}: verifies the Standard Webhooks signature with the
 * provider's secret ({@code jobgate.provider.<name>.webhook-secret}) and timestamp tolerance,
 * lets the adapter read the payload (operation {@code webhook}), and applies it to the job waiting on
 * that provider task. A bad signature or a stale timestamp gets 401 and touches no job. A genuine
 * delivery whose {@code webhook-id} was already processed is acknowledged with 2xx and touches
 * nothing: a provider resends when it did not see our 2xx, and a 4xx would count as a failed
 * delivery (Standard Webhooks senders then retry or disable the endpoint).
 *
 * <p>A provider whose secret is the bundled simulator's shipped one (config/application.properties prints it,
 * so anyone can sign with it) is heard from this machine only: from any other address its webhooks get
 * 401 whatever they carry, unless {@code jobgate.demo = true} says a reachable demo is what is wanted
 * (docs/operating.md, "Demo credentials").
 */
public final class WebhooksApi {

    static final int MAX_BODY_BYTES = 1024 * 1024;

    private final ProviderCatalog providers;
    private final AdapterCaller adapters;
    private final Reconciler reconciler;
    private final JdbcTemplate jdbc;
    private final Clock clock;
    private final Duration tolerance;
    private final FalWebhookSignature falSignatures;
    private final boolean demo;

    public WebhooksApi(ProviderCatalog providers, AdapterCaller adapters, Reconciler reconciler, JdbcTemplate jdbc, Clock clock,
                       Duration tolerance, boolean demo) {
        this.providers = providers;
        this.adapters = adapters;
        this.reconciler = reconciler;
        this.jdbc = jdbc;
        this.clock = clock;
        this.tolerance = tolerance;
        this.falSignatures = new FalWebhookSignature(clock);
        this.demo = demo;
    }

    /**
     * Is a webhook verified with {@code secret} refused from where it came? Only the shipped simulator secret
     * is, only beyond loopback, and not when the operator runs a reachable demo on purpose.
     */
    static boolean shippedSecretRefused(String secret, boolean fromLoopback, boolean demo) {
        return !fromLoopback && !demo && io.jobgate.tenant.DemoCredentials.shippedWebhookSecret(secret);
    }

    /**
     * Did the request come from this machine? The caller's address as Vert.x saw it; without one (not over
     * HTTP) it did not, so the shipped secret stays refused.
     */
    static boolean fromLoopback(Exchange exchange) {
        Object remote = exchange.getIn().getHeader(
                org.apache.camel.component.platform.http.vertx.VertxPlatformHttpConstants.REMOTE_ADDRESS);
        if (!(remote instanceof io.vertx.core.net.SocketAddress address) || address.hostAddress() == null) {
            return false;
        }
        try {
            return java.net.InetAddress.getByName(address.hostAddress()).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    /**
     * The job a webhook URL names ({@code ?job=<id>}, for adapters that put it there) when no job
     * knows its task: a submit whose reply was lost. Only a job of this provider still waiting
     * without a task reference qualifies; the signature already proved the provider sent it.
     */
    private static Optional<WaitingJob> lostReply(Optional<WaitingJob> named) {
        return named.filter(j -> j.providerTask() == null);
    }

    /**
     * The job of this provider a webhook URL names ({@code ?job=<id>}), if any; when the URL names the attempt
     * too ({@code &attempt=<n>}), only while the job is on that attempt: a late delivery about an earlier
     * attempt's task (a canary candidate's, whose call was cut short and whose job went on to the stable
     * revision) must not be taken for the task of the attempt the job waits on now.
     */
    private Optional<WaitingJob> named(String provider, String jobParam, String attemptParam) {
        if (jobParam == null) {
            return Optional.empty();
        }
        try {
            Integer attempt = attemptParam == null || attemptParam.isBlank() ? null : Integer.valueOf(attemptParam.trim());
            return reconciler.find(java.util.UUID.fromString(jobParam.trim()))
                    .filter(j -> j.provider().equals(provider) && (attempt == null || j.attempts() == attempt));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    public void receive(Exchange exchange) {
        String name = exchange.getIn().getHeader("provider", String.class);
        Provider provider = providers.find(name).filter(p -> p.supports(AdapterContract.WEBHOOK))
                .orElseThrow(() -> ApiProblem.of(404, "unknown_webhook", "No provider '" + name + "' takes webhooks here."));
        boolean fal = "fal-ed25519".equals(provider.settings().get("webhook-scheme"));
        String secret = provider.settings().get(fal ? "webhook-jwks-url" : "webhook-secret");
        if (secret == null || secret.isBlank()) {
            throw ApiProblem.of(404, "unknown_webhook", "Provider '" + name + "' has no webhook "
                    + (fal ? "JWKS URL" : "secret") + " configured.");
        }
        if (!fal && shippedSecretRefused(secret, fromLoopback(exchange), demo)) {
            // Checked before the signature: a valid one proves nothing when the key is public.
            throw ApiProblem.of(401, "invalid_signature", "Provider '" + name + "' verifies webhooks with the shipped "
                    + "simulator secret, taken from this machine only: set a secret of your own "
                    + "(jobgate.simulator.webhook-secret for the bundled simulator; docs/operating.md, \"Demo credentials\").");
        }
        byte[] body = Optional.ofNullable(exchange.getIn().getBody(byte[].class)).orElse(new byte[0]);
        if (body.length > MAX_BODY_BYTES) {
            throw ApiProblem.of(413, "request_too_large", "A webhook is at most " + MAX_BODY_BYTES + " bytes.");
        }
        String id;
        Optional<String> invalid;
        if (fal) {
            // fal resends a delivery with the same request id: that is the dedupe key.
            Map<String, String> headers = new java.util.HashMap<>();
            for (String h : new String[] {FalWebhookSignature.REQUEST_ID, FalWebhookSignature.USER_ID,
                    FalWebhookSignature.TIMESTAMP, FalWebhookSignature.SIGNATURE}) {
                headers.put(h, exchange.getIn().getHeader(h, String.class));
            }
            id = headers.get(FalWebhookSignature.REQUEST_ID);
            invalid = falSignatures.verify(secret, headers, body, tolerance);
        } else {
            id = exchange.getIn().getHeader("webhook-id", String.class);
            invalid = WebhookSignature.verify(secret, id, exchange.getIn().getHeader("webhook-timestamp", String.class),
                    exchange.getIn().getHeader("webhook-signature", String.class), body, clock.instant(), tolerance);
        }
        if (invalid.isPresent()) {
            throw ApiProblem.of(401, "invalid_signature", "Webhook signature refused: " + invalid.get() + ".");
        }
        Optional<Map<String, Object>> seen = jdbc.queryForList(
                "SELECT job_id FROM webhook_receipts WHERE provider = ? AND webhook_id = ?", name, id).stream().findFirst();
        if (seen.isPresent()) {
            Object jobId = seen.get().get("job_id");
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("matched", jobId != null);
            if (jobId != null) {
                reply.put("job_id", jobId.toString());
            }
            reply.put("changed", false);
            reply.put("replayed", true);
            HttpReply.json(exchange, 200, reply, Map.of());
            return;
        }
        // A delivery whose URL names its job is read with that job's record of its task (JobgateProviderState:
        // what fal bills comes from the order kept there), which counts only if the delivery's task is that job's.
        Optional<WaitingJob> named = named(name, exchange.getIn().getHeader("job", String.class),
                exchange.getIn().getHeader("attempt", String.class));
        String givenState = named.map(WaitingJob::providerState).orElse(null);
        AdapterResult evidence = adapters.call(provider, AdapterContract.WEBHOOK, new String(body, StandardCharsets.UTF_8),
                givenState == null ? Map.of() : Map.of(AdapterContract.PROVIDER_STATE, givenState));
        Optional<WaitingJob> job = evidence.providerTask() == null ? Optional.empty()
                : reconciler.findByTask(name, evidence.providerTask());
        if (job.isEmpty() && evidence.providerTask() != null) {
            job = lostReply(named);
        }
        if (givenState != null && !job.map(WaitingJob::jobId).equals(named.map(WaitingJob::jobId))) {
            evidence = evidence.withoutGivenState();
        }
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("matched", job.isPresent());
        String outcome = null;
        if (job.isPresent()) {
            Reconciler.Applied applied = reconciler.apply(job.get(), evidence, "webhook");
            reply.put("job_id", job.get().jobId().toString());
            reply.put("changed", applied.changed());
            outcome = applied.detail();
        }
        // Recorded after applying: a delivery that failed half-way may come again and be applied then.
        jdbc.update("""
                INSERT INTO webhook_receipts (provider, webhook_id, job_id, outcome) VALUES (?, ?, ?, ?)
                ON CONFLICT DO NOTHING""", name, id, job.map(WaitingJob::jobId).orElse(null), outcome);
        HttpReply.json(exchange, 200, reply, Map.of());
    }
}
