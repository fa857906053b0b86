package io.jobgate.console;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.evaluation.Evaluations;
import io.jobgate.job.Job;
import io.jobgate.job.JobStore;
import io.jobgate.job.JobView;
import io.jobgate.job.Redrives;
import io.jobgate.notify.WebhookDeliveries;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A job's whole story, for an operator: the job as its tenant sees it, every attempt (revision and its role, timings,
 * outcome, category, HTTP status, provider request id), the providers' webhooks about it, its redrives, its ledger lines, its webhook deliveries and their
 * attempts, its summary job, its output's manifest and evaluation, and one timeline of all of these. Never a prompt or
 * a secret, as in the logs: no inputs, no stored request, no reply excerpt, no evaluation's extracted fields, no
 * manifest's expected values, no storage key, no lease token.
 */
public final class JobStory {

    private final JdbcTemplate jdbc;
    private final JobStore jobs;
    private final Redrives redrives;
    private final WebhookDeliveries deliveries;
    private final Evaluations evaluations;
    private final OperatorActions actions;
    private final S3Client s3;
    private final String bucket;

    public JobStory(JdbcTemplate jdbc, JobStore jobs, Redrives redrives, WebhookDeliveries deliveries, Evaluations evaluations,
                    OperatorActions actions, S3Client s3, String bucket) {
        this.jdbc = jdbc;
        this.jobs = jobs;
        this.redrives = redrives;
        this.deliveries = deliveries;
        this.evaluations = evaluations;
        this.actions = actions;
        this.s3 = s3;
        this.bucket = bucket;
    }

    /** The story of the job of that id, any tenant's; empty if there is none. */
    public Optional<Map<String, Object>> of(UUID jobId) {
        return jobs.findAny(jobId).map(this::of);
    }

    Map<String, Object> of(Job job) {
        Map<String, Object> story = new LinkedHashMap<>();
        story.put("job", view(job));
        Map<Integer, String> roles = jobs.revisionRoles(job.id());
        List<Map<String, Object>> attempts = jobs.attempts(job.id()).stream().map(a -> {
            Map<String, Object> v = new LinkedHashMap<>(JobView.attempt(a, false));
            v.put("revision_role", roles.get(a.attempt()));
            v.put("worker", a.worker());
            return v;
        }).toList();
        story.put("attempts", attempts);
        List<Map<String, Object>> redriven = redrives.history(job.id()).stream().map(r -> {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("redrive", r.redrive());
            v.put("operator", r.operator());
            v.put("reason", r.reason());
            v.put("forced", r.forced());
            v.put("previous_category", r.previousCategory());
            v.put("redriven_at", r.redrivenAt().toString());
            return v;
        }).toList();
        story.put("redrives", redriven);
        List<Map<String, Object>> ledger = ledger(job.id());
        story.put("ledger", ledger);
        List<Map<String, Object>> webhooks = webhooksReceived(job);
        story.put("webhooks_received", webhooks);
        // The lookups the poller made (their answers decided the attempt's outcome above; each is not kept on its own).
        story.put("lookups", jobs.lookups(job.id()));
        List<Map<String, Object>> sent = deliveries.ofJob(job.id());
        story.put("deliveries", sent);
        List<Map<String, Object>> evaluated = evaluations == null ? List.of() : evaluations.ofJob(job.id()).stream().map(e -> {
            Map<String, Object> v = new LinkedHashMap<>(e);
            v.remove("scores"); // the fields read from the output: the tenant's content
            return v;
        }).toList();
        story.put("evaluations", evaluated);
        List<Map<String, Object>> taken = actions.ofJob(job.id());
        story.put("operator_actions", taken);
        story.put("summary_job", summaryJob(job));
        story.put("manifest", manifest(job));
        story.put("timeline", timeline(job, attempts, redriven, ledger, sent, evaluated, taken, webhooks));
        return story;
    }

    /** The job as its tenant reads it ({@code GET /v1/jobs/{id}}), as a map. */
    private static Map<String, Object> view(Job job) {
        return Json.MAPPER.convertValue(JobView.of(job), new TypeReference<Map<String, Object>>() { });
    }

    /**
     * The providers' webhooks about the job (evidence the reconciler applied, and what it made of it), read by the time
     * they arrived within the job's life (the receipts' index by time) rather than by a job index the hot path would
     * write for every webhook. Kept as long as retention keeps receipts.
     */
    private List<Map<String, Object>> webhooksReceived(Job job) {
        java.time.Instant until = (job.finalizedAt() != null ? job.finalizedAt() : java.time.Instant.now()).plus(java.time.Duration.ofHours(1));
        return jdbc.query("SELECT provider, webhook_id, outcome, received_at FROM webhook_receipts"
                + " WHERE received_at >= ? AND received_at <= ? AND job_id = ? ORDER BY received_at", (rs, i) -> {
                    Map<String, Object> w = new LinkedHashMap<>();
                    w.put("provider", rs.getString("provider"));
                    w.put("webhook_id", rs.getString("webhook_id"));
                    w.put("outcome", rs.getString("outcome"));
                    w.put("received_at", rs.getTimestamp("received_at").toInstant().toString());
                    return w;
                }, java.sql.Timestamp.from(job.createdAt()), java.sql.Timestamp.from(until), job.id());
    }

