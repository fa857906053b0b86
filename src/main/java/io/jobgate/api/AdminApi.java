package io.jobgate.api;

import io.jobgate.job.JobView;
import io.jobgate.common.ApiProblem;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.Digests;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.job.WaitingJob;
import org.apache.camel.Exchange;

/**
 * Operator endpoints, guarded by the admin key (its SHA-256 in {@code jobgate.admin.api-key-sha256}).
 * {@code POST /v1/admin/jobs/{id}/reconcile} asks the provider about a job waiting on it now and
 * applies the answer through the same rules as the poller; a job in any other state, terminal
 * ones included, is returned unchanged. {@code GET /v1/admin/jobs/{id}/attempts} lists every attempt
 * with the stored head of its error reply; {@code POST /v1/admin/jobs/{id}/redrive} gives a failed job
 * a new attempt under its id (docs/operator-api.md).
 */
public final class AdminApi {

    private final String keySha256;
    private final Reconciler reconciler;
    private final JobStore jobs;
    private final io.jobgate.job.Redrives redrives;

    private volatile io.jobgate.evaluation.Evaluations evaluations;

    /** The job's evaluated outputs are listed beside its attempts (docs/evaluation.md). */
    public AdminApi withEvaluations(io.jobgate.evaluation.Evaluations evaluations) {
        this.evaluations = evaluations;
        return this;
    }

    public AdminApi(String keySha256, Reconciler reconciler, JobStore jobs, io.jobgate.job.Redrives redrives) {
        this.keySha256 = keySha256;
        this.reconciler = reconciler;
        this.jobs = jobs;
        this.redrives = redrives;
    }

    /** Longest operator name and reason a redrive records. */
    static final int MAX_OPERATOR = 100;
    static final int MAX_REASON = 500;

    /** Every attempt of any tenant's job, with the stored heads of error replies, and its redrives. */
    public void attempts(Exchange exchange) {
        UUID id = JobsApi.jobId(exchange);
        io.jobgate.job.Job job = jobs.findAny(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + "."));
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("job_id", id.toString());
        reply.put("tenant_id", job.tenantId());
        reply.put("status", job.status().wire());
        reply.put("attempts", jobs.attempts(id).stream().map(a -> io.jobgate.job.JobView.attempt(a, true)).toList());
        reply.put("redrives", redrives.history(id).stream().map(AdminApi::redriveView).toList());
        if (evaluations != null) {
            reply.put("evaluations", evaluations.ofJob(id));
        }
        HttpReply.json(exchange, 200, reply, Map.of());
    }

    /**
     * {@code {"operator": "who", "reason": "why", "force": false}}: a failed job gets a new attempt;
     * {@code operator} is required (the admin key names no person), {@code force} also past its lifetime cap.
     */
    public void redrive(Exchange exchange) {
        UUID id = JobsApi.jobId(exchange);
        com.fasterxml.jackson.databind.JsonNode request = request(exchange);
        String operator = operator(request, "redrives the job");
        String reason = text(request, "reason", MAX_REASON);
        com.fasterxml.jackson.databind.JsonNode force = request.path("force");
        if (!force.isMissingNode() && !force.isNull() && !force.isBoolean()) {
            throw ApiProblem.of(400, "invalid_parameter", "\"force\" is true or false.").with("field", "force");
        }
        io.jobgate.job.Redrives.Redriven done = redrives.redrive(id, operator, reason, force.asBoolean(false));
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("redrive", done.redrive());
        reply.put("forced", done.forced());
        reply.put("debited_micros", done.debitedMicros());
        reply.put("job", JobView.of(jobs.findAny(id).orElseThrow()));
        HttpReply.json(exchange, 202, reply, Map.of("Location", "/v1/jobs/" + id));
    }

    /** The JSON body of an operator's call; an empty body is an empty object. */
    static com.fasterxml.jackson.databind.JsonNode request(Exchange exchange) {
        byte[] body = exchange.getIn().getBody(byte[].class);
        return body == null || body.length == 0 ? io.jobgate.common.Json.MAPPER.createObjectNode() : io.jobgate.common.Json.parseObject(body);
    }

    /**
     * Who makes an operator's call ({@code "operator"}, required: the admin key names no person), stripped; refused in
     * the words of {@code act}, what the call does ("redrives the job").
     */
    static String operator(com.fasterxml.jackson.databind.JsonNode request, String act) {
        String operator = text(request, "operator", MAX_OPERATOR);
        if (operator == null || operator.isBlank()) {
            throw ApiProblem.of(400, "invalid_parameter", "Name who " + act + ": \"operator\" (1 to " + MAX_OPERATOR
                    + " characters).").with("field", "operator");
        }
        return operator.strip();
    }

    static String text(com.fasterxml.jackson.databind.JsonNode request, String field, int max) {
        com.fasterxml.jackson.databind.JsonNode value = request.path(field);
        if (value.isMissingNode() || value.isNull()) {
            return null;
        }
        if (!value.isTextual() || value.asText().length() > max) {
            throw ApiProblem.of(400, "invalid_parameter", "\"" + field + "\" is text of at most " + max + " characters.")
                    .with("field", field);
        }
        return value.asText();
    }

    private static Map<String, Object> redriveView(io.jobgate.job.Redrives.Redrive r) {
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("redrive", r.redrive());
        view.put("operator", r.operator());
        view.put("reason", r.reason());
        view.put("forced", r.forced());
        view.put("previous_category", r.previousCategory());
        view.put("previous_message", r.previousMessage());
        view.put("debited_micros", r.debitedMicros());
        view.put("redriven_at", r.redrivenAt().toString());
        return view;
    }

    public void authenticate(Exchange exchange) {
        if (!Digests.sha256Matches(bearer(exchange), keySha256)) {
            throw ApiProblem.unauthorized("An admin key is required (Authorization: Bearer <admin key>).");
        }
    }

    /** The key of the call's {@code Authorization: Bearer <key>}, or null. */
    static String bearer(Exchange exchange) {
        return bearer(exchange.getIn().getHeader("Authorization", String.class));
    }

    /** The key of an {@code Authorization: Bearer <key>} header, or null. */
    static String bearer(String header) {
        return header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
    }

    public void reconcile(Exchange exchange) {
        UUID id = JobsApi.jobId(exchange);
        WaitingJob job = reconciler.find(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + "."));
        Reconciler.Applied applied = JobStatus.AT_PROVIDER.contains(job.status())
                ? reconciler.check(job, "admin")
                : new Reconciler.Applied(false, "job is " + job.status().wire() + ": nothing to reconcile");
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("changed", applied.changed());
        reply.put("detail", applied.detail());
        reply.put("job", JobView.of(jobs.findAny(id).orElseThrow()));
        HttpReply.json(exchange, 200, reply, Map.of());
    }
}
