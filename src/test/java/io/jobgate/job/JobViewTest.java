package io.jobgate.job;

import java.time.Instant;
import java.util.UUID;

import io.jobgate.common.Json;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** JobView writes the job straight to JSON: these are the bytes the maps it replaced gave. */
class JobViewTest {

    static Job job(JobStatus status, UUID upload, String error, String result, Instant next, String correlation) {
        Instant t = Instant.parse("2026-12-01T17:00:00.123456Z");
        return new Job(UUID.fromString("0190f3a4-0000-7000-8000-000000000001"), "acme", "key-1", "ab".repeat(32), status,
                "invoice-clean", 2, "image", "portrait", "simulator", upload, upload == null ? null : "cd".repeat(32),
                upload == null ? 0 : 12345, correlation, 1500000, 4, 1800, t.plusSeconds(1800), 1, error,
                error == null ? null : "it \"failed\"", t, t.plusMillis(5), status.terminal() ? t.plusSeconds(3) : null, next,
                "simulator@abc", result, null, null, null);
    }

    /** The wire shape of a job, member by member and in order (API v1), pinned as bytes. */
    @Test
    void writesTheJobsWireShape() {
        assertThat(Json.write(JobView.of(job(JobStatus.QUEUED, null, null, null, null, null)))).isEqualTo(
                "{\"job_id\":\"0190f3a4-0000-7000-8000-000000000001\",\"status\":\"queued\",\"tenant_id\":\"acme\",\"preset\":{\"id\":\"invoice-clean\",\"version\":2},\"kind\":\"image\",\"aspect_class\":\"portrait\",\"provider\":\"simulator\",\"pool\":null,\"source\":null,\"limits\":{\"max_attempts\":4,\"max_lifetime_seconds\":1800,\"expires_at\":\"2026-12-01T17:30:00.123456Z\"},\"attempts\":1,\"next_attempt_at\":null,\"waiting_reason\":null,\"adapter_revision\":\"simulator@abc\",\"cost\":{\"amount_micros\":1500000,\"amount\":\"1.5\"},\"correlation_id\":null,\"idempotency_key\":\"key-1\",\"webhook_endpoint_id\":null,\"parent_job_id\":null,\"error\":null,\"created_at\":\"2026-12-01T17:00:00.123456Z\",\"updated_at\":\"2026-12-01T17:00:00.128456Z\",\"finalized_at\":null,\"output\":null,\"links\":{\"self\":\"/v1/jobs/0190f3a4-0000-7000-8000-000000000001\"}}");
        assertThat(Json.write(JobView.of(job(JobStatus.FAILED, null, "transient", null, null, "c")))).isEqualTo(
                "{\"job_id\":\"0190f3a4-0000-7000-8000-000000000001\",\"status\":\"failed\",\"tenant_id\":\"acme\",\"preset\":{\"id\":\"invoice-clean\",\"version\":2},\"kind\":\"image\",\"aspect_class\":\"portrait\",\"provider\":\"simulator\",\"pool\":null,\"source\":null,\"limits\":{\"max_attempts\":4,\"max_lifetime_seconds\":1800,\"expires_at\":\"2026-12-01T17:30:00.123456Z\"},\"attempts\":1,\"next_attempt_at\":null,\"waiting_reason\":null,\"adapter_revision\":\"simulator@abc\",\"cost\":{\"amount_micros\":1500000,\"amount\":\"1.5\"},\"correlation_id\":\"c\",\"idempotency_key\":\"key-1\",\"webhook_endpoint_id\":null,\"parent_job_id\":null,\"error\":{\"category\":\"transient\",\"message\":\"it \\\"failed\\\"\"},\"created_at\":\"2026-12-01T17:00:00.123456Z\",\"updated_at\":\"2026-12-01T17:00:00.128456Z\",\"finalized_at\":\"2026-12-01T17:00:03.123456Z\",\"output\":null,\"links\":{\"self\":\"/v1/jobs/0190f3a4-0000-7000-8000-000000000001\"}}");
        Job succeeded = job(JobStatus.SUCCEEDED, null, null,
                "{\"media_type\":\"image/png\",\"bytes\":10,\"sha256\":\"ee\",\"width\":1024,\"height\":1536}", null, null);
        assertThat(Json.write(java.util.Map.of("job", JobView.of(succeeded)))).isEqualTo("{\"job\":" + 
                "{\"job_id\":\"0190f3a4-0000-7000-8000-000000000001\",\"status\":\"succeeded\",\"tenant_id\":\"acme\",\"preset\":{\"id\":\"invoice-clean\",\"version\":2},\"kind\":\"image\",\"aspect_class\":\"portrait\",\"provider\":\"simulator\",\"pool\":null,\"source\":null,\"limits\":{\"max_attempts\":4,\"max_lifetime_seconds\":1800,\"expires_at\":\"2026-12-01T17:30:00.123456Z\"},\"attempts\":1,\"next_attempt_at\":null,\"waiting_reason\":null,\"adapter_revision\":\"simulator@abc\",\"cost\":{\"amount_micros\":1500000,\"amount\":\"1.5\"},\"correlation_id\":null,\"idempotency_key\":\"key-1\",\"webhook_endpoint_id\":null,\"parent_job_id\":null,\"error\":null,\"created_at\":\"2026-12-01T17:00:00.123456Z\",\"updated_at\":\"2026-12-01T17:00:00.128456Z\",\"finalized_at\":\"2026-12-01T17:00:03.123456Z\",\"output\":{\"media_type\":\"image/png\",\"bytes\":10,\"sha256\":\"ee\",\"width\":1024,\"height\":1536},\"links\":{\"self\":\"/v1/jobs/0190f3a4-0000-7000-8000-000000000001\",\"output\":\"/v1/jobs/0190f3a4-0000-7000-8000-000000000001/output\"}}" + "}");
    }
}
