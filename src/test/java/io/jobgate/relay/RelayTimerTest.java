package io.jobgate.relay;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A retry is dispatched when it becomes due, not at the relay's next poll: the poll is set to ten
 * minutes here, so only the relay's timer can explain a second attempt seconds after a 429's
 * Retry-After ran out.
 */
class RelayTimerTest extends GatewayTestBase {

    @Override
    protected Map<String, String> settings() {
        return Map.of(
                "jobgate.relay.period-ms", "600000",
                "jobgate.simulator.enabled", "true",
                "jobgate.simulator.processing-ms", "50",
                "jobgate.worker.enabled", "true");
    }

    @Test
    void aRetryIsDispatchedWhenItsRetryAfterRunsOut() {
        // The simulator answers this key's first submit with 429 and Retry-After: 2 (its retry goes through).
        var request = api.request("/v1/jobs", ACME).header("Content-Type", "application/json")
                .header("Idempotency-Key", "k-" + UUID.randomUUID())
                .header("X-Correlation-Id", "sim-fault-rate_limit_seconds-" + UUID.randomUUID());
        ApiClient.Response r = api.send(request.POST(java.net.http.HttpRequest.BodyPublishers.ofString("""
                {"preset_id": "invoice-clean", "aspect_class": "square",
                 "inputs": {"supplier_name": "Timer GmbH", "invoice_id": "T-1", "currency": "EUR",
                            "line_items": [{"description": "Wait", "quantity": 1, "unit_price": 1}]}}""")).build());
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID job = UUID.fromString(r.json().path("job_id").asText());

        await().atMost(Duration.ofSeconds(30)).until(() ->
                Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND status = 'succeeded'", job) == 1);
        List<Map<String, Object>> attempts = Db.rows("SELECT attempt, outcome, http_status, next_attempt_at, started_at "
                + "FROM attempts WHERE job_id = '" + job + "' ORDER BY attempt");
        assertThat(attempts).as("attempts").hasSize(2);
        assertThat(attempts.get(0).get("http_status")).as("first attempt").isEqualTo(429);
        Instant due = ((java.sql.Timestamp) attempts.get(0).get("next_attempt_at")).toInstant();
        Instant started = ((java.sql.Timestamp) attempts.get(1).get("started_at")).toInstant();
        // Not before its time, and long before the next poll (ten minutes); seconds of slack for a busy machine.
        assertThat(started).as("second attempt started (due %s)", due).isAfterOrEqualTo(due)
                .isBefore(due.plusSeconds(5));
    }
}
