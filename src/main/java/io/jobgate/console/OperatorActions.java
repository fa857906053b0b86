package io.jobgate.console;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.canary.CanaryLifecycle;
import io.jobgate.common.ApiProblem;
import io.jobgate.job.Job;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import io.jobgate.job.Redrives;
import io.jobgate.job.WaitingJob;
import io.jobgate.notify.WebhookDeliveries;
import io.jobgate.reconcile.Reconciler;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What an operator may do to the jobgate they watch, each through the very rule the admin API applies (a redrive through
 * {@code Redrives}, a cancel through the one finalize, a reconcile through the poller's check, a canary through its
 * lifecycle), and each recorded with who did it and why ({@code operator_actions}, V44). A refusal records nothing and
 * changes nothing. The record is written once the action is done: an action the record then misses (the database gone
 * between the two) is still in its own history (the job's redrives, the canary's actions, the job's final status).
 */
public final class OperatorActions {

    /** The longest operator name and reason kept, as the admin API's. */
    static final int MAX_OPERATOR = 100;
    static final int MAX_REASON = 500;

    private final JdbcTemplate jdbc;
    private final JobStore jobs;
    private final JobFinalizer finalizer;
    private final Redrives redrives;
    private final Reconciler reconciler;
    private final WebhookDeliveries deliveries;
    private final CanaryLifecycle canaries;

    public OperatorActions(JdbcTemplate jdbc, JobStore jobs, JobFinalizer finalizer, Redrives redrives, Reconciler reconciler,
                           WebhookDeliveries deliveries, CanaryLifecycle canaries) {
        this.jdbc = jdbc;
        this.jobs = jobs;
        this.finalizer = finalizer;
        this.redrives = redrives;
        this.reconciler = reconciler;
        this.deliveries = deliveries;
        this.canaries = canaries;
    }

    /** Who acts and why: an operator's name (required: the admin key names no person) and a reason (optional). */
    public record Who(String operator, String reason) {

        public Who {
            if (operator == null || operator.isBlank() || operator.strip().length() > MAX_OPERATOR) {
                throw ApiProblem.of(400, "invalid_parameter", "Name who does this: \"operator\" (1 to " + MAX_OPERATOR
                        + " characters).").with("field", "operator");
            }
            operator = operator.strip();
            if (reason != null && reason.isBlank()) {
                reason = null;
            }
            if (reason != null && reason.length() > MAX_REASON) {
                throw ApiProblem.of(400, "invalid_parameter", "\"reason\" is at most " + MAX_REASON + " characters.")
                        .with("field", "reason");
            }
        }
    }

    /** A job that has not ended is cancelled, refunded in full, as its tenant's cancel would. */
    public String cancel(UUID jobId, Who who) {
        Job job = job(jobId);
        if (!job.status().terminal()) {
            finalizer.finalizeJob(jobId, new JobFinalizer.Outcome(JobStatus.CANCELLED, "cancelled",
                    "Cancelled by the operator " + who.operator() + ".", JobFinalizer.RefundPolicy.FULL));
        }
        Job now = job(jobId);
        if (now.status() != JobStatus.CANCELLED || job.status().terminal()) {
            throw ApiProblem.of(409, "not_cancellable", "Job " + jobId + " is already " + now.status().wire() + ".")
                    .with("job_status", now.status().wire());
        }
        return record("cancel", jobId, null, who, "cancelled");
    }

    /** A failed job gets a new attempt under its id ({@code Redrives}); {@code force}: past its lifetime cap too. */
    public String redrive(UUID jobId, Who who, boolean force) {
        Redrives.Redriven done = redrives.redrive(jobId, who.operator(), who.reason(), force);
        return record("redrive", jobId, null, who, "redrive " + done.redrive() + (done.forced() ? ", forced" : ""));
    }

    /** A job waiting on its provider is looked up there now, as the poller would; any other is left as it is. */
    public String reconcile(UUID jobId, Who who) {
        WaitingJob job = reconciler.find(jobId).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + jobId + "."));
        if (!JobStatus.AT_PROVIDER.contains(job.status())) {
            throw ApiProblem.of(409, "not_at_provider", "Job " + jobId + " is " + job.status().wire()
                    + ": only a job waiting on its provider is looked up there.").with("job_status", job.status().wire());
        }
        Reconciler.Applied applied = reconciler.check(job, "console");
        return record("reconcile", jobId, null, who, (applied.changed() ? "changed: " : "unchanged: ") + applied.detail());
    }

    /** Dead webhook deliveries (of one tenant, or of all) sent again, their schedule from its start. */
    public String redriveDeliveries(String tenant, Who who) {
        int redriven = deliveries.redriveDead(tenant);
        return record("redrive_deliveries", null, tenant, who, redriven + (redriven == 1 ? " delivery" : " deliveries") + " sent again");
    }

    /** A provider's canary candidate stopped (its jobs roll back), promoted, or run again at its share. */
    public String canary(String provider, String act, Who who) {
        String revision = switch (act) {
            case "stop" -> canaries.stopByOperator(provider, who.operator(), who.reason());
            case "promote" -> canaries.promote(provider, who.operator(), who.reason());
            case "restart" -> canaries.restart(provider, who.operator(), who.reason());
            default -> throw ApiProblem.of(404, "not_found", "No canary action '" + act + "'.");
        };
        return record("canary_" + act, null, provider, who, revision);
    }

    /** The actions taken on a job, oldest first: what, who, why, what it did, when. */
    public List<Map<String, Object>> ofJob(UUID jobId) {
        return jdbc.query("SELECT action, operator, reason, outcome, at FROM operator_actions WHERE job_id = ? ORDER BY action_id",
                (rs, i) -> {
                    Map<String, Object> v = new java.util.LinkedHashMap<>();
                    v.put("action", rs.getString("action"));
                    v.put("operator", rs.getString("operator"));
                    v.put("reason", rs.getString("reason"));
                    v.put("outcome", rs.getString("outcome"));
                    v.put("at", rs.getTimestamp("at").toInstant().toString());
                    return v;
                }, jobId);
    }

    private Job job(UUID jobId) {
        return jobs.findAny(jobId).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + jobId + "."));
    }

    private String record(String action, UUID jobId, String target, Who who, String outcome) {
        jdbc.update("INSERT INTO operator_actions (action, job_id, target, operator, reason, outcome) VALUES (?, ?, ?, ?, ?, ?)",
                action, jobId, target, who.operator(), who.reason(), outcome);
        return outcome;
    }
}
