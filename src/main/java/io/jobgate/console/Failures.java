package io.jobgate.console;

import io.jobgate.job.JobSearch;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.ApiProblem;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The console's failures (docs/console.md): failed jobs since a time, grouped by error category and message, with how
 * many, the latest and a sample; dead webhook deliveries grouped by tenant, status and error; and a group redriven at
 * once. Failed jobs are read through their own index ({@code jobs_unsuccessful_listing}, V43) over a range of ids.
 */
public final class Failures {

    /** Groups shown, and jobs of one group redriven at once. */
    static final int GROUPS = 50;
    static final int REDRIVE_AT_ONCE = 100;
    /** A message is grouped (and shown) by its first characters: ids at its end do not split a group. */
    static final int MESSAGE_HEAD = 120;

    private final JdbcTemplate jdbc;
    private final OperatorActions actions;

    public Failures(JdbcTemplate jdbc, OperatorActions actions) {
        this.jdbc = jdbc;
        this.actions = actions;
    }

    /** Failed jobs since {@code since}, by category and message: {@code category, message, jobs, latest, sample}. */
    public List<Map<String, Object>> failedJobs(Instant since) {
        return jdbc.query("""
                SELECT coalesce(error_category, '') AS category, left(coalesce(error_message, ''), ?) AS message, count(*) AS jobs,
                       max(finalized_at) AS latest, (array_agg(job_id ORDER BY job_id DESC))[1] AS sample
                  FROM jobs WHERE status = 'failed' AND job_id >= ? GROUP BY 1, 2 ORDER BY jobs DESC, latest DESC LIMIT ?""",
                (rs, i) -> {
                    Map<String, Object> g = new LinkedHashMap<>();
                    g.put("category", rs.getString("category"));
                    g.put("message", rs.getString("message"));
                    g.put("jobs", rs.getLong("jobs"));
                    g.put("latest", rs.getTimestamp("latest").toInstant().toString());
                    g.put("sample", rs.getObject("sample", UUID.class).toString());
                    return g;
                }, MESSAGE_HEAD, JobSearch.firstIdAt(since), GROUPS);
    }

    /** Dead deliveries by tenant, last status and error: {@code tenant, last_status, error, deliveries, sample_job}. */
    public List<Map<String, Object>> deadDeliveries() {
        return jdbc.query("""
                SELECT tenant_id, last_status, left(coalesce(last_error, ''), ?) AS error, count(*) AS deliveries,
                       (array_agg(job_id ORDER BY created_at DESC))[1] AS sample_job
                  FROM webhook_deliveries WHERE state = 'dead' GROUP BY 1, 2, 3 ORDER BY deliveries DESC LIMIT ?""",
                (rs, i) -> {
                    Map<String, Object> g = new LinkedHashMap<>();
                    g.put("tenant", rs.getString("tenant_id"));
                    g.put("last_status", rs.getObject("last_status"));
                    g.put("error", rs.getString("error"));
                    g.put("deliveries", rs.getLong("deliveries"));
                    Object job = rs.getObject("sample_job");
                    g.put("sample_job", job == null ? null : job.toString());
                    return g;
                }, MESSAGE_HEAD, GROUPS);
    }

    /**
     * The failed jobs of one group (since {@code since}, at most {@link #REDRIVE_AT_ONCE}, newest first) redriven, each
     * through {@link OperatorActions#redrive} and recorded; one a redrive refuses (past its lifetime cap, say) is counted.
     */
    public String redriveGroup(String category, String message, Instant since, OperatorActions.Who who) {
        if (category == null || message == null) {
            throw ApiProblem.of(400, "invalid_parameter", "Name the group: \"category\" and \"message\".").with("field", "category");
        }
        List<UUID> ids = jdbc.query("SELECT job_id FROM jobs WHERE status = 'failed' AND job_id >= ? AND coalesce(error_category, '') = ?"
                        + " AND left(coalesce(error_message, ''), ?) = ? ORDER BY job_id DESC LIMIT ?",
                (rs, i) -> rs.getObject(1, UUID.class), JobSearch.firstIdAt(since), category, MESSAGE_HEAD, message, REDRIVE_AT_ONCE);
        int redriven = 0;
        List<String> refused = new ArrayList<>();
        for (UUID id : ids) {
            try {
                actions.redrive(id, who, false);
                redriven++;
            } catch (ApiProblem problem) {
                refused.add(problem.code());
            }
        }
        return redriven + " redriven" + (refused.isEmpty() ? "" : ", " + refused.size() + " refused (" + String.join(", ",
                new java.util.TreeSet<>(refused)) + ")");
    }
}
