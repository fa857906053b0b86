package io.jobgate.api;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.canary.Canaries;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import org.apache.camel.Exchange;

/**
 * Operator calls on canary candidates (admin key; docs/operator-api.md): {@code GET /v1/admin/canaries}
 * lists them with their gates and actions; {@code POST /v1/admin/providers/{provider}/canary/stop},
 * {@code …/promote} and {@code …/restart} act on the provider's newest canary, each recorded with who
 * ({@code operator}, required) and when.
 */
public final class CanaryAdmin {

    private final Canaries canaries;

    public CanaryAdmin(Canaries canaries) {
        this.canaries = canaries;
    }

    public void list(Exchange exchange) {
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("canaries", canaries.list());
        HttpReply.json(exchange, 200, reply, Map.of());
    }

    public void stop(Exchange exchange) {
        Ask ask = ask(exchange, "stops");
        HttpReply.json(exchange, 200, canaries.stopByOperator(ask.provider(), ask.operator(), ask.reason()), Map.of());
    }

    public void promote(Exchange exchange) {
        Ask ask = ask(exchange, "promotes");
        HttpReply.json(exchange, 200, canaries.promote(ask.provider(), ask.operator(), ask.reason()), Map.of());
    }

    public void restart(Exchange exchange) {
        Ask ask = ask(exchange, "restarts");
        HttpReply.json(exchange, 200, canaries.restart(ask.provider(), ask.operator(), ask.reason()), Map.of());
    }

    private record Ask(String provider, String operator, String reason) {
    }

    private static Ask ask(Exchange exchange, String verb) {
        String provider = exchange.getIn().getHeader("provider", String.class);
        byte[] body = exchange.getIn().getBody(byte[].class);
        JsonNode request = body == null || body.length == 0 ? Json.MAPPER.createObjectNode() : Json.parseObject(body);
        String operator = AdminApi.text(request, "operator", AdminApi.MAX_OPERATOR);
        if (operator == null || operator.isBlank()) {
            throw ApiProblem.of(400, "invalid_parameter", "Name who " + verb + " the canary: \"operator\" (1 to "
                    + AdminApi.MAX_OPERATOR + " characters).").with("field", "operator");
        }
        return new Ask(provider, operator.strip(), AdminApi.text(request, "reason", AdminApi.MAX_REASON));
    }
}
