package io.jobgate.api;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.canary.CanaryLifecycle;
import io.jobgate.canary.CanaryViews;
import io.jobgate.common.ApiProblem;
import org.apache.camel.Exchange;

/**
 * Operator calls on canary candidates (admin key; docs/operator-api.md): {@code GET /v1/admin/canaries}
 * lists them with their gates and actions; {@code POST /v1/admin/providers/{provider}/canary/stop},
 * {@code …/promote} and {@code …/restart} act on the provider's newest canary, each recorded with who
 * ({@code operator}, required) and when. {@code GET /v1/admin/evaluations} is what {@code jobgate evaluate} prints.
 */
public final class CanaryAdmin {

    private final CanaryLifecycle canaries;
    private final CanaryViews views;
    private final io.jobgate.evaluation.Evaluations evaluations;
    private final java.time.Clock clock;

    public CanaryAdmin(CanaryLifecycle canaries, CanaryViews views, io.jobgate.evaluation.Evaluations evaluations,
                       java.time.Clock clock) {
        this.canaries = canaries;
        this.views = views;
        this.evaluations = evaluations;
        this.clock = clock;
    }

    /**
     * {@code GET /v1/admin/evaluations?since=} (an RFC 3339 instant or a date; default 24 hours ago): per
     * preset and revision, the outputs read back since then (docs/evaluation.md).
     */
    public void evaluations(Exchange exchange) {
        String since = exchange.getIn().getHeader("since", String.class);
        java.time.Instant from;
        try {
            from = since == null || since.isBlank() ? clock.instant().minus(java.time.Duration.ofHours(24))
                    : since.length() == 10 ? java.time.LocalDate.parse(since).atStartOfDay(java.time.ZoneOffset.UTC).toInstant()
                    : java.time.OffsetDateTime.parse(since).toInstant();
        } catch (java.time.format.DateTimeParseException e) {
            throw ApiProblem.of(400, "invalid_parameter", "\"since\" is a date (2026-12-01) or an RFC 3339 instant.")
                    .with("field", "since");
        }
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("since", from.toString());
        reply.put("rows", evaluations.table(from));
        HttpReply.json(exchange, 200, reply, Map.of());
    }

    public void list(Exchange exchange) {
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("canaries", views.list());
        HttpReply.json(exchange, 200, reply, Map.of());
    }

    public void stop(Exchange exchange) {
        Ask ask = ask(exchange, "stops");
        HttpReply.json(exchange, 200, views.view(canaries.stopByOperator(ask.provider(), ask.operator(), ask.reason())), Map.of());
    }

    public void promote(Exchange exchange) {
        Ask ask = ask(exchange, "promotes");
        HttpReply.json(exchange, 200, views.view(canaries.promote(ask.provider(), ask.operator(), ask.reason())), Map.of());
    }

    public void restart(Exchange exchange) {
        Ask ask = ask(exchange, "restarts");
        HttpReply.json(exchange, 200, views.view(canaries.restart(ask.provider(), ask.operator(), ask.reason())), Map.of());
    }

    private record Ask(String provider, String operator, String reason) {
    }

    private static Ask ask(Exchange exchange, String verb) {
        String provider = exchange.getIn().getHeader("provider", String.class);
        JsonNode request = AdminApi.request(exchange);
        String operator = AdminApi.operator(request, verb + " the canary");
        return new Ask(provider, operator, AdminApi.text(request, "reason", AdminApi.MAX_REASON));
    }
}
