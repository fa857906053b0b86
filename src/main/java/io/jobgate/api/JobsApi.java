package io.jobgate.api;

import io.jobgate.job.JobView;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.admission.AdmissionService;
import io.jobgate.job.Job;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import io.jobgate.tenant.Tenant;
import org.apache.camel.Exchange;

/** HTTP glue of the jobs resource: reads the request, calls the rules, writes the answer. */
public final class JobsApi {

    static final int MAX_BODY_BYTES = 64 * 1024;
    static final int DEFAULT_PAGE = 50;
    static final int MAX_PAGE = 200;
    private static final int MAX_CORRELATION_ID = 128;
    private static final java.util.regex.Pattern JSON_TYPE =
            java.util.regex.Pattern.compile("application/([a-z0-9.+-]*\\+)?json\\s*(;.*)?", java.util.regex.Pattern.CASE_INSENSITIVE);
    private static final java.util.regex.Pattern CORRELATION_ID = java.util.regex.Pattern.compile("[A-Za-z0-9._:/-]+");

    private final AdmissionService admission;
    private final JobStore jobs;
    private final JobFinalizer finalizer;

    private final software.amazon.awssdk.services.s3.S3Client s3;
    private final String bucket;

    private final io.jobgate.summary.JobSummaries summaries;

    public JobsApi(AdmissionService admission, JobStore jobs, JobFinalizer finalizer,
                   software.amazon.awssdk.services.s3.S3Client s3, String bucket, io.jobgate.summary.JobSummaries summaries) {
        this.summaries = summaries;
        this.admission = admission;
        this.jobs = jobs;
        this.finalizer = finalizer;
        this.s3 = s3;
        this.bucket = bucket;
    }

