package io.jobgate.api;

import io.jobgate.common.LogFields;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One line per refused admission (logger {@code jobgate.admission}), from either door: the tenant,
 * the problem's code and the client's correlation id — never the request body.
 */
final class RefusalLog {

    private static final Logger LOG = LoggerFactory.getLogger("jobgate.admission");

    private RefusalLog() {
    }

    static void write(String door, String tenant, String code, String correlationId) {
        try (var fields = LogFields.of("door", door, "tenant", tenant, "code", code, "correlation", correlationId)) {
            LOG.info("admission refused door={} tenant={} code={} correlation={}", door, tenant == null ? "-" : tenant, code,
                    correlationId == null ? "-" : correlationId);
        }
    }
}
