package io.jobgate.summary;

import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.job.Job;
import io.jobgate.job.JobStore;
import org.springframework.jdbc.core.JdbcTemplate;

/** The summaries transcription jobs asked for, as their jobs show them (docs/summaries.md). */
public final class JobSummaries {

    /**
     * A transcription job's summary: what was asked (preset, provider), where it stands ({@code waiting},
     * {@code ordered}, {@code skipped}, {@code refused}), the last refusal's code and message, and once ordered
     * the summary job itself.
     */
    public record Summary(String state, String presetId, int presetVersion, String provider, String refusedCode,
                          String refusedMessage, Job job) {
    }

    private final JdbcTemplate jdbc;
    private final JobStore jobs;

    public JobSummaries(JdbcTemplate jdbc, JobStore jobs) {
        this.jdbc = jdbc;
        this.jobs = jobs;
    }

    /**
     * The summary as its transcription job shows it (member {@code summary}): {@code status} is the summary job's
     * once ordered, else {@code waiting}, {@code skipped} (the transcript did not succeed) or {@code refused}; the
     * summary job's id, preset, provider, attempts, cost, error (or the refusal's code and message) and output.
     */
    public static Map<String, Object> view(Summary s) {
        Job job = s.job();
        Map<String, Object> v = new java.util.LinkedHashMap<>();
        v.put("status", job != null ? job.status().wire() : s.state());
        v.put("job_id", job == null ? null : job.id().toString());
        v.put("preset", Map.of("id", s.presetId(), "version", s.presetVersion()));
        v.put("provider", job != null ? job.provider() : s.provider());
        v.put("attempts", job == null ? 0 : job.attempts());
        long micros = job == null ? 0 : job.costMicros();
        v.put("cost", Map.of("amount_micros", micros, "amount", io.jobgate.job.JobView.amount(micros)));
        Map<String, Object> error = null;
        if (job != null && job.errorCategory() != null) {
            error = new java.util.LinkedHashMap<>();
            error.put("category", job.errorCategory());
            error.put("message", job.errorMessage());
        } else if (job == null && s.refusedCode() != null) {
            error = new java.util.LinkedHashMap<>();
            error.put("category", s.refusedCode());
            error.put("message", s.refusedMessage());
        }
        v.put("error", error);
        Map<String, Object> output = job == null ? null : io.jobgate.job.JobView.output(job);
        v.put("output", output);
        Map<String, Object> links = new java.util.LinkedHashMap<>();
        if (job != null) {
            links.put("job", io.jobgate.job.JobView.location(job));
            if (output != null) {
                links.put("output", io.jobgate.job.JobView.location(job) + "/output");
            }
        }
        v.put("links", links);
        return v;
    }

    /** The summaries of those of {@code transcriptionJobs} that asked for one, by job id. */
    public Map<UUID, Summary> of(String tenantId, Collection<UUID> transcriptionJobs) {
        Map<UUID, Summary> found = new HashMap<>();
        if (transcriptionJobs.isEmpty()) {
            return found;
        }
        List<Map<String, Object>> rows = jdbc.queryForList("""
                SELECT job_id, state, preset_id, preset_version, provider, refused_code, refused_message, summary_job_id
                  FROM job_summaries WHERE tenant_id = ? AND job_id = ANY (?)""", tenantId,
                transcriptionJobs.toArray(UUID[]::new));
        // The ordered summaries' jobs in one read, not one per row: a page of 100 transcriptions was 101 statements.
        Map<UUID, Job> summaryJobs = jobs.findAll(tenantId, rows.stream().map(r -> (UUID) r.get("summary_job_id"))
                .filter(java.util.Objects::nonNull).toList());
        for (Map<String, Object> r : rows) {
            UUID summaryJob = (UUID) r.get("summary_job_id");
            found.put((UUID) r.get("job_id"), new Summary((String) r.get("state"), (String) r.get("preset_id"),
                    ((Number) r.get("preset_version")).intValue(), (String) r.get("provider"), (String) r.get("refused_code"),
                    (String) r.get("refused_message"), summaryJob == null ? null : summaryJobs.get(summaryJob)));
        }
        return found;
    }
}