    /**
     * {@code GET /v1/jobs/{id}/output}: the promoted output, to its tenant only, once the job
     * succeeded (409 {@code not_ready} before). Quarantined objects are never served.
     */
    public void output(Exchange exchange) {
        Job job = find(exchange);
        if (job.status() != JobStatus.SUCCEEDED) {
            throw ApiProblem.of(409, "not_ready", "Job " + job.id() + " is " + job.status().wire()
                    + "; its output is readable once it succeeded.").with("job_status", job.status().wire());
        }
        com.fasterxml.jackson.databind.JsonNode result = Json.parseObject(jobs.result(job.id()).orElseThrow()
                .getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String key = result.path("output_key").asText();
        if (!key.startsWith("outputs/" + job.tenantId() + "/")) {
            throw new IllegalStateException("job " + job.id() + " has no promoted output");
        }
        byte[] bytes = s3.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray();
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Content-Length", Integer.toString(bytes.length));
        headers.put("Digest", "sha-256=" + java.util.Base64.getEncoder().encodeToString(java.util.HexFormat.of()
                .parseHex(result.path("sha256").asText())));
        HttpReply.write(exchange, 200, result.path("media_type").asText(), bytes, headers);
    }

    public void create(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        String contentType = exchange.getIn().getHeader(Exchange.CONTENT_TYPE, String.class);
        if (contentType == null || !JSON_TYPE.matcher(contentType).matches()) {
            throw ApiProblem.of(415, "unsupported_media_type", "Send the job request as Content-Type: application/json.");
        }
        byte[] body = exchange.getIn().getBody(byte[].class);
        if (body != null && body.length > MAX_BODY_BYTES) {
            throw ApiProblem.of(413, "request_too_large", "A job request is at most " + MAX_BODY_BYTES
                    + " bytes; send large sources through POST /v1/uploads.");
        }
        String key = exchange.getIn().getHeader("Idempotency-Key", String.class);
        String correlationId = correlationId(exchange.getIn().getHeader("X-Correlation-Id", String.class));
        AdmissionService.Admission admitted = admission.admit(tenant, key, correlationId, Json.parseObject(body));
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Location", JobView.location(admitted.job()));
        if (admitted.replayed()) {
            headers.put("Idempotent-Replayed", "true");
        }
        HttpReply.json(exchange, 202, view(admitted.job()), headers);
    }

    /**
     * {@code GET /v1/jobs/{id}}, with {@code ?wait=N} too: {@link WaitingReads} held the request until
     * now (the job ended, or N seconds passed); the answer is the job as it is, either way.
     */
    public void get(Exchange exchange) {
        WaitingReads.seconds(exchange.getIn().getHeader("wait"));
        Job job = find(exchange);
        HttpReply.json(exchange, 200, view(job), Map.of());
    }

    /** The job as the API shows it, with its summary when it is a transcription job that asked for one. */
    private Object view(Job job) {
        return views(job.tenantId(), List.of(job)).get(0);
    }

    /** The tenant's jobs as the API shows them; the summaries of its transcription jobs read in one query. */
    private List<Object> views(String tenantId, List<Job> page) {
        var asked = summaries.of(tenantId, page.stream().filter(j -> "transcription".equals(j.kind())).map(Job::id).toList());
        return page.stream().map(j -> asked.containsKey(j.id())
                ? JobView.of(j, io.jobgate.summary.JobSummaries.view(asked.get(j.id()))) : (Object) JobView.of(j)).toList();
    }

    /** {@code GET /v1/jobs/{id}/attempts}: the tenant's own job's attempts, without the heads of error replies. */
    public void attempts(Exchange exchange) {
        Job job = find(exchange);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("job_id", job.id().toString());
        body.put("status", job.status().wire());
        body.put("attempts", jobs.attempts(job.id()).stream().map(a -> io.jobgate.job.JobView.attempt(a, false)).toList());
        HttpReply.json(exchange, 200, body, Map.of());
    }

    public void list(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        String statusParam = exchange.getIn().getHeader("status", String.class);
        JobStatus status = null;
        if (statusParam != null && !statusParam.isBlank()) {
            status = JobStatus.fromWire(statusParam).orElseThrow(() -> ApiProblem.of(400, "invalid_parameter",
                    "Unknown status '" + statusParam + "'.").with("field", "status"));
        }
        int limit = DEFAULT_PAGE;
        String limitParam = exchange.getIn().getHeader("limit", String.class);
        if (limitParam != null && !limitParam.isBlank()) {
            try {
                limit = Integer.parseInt(limitParam.trim());
            } catch (NumberFormatException e) {
                limit = -1;
            }
            if (limit < 1 || limit > MAX_PAGE) {
                throw ApiProblem.of(400, "invalid_parameter", "'limit' must be 1 to " + MAX_PAGE + ".").with("field", "limit");
            }
        }
        String cursor = exchange.getIn().getHeader("cursor", String.class);
        UUID before = cursor == null || cursor.isBlank() ? null : uuid(cursor, "cursor");
        List<Job> page = jobs.list(tenant.id(), status, before, limit);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("jobs", views(tenant.id(), page));
        body.put("next_cursor", page.size() == limit ? page.get(page.size() - 1).id().toString() : null);
        HttpReply.json(exchange, 200, body, Map.of());
    }

    public void cancel(Exchange exchange) {
        Job job = find(exchange);
        if (!job.status().terminal()) {
            finalizer.finalizeJob(job.id(), new JobFinalizer.Outcome(JobStatus.CANCELLED, "cancelled",
                    "Cancelled by the tenant.", JobFinalizer.RefundPolicy.FULL));
            job = find(exchange);
        }
        if (job.status() != JobStatus.CANCELLED) {
            throw ApiProblem.of(409, "not_cancellable", "Job " + job.id() + " is already " + job.status().wire() + ".")
                    .with("job_status", job.status().wire());
        }
        HttpReply.json(exchange, 200, view(job), Map.of());
    }

    /** The {@code jobId} path parameter; a malformed id is a missing job (404). */
    static UUID jobId(Exchange exchange) {
        return uuid(exchange.getIn().getHeader("jobId", String.class), "job_id");
    }

    private Job find(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        String id = exchange.getIn().getHeader("jobId", String.class);
        UUID jobId = uuid(id, "job_id");
        return jobs.find(tenant.id(), jobId)
                .orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job '" + id + "'."));
    }

    private static UUID uuid(String value, String field) {
        try {
            return UUID.fromString(value);
        } catch (IllegalArgumentException | NullPointerException e) {
            if ("job_id".equals(field)) {
                throw ApiProblem.of(404, "job_not_found", "No job '" + value + "'.");
            }
            throw ApiProblem.of(400, "invalid_parameter", "'" + field + "' is not valid.").with("field", field);
        }
    }

    private static String correlationId(String value) {
        if (value == null || value.isBlank()) {
            return null;
        }
        if (value.length() > MAX_CORRELATION_ID || !CORRELATION_ID.matcher(value).matches()) {
            throw ApiProblem.of(400, "invalid_correlation_id", "X-Correlation-Id must be 1 to " + MAX_CORRELATION_ID
                    + " characters of letters, digits and . _ : / -.");
        }
        return value;
    }
}