    private List<Map<String, Object>> ledger(UUID jobId) {
        return jdbc.query("SELECT entry_type, amount_micros, units, unit, redrive, created_at FROM ledger"
                + " WHERE job_id = ? AND entry_type IN ('debit', 'refund') ORDER BY entry_id", (rs, i) -> {
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("entry_type", rs.getString("entry_type"));
                    line.put("amount_micros", rs.getLong("amount_micros"));
                    line.put("amount", JobView.amount(rs.getLong("amount_micros")));
                    line.put("units", rs.getBigDecimal("units"));
                    line.put("unit", rs.getString("unit"));
                    line.put("redrive", rs.getInt("redrive"));
                    line.put("created_at", rs.getTimestamp("created_at").toInstant().toString());
                    return line;
                }, jobId);
    }

    /** The summary job a transcription job ordered (docs/summaries.md), if any: its id and status. */
    private Map<String, Object> summaryJob(Job job) {
        return jobs.summaryOf(job.id()).map(s -> Map.<String, Object>of("job_id", s.id().toString(), "status", s.status().wire()))
                .orElse(null);
    }

    /** The evaluation manifest beside the output (docs/evaluation.md), without its expected values or storage key. */
    private Map<String, Object> manifest(Job job) {
        if (job.result() == null) {
            return null;
        }
        String key = Json.parseObject(job.result().getBytes(StandardCharsets.UTF_8)).path("manifest_key").asText("");
        if (key.isEmpty()) {
            return null;
        }
        try {
            JsonNode m = Json.parseObject(s3.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray());
            Map<String, Object> v = Json.MAPPER.convertValue(m, new TypeReference<LinkedHashMap<String, Object>>() { });
            v.remove("expected");
            if (v.get("output") instanceof Map<?, ?> output) {
                Map<Object, Object> shown = new LinkedHashMap<>(output);
                shown.remove("key");
                v.put("output", shown);
            }
            return v;
        } catch (software.amazon.awssdk.services.s3.model.NoSuchKeyException gone) {
            return Map.of("missing", true);
        }
    }

    /** Everything that happened to the job, oldest first: {@code at}, {@code what}, {@code detail}. */
    private static List<Map<String, Object>> timeline(Job job, List<Map<String, Object>> attempts, List<Map<String, Object>> redriven,
                                                      List<Map<String, Object>> ledger, List<Map<String, Object>> sent,
                                                      List<Map<String, Object>> evaluated, List<Map<String, Object>> taken,
                                                      List<Map<String, Object>> webhooks) {
        List<Map<String, Object>> events = new ArrayList<>();
        event(events, job.createdAt().toString(), "accepted", "preset " + job.presetId() + " v" + job.presetVersion()
                + (job.pool() != null ? ", pool " + job.pool() : ", provider " + job.provider()));
        for (Map<String, Object> a : attempts) {
            event(events, (String) a.get("started_at"), "attempt " + a.get("attempt") + " started",
                    a.get("adapter") + " (" + a.get("revision") + ")");
            if (a.get("ended_at") != null) {
                StringBuilder detail = new StringBuilder(String.valueOf(a.get("outcome")));
                if (a.get("http_status") != null) {
                    detail.append(", HTTP ").append(a.get("http_status"));
                }
                if (a.get("error_category") != null) {
                    detail.append(", ").append(a.get("error_category"));
                }
                event(events, (String) a.get("ended_at"), "attempt " + a.get("attempt") + " ended", detail.toString());
            }
        }
        for (Map<String, Object> r : redriven) {
            event(events, (String) r.get("redriven_at"), "redriven by " + r.get("operator"), String.valueOf(r.get("reason")));
        }
        for (Map<String, Object> l : ledger) {
            event(events, (String) l.get("created_at"), String.valueOf(l.get("entry_type")), l.get("amount") + " credits");
        }
        for (Map<String, Object> e : evaluated) {
            if (e.get("evaluated_at") != null) {
                event(events, (String) e.get("evaluated_at"), "evaluated", "attempt " + e.get("attempt") + ": "
                        + e.get("fields_correct") + " of " + e.get("fields_total") + " fields");
            }
        }
        for (Map<String, Object> d : sent) {
            event(events, (String) d.get("created_at"), "webhook " + d.get("event_type"), "to " + d.get("url") + ": " + d.get("state"));
        }
        for (Map<String, Object> w : webhooks) {
            event(events, (String) w.get("received_at"), "webhook from " + w.get("provider"), String.valueOf(w.get("outcome")));
        }
        for (Map<String, Object> a : taken) {
            if (!"redrive".equals(a.get("action"))) { // a redrive is on the timeline as the job's own
                event(events, (String) a.get("at"), a.get("action") + " by " + a.get("operator"), String.valueOf(a.get("outcome")));
            }
        }
        if (job.finalizedAt() != null) {
            event(events, job.finalizedAt().toString(), job.status().wire(), job.errorCategory() == null ? "" : job.errorCategory());
        }
        events.sort(Comparator.comparing(e -> java.time.Instant.parse((String) e.get("at"))));
        return events;
    }

    private static void event(List<Map<String, Object>> events, String at, String what, String detail) {
        if (at == null) {
            return;
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("at", at);
        e.put("what", what);
        e.put("detail", detail);
        events.add(e);
    }
}
