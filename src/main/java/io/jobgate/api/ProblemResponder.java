package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Renders a refusal or a fault as RFC 9457 problem details with a stable {@code code}. Faults are
 * logged with their stack trace; the client sees only a code and a correlation-friendly message.
 */
public final class ProblemResponder {

    private static final Logger LOG = LoggerFactory.getLogger(ProblemResponder.class);

    private final io.jobgate.ops.Meters meters;

    public ProblemResponder(io.jobgate.ops.Meters meters) {
        this.meters = meters;
    }

    public void respond(Exchange exchange) {
        Throwable cause = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Throwable.class);
        ApiProblem problem = cause instanceof ApiProblem p ? p : unexpected(exchange, cause);
        if ("create-job".equals(exchange.getFromRouteId())) { // POST /v1/jobs (its REST route, inlined)
            io.jobgate.tenant.Tenant tenant = exchange.getProperty(TenantAuth.TENANT, io.jobgate.tenant.Tenant.class);
            meters.admissionRefused(tenant == null ? null : tenant.id(), problem.code());
            RefusalLog.write("http", tenant == null ? null : tenant.id(), problem.code(),
                    exchange.getIn().getHeader("X-Correlation-Id", String.class));
        }
        String path = exchange.getIn().getHeader(Exchange.HTTP_PATH, String.class);
        HttpReply.write(exchange, problem.status(), HttpReply.PROBLEM_JSON, Json.write(document(problem, path)),
                problem.headers());
    }

    public static Map<String, Object> document(ApiProblem problem, String instance) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("type", "urn:jobgate:problem:" + problem.code());
        doc.put("title", problem.code().replace('_', ' '));
        doc.put("status", problem.status());
        doc.put("code", problem.code());
        doc.put("detail", problem.getMessage());
        if (instance != null && !instance.isEmpty()) {
            doc.put("instance", instance);
        }
        doc.putAll(problem.members());
        return doc;
    }

    private static ApiProblem unexpected(Exchange exchange, Throwable cause) {
        if (io.jobgate.common.DatabaseFailures.lockCycle(cause)) {
            // PostgreSQL broke a deadlock or a serialization conflict, again on every run: rolled back whole, nothing decided.
            LOG.warn("Lock conflict in route {} (exchange {}) after its runs again: answered 503", exchange.getFromRouteId(),
                    exchange.getExchangeId());
            return ApiProblem.of(503, "transaction_conflict", "The request met a lock conflict in the database and was rolled "
                    + "back whole. Retry after the Retry-After; with the same Idempotency-Key it never makes a second job.")
                    .withHeader("Retry-After", "1");
        }
        if (io.jobgate.common.DatabaseFailures.lost(cause)) {
            // A failover under way (docs/operating.md, "Failover"): nothing was decided, so a retry is the answer.
            LOG.warn("Database unreachable in route {} (exchange {}): answered 503", exchange.getFromRouteId(), exchange.getExchangeId());
            return ApiProblem.of(503, "database_unavailable", "The gateway cannot reach its database (a failover may be under way). "
                    + "Retry after the Retry-After; with the same Idempotency-Key it never makes a second job.")
                    .withHeader("Retry-After", "2");
        }
        // Never echo the request: it may hold prompts or user text.
        LOG.error("Unexpected failure in route {} (exchange {})", exchange.getFromRouteId(), exchange.getExchangeId(), cause);
        return ApiProblem.of(500, "internal_error", "The gateway failed to process the request. "
                + "Retrying with the same Idempotency-Key is safe: it never makes a second job.");
    }
}
