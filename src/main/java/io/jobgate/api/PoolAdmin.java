package io.jobgate.api;

import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;
import io.jobgate.pool.Pool;
import io.jobgate.pool.PoolCatalog;
import io.jobgate.pool.PoolHealth;
import io.jobgate.pool.PoolViews;
import org.apache.camel.Exchange;

/**
 * Operator calls on provider pools (admin key; docs/operator-api.md, "Pools"): {@code GET /v1/admin/pools} lists each
 * pool's members and their state; {@code POST /v1/admin/pools/{pool}/members/{member}/drain} keeps new attempts off a
 * member (its jobs finish there) and {@code …/restore} brings it back, each with who ({@code operator}, required) and why.
 */
public final class PoolAdmin {

    private final PoolCatalog pools;
    private final PoolHealth health;
    private final PoolViews views;

    public PoolAdmin(PoolCatalog pools, PoolHealth health, PoolViews views) {
        this.pools = pools;
        this.health = health;
        this.views = views;
    }

    public void list(Exchange exchange) {
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("pools", views.list());
        HttpReply.json(exchange, 200, reply, Map.of());
    }

    public void drain(Exchange exchange) {
        Ask ask = ask(exchange, "drains");
        health.drain(ask.pool(), ask.member(), ask.operator(), ask.reason());
        HttpReply.json(exchange, 200, views.view(ask.pool().name()), Map.of());
    }

    public void restore(Exchange exchange) {
        Ask ask = ask(exchange, "restores");
        health.restore(ask.pool(), ask.member(), ask.operator(), ask.reason());
        HttpReply.json(exchange, 200, views.view(ask.pool().name()), Map.of());
    }

    private record Ask(Pool pool, String member, String operator, String reason) {
    }

    private Ask ask(Exchange exchange, String verb) {
        String name = exchange.getIn().getHeader("pool", String.class);
        Pool pool = pools.find(name).orElseThrow(() -> ApiProblem.of(404, "pool_not_found", "No pool '" + name + "'; declared: "
                + String.join(", ", pools.all().stream().map(Pool::name).toList()) + ".").with("field", "pool"));
        String member = exchange.getIn().getHeader("member", String.class);
        JsonNode request = AdminApi.request(exchange);
        String operator = AdminApi.operator(request, verb + " the member");
        return new Ask(pool, member, operator, AdminApi.text(request, "reason", AdminApi.MAX_REASON));
    }
}
