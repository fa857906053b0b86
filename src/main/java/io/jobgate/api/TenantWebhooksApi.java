package io.jobgate.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.job.JobStore;
import io.jobgate.notify.WebhookDeliveries;
import io.jobgate.notify.WebhookEndpoints;
import io.jobgate.tenant.Tenant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.camel.Exchange;

/**
 * {@code /v1/webhooks/...}: a tenant's webhook endpoints (made, listed, changed, deleted, their secret
 * rotated), replay, the tenant's dead deliveries; {@code GET /v1/jobs/{id}/deliveries}; and the
 * operator's view and redrive of every tenant's dead deliveries (docs/webhooks.md).
 */
public final class TenantWebhooksApi {

    private static final int MAX_BODY_BYTES = 16 * 1024;

    private final WebhookEndpoints endpoints;
    private final WebhookDeliveries deliveries;
    private final JobStore jobs;
    private final Duration defaultOverlap;

    public TenantWebhooksApi(WebhookEndpoints endpoints, WebhookDeliveries deliveries, JobStore jobs, Duration defaultOverlap) {
        this.endpoints = endpoints;
        this.deliveries = deliveries;
        this.jobs = jobs;
        this.defaultOverlap = defaultOverlap;
    }

    /** {@code POST /v1/webhooks/endpoints}: 201 with the endpoint and its secret (shown this once). */
    public void create(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        JsonNode body = body(exchange, true);
        WebhookEndpoints.Created created = endpoints.create(tenant.id(), text(body, "url", true), eventTypes(body),
                body.path("enabled").isMissingNode() || body.path("enabled").isNull() || bool(body, "enabled"));
        Map<String, Object> view = new LinkedHashMap<>(created.endpoint().view());
        view.put("secret", created.secret());
        HttpReply.json(exchange, 201, view, Map.of("Location", "/v1/webhooks/endpoints/" + created.endpoint().id()));
    }

    public void list(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        HttpReply.json(exchange, 200, Map.of("endpoints", endpoints.list(tenant.id()).stream().map(WebhookEndpoints.Endpoint::view)
                .toList()), Map.of());
    }

    public void get(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        HttpReply.json(exchange, 200, endpoints.get(tenant.id(), endpointId(exchange)).view(), Map.of());
    }

    /** {@code PATCH}: any of url, event_types, enabled. */
    public void update(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        JsonNode body = body(exchange, true);
        List<String> types = body.has("event_types") ? eventTypes(body) : null;
        Boolean enabled = body.has("enabled") ? bool(body, "enabled") : null;
        HttpReply.json(exchange, 200, endpoints.update(tenant.id(), endpointId(exchange), text(body, "url", false), types, enabled)
                .view(), Map.of());
    }

    public void delete(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        endpoints.delete(tenant.id(), endpointId(exchange));
        HttpReply.write(exchange, 204, HttpReply.JSON, null, Map.of());
    }

    /** {@code POST .../rotate-secret}: a new secret; the old one signs beside it for {@code overlap_seconds} (default a day). */
    public void rotate(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        JsonNode body = body(exchange, false);
        Duration overlap = defaultOverlap;
        if (body.has("overlap_seconds")) {
            JsonNode o = body.get("overlap_seconds");
            if (!o.canConvertToLong() || !o.isIntegralNumber() || o.asLong() < 0 || o.asLong() > 7 * 86_400) {
                throw ApiProblem.invalidInput("overlap_seconds", "'overlap_seconds' is a whole number of seconds, 0 to 604800.");
            }
            overlap = Duration.ofSeconds(o.asLong());
        }
        UUID id = endpointId(exchange);
        String secret = endpoints.rotate(tenant.id(), id, overlap);
        Map<String, Object> view = new LinkedHashMap<>(endpoints.get(tenant.id(), id).view());
        view.put("secret", secret);
        HttpReply.json(exchange, 200, view, Map.of());
    }

