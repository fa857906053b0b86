package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.Digests;
import io.jobgate.job.JobStore;
import io.jobgate.reconcile.Reconciler;
import io.jobgate.reconcile.WaitingJob;
import org.apache.camel.Exchange;

/**
 * Operator endpoints, guarded by the admin key (its SHA-256 in {@code jobgate.admin.api-key-sha256}).
 * {@code POST /v1/admin/jobs/{id}/reconcile} asks the provider about a job waiting on it now and
 * applies the answer through the same rules as the poller; a job in any other state, terminal
 * ones included, is returned unchanged.
 */
public final class AdminApi {

    private final String keySha256;
    private final Reconciler reconciler;
    private final JobStore jobs;

    public AdminApi(String keySha256, Reconciler reconciler, JobStore jobs) {
        this.keySha256 = keySha256;
        this.reconciler = reconciler;
        this.jobs = jobs;
    }

    public void authenticate(Exchange exchange) {
        String header = exchange.getIn().getHeader("Authorization", String.class);
        String key = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) ? header.substring(7).trim() : null;
        if (keySha256 == null || key == null || !MessageDigest.isEqual(Digests.sha256Hex(key).getBytes(StandardCharsets.US_ASCII),
                keySha256.getBytes(StandardCharsets.US_ASCII))) {
            throw ApiProblem.unauthorized("An admin key is required (Authorization: Bearer <admin key>).");
        }
    }

    public void reconcile(Exchange exchange) {
        UUID id = JobsApi.jobId(exchange);
        WaitingJob job = reconciler.find(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + "."));
        Reconciler.Applied applied = job.status().equals("provider_pending") || job.status().equals("submission_unknown")
                ? reconciler.check(job, "admin")
                : new Reconciler.Applied(false, "job is " + job.status() + ": nothing to reconcile");
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("changed", applied.changed());
        reply.put("detail", applied.detail());
        reply.put("job", JobView.of(jobs.findAny(id).orElseThrow()));
        HttpReply.json(exchange, 200, reply, Map.of());
    }
}