    /** {@code POST .../replay?since=}: the endpoint's deliveries made since then are sent again (same ids, same bodies). */
    public void replay(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        UUID id = endpointId(exchange);
        endpoints.get(tenant.id(), id);
        int replayed = deliveries.replay(tenant.id(), id, WebhookDeliveries.since(exchange.getIn().getHeader("since", String.class)));
        HttpReply.json(exchange, 202, Map.of("replayed", replayed), Map.of());
    }

    /** {@code GET /v1/webhooks/deliveries/dead}: the tenant's deliveries past their schedule. */
    public void dead(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        HttpReply.json(exchange, 200, Map.of("deliveries", deliveries.dead(tenant.id(), 500)), Map.of());
    }

    /** {@code GET /v1/jobs/{id}/deliveries}: the job's deliveries, their attempts, status codes and next try. */
    public void ofJob(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        String raw = exchange.getIn().getHeader("jobId", String.class);
        UUID jobId;
        try {
            jobId = UUID.fromString(raw);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw ApiProblem.of(404, "job_not_found", "No job '" + raw + "'.");
        }
        jobs.find(tenant.id(), jobId).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job '" + raw + "'."));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job_id", jobId.toString());
        body.put("deliveries", deliveries.ofJob(jobId));
        HttpReply.json(exchange, 200, body, Map.of());
    }

    /** Operator ({@code GET /v1/admin/webhooks/dead}, admin key): every tenant's dead deliveries, or {@code ?tenant=}'s. */
    public void adminDead(Exchange exchange) {
        HttpReply.json(exchange, 200, Map.of("deliveries", deliveries.dead(tenantParam(exchange), 1000)), Map.of());
    }

    /** Operator ({@code POST /v1/admin/webhooks/dead/redrive}): dead deliveries sent again, their schedule from its start. */
    public void adminRedrive(Exchange exchange) {
        HttpReply.json(exchange, 200, Map.of("redriven", deliveries.redriveDead(tenantParam(exchange))), Map.of());
    }

    private static String tenantParam(Exchange exchange) {
        String tenant = exchange.getIn().getHeader("tenant", String.class);
        return tenant == null || tenant.isBlank() ? null : tenant.trim();
    }

    private static UUID endpointId(Exchange exchange) {
        String raw = exchange.getIn().getHeader("endpointId", String.class);
        try {
            return UUID.fromString(raw);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw ApiProblem.of(404, "endpoint_not_found", "No webhook endpoint '" + raw + "'.");
        }
    }

    private static JsonNode body(Exchange exchange, boolean required) {
        byte[] bytes = exchange.getIn().getBody(byte[].class);
        if (bytes == null || bytes.length == 0) {
            if (required) {
                throw ApiProblem.of(400, "malformed_json", "Send one JSON object.");
            }
            return Json.MAPPER.createObjectNode();
        }
        if (bytes.length > MAX_BODY_BYTES) {
            throw ApiProblem.of(413, "request_too_large", "At most " + MAX_BODY_BYTES + " bytes.");
        }
        return Json.parseObject(bytes);
    }

    private static String text(JsonNode body, String field, boolean required) {
        JsonNode value = body.get(field);
        if (value == null || value.isNull()) {
            if (required) {
                throw ApiProblem.invalidInput(field, "'" + field + "' is required.");
            }
            return null;
        }
        if (!value.isTextual()) {
            throw ApiProblem.invalidInput(field, "'" + field + "' is a string.");
        }
        return value.asText();
    }

    private static boolean bool(JsonNode body, String field) {
        JsonNode value = body.get(field);
        if (value == null || !value.isBoolean()) {
            throw ApiProblem.invalidInput(field, "'" + field + "' is true or false.");
        }
        return value.asBoolean();
    }

    private static List<String> eventTypes(JsonNode body) {
        JsonNode types = body.get("event_types");
        if (types == null || types.isNull()) {
            return null;
        }
        if (!types.isArray()) {
            throw ApiProblem.invalidInput("event_types", "'event_types' is an array of event types.");
        }
        List<String> list = new ArrayList<>();
        types.forEach(t -> list.add(t.isTextual() ? t.asText() : null));
        return list;
    }
}
