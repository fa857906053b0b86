package io.jobgate.console;

import io.jobgate.job.JobSearch;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.jobgate.api.HttpReply;
import io.jobgate.common.ApiProblem;
import io.jobgate.job.JobView;
import org.apache.camel.Exchange;

/**
 * The admin API's job search and job story, any tenant's (admin key): {@code GET /v1/admin/jobs} and
 * {@code GET /v1/admin/jobs/{id}} (docs/operator-api.md). What the console's pages show, as JSON.
 */
public final class JobsAdmin {

    private final JobSearch search;
    private final JobStory stories;

    public JobsAdmin(JobSearch search, JobStory stories) {
        this.search = search;
        this.stories = stories;
    }

    /** {@code GET /v1/admin/jobs}: a page of jobs, newest first, with the next page's cursor and the count (capped). */
    public void search(Exchange exchange) {
        SearchParams params = SearchParams.of(exchange);
        Map<String, Object> body = new LinkedHashMap<>();
        if (params.find() != null) {
            List<io.jobgate.job.Job> found = search.find(params.find());
            body.put("jobs", found.stream().map(JobView::of).toList());
            body.put("next_cursor", null);
            body.put("count", found.size());
            body.put("count_capped", false);
        } else {
            JobSearch.Page page = search.search(params.filter());
            body.put("jobs", page.jobs().stream().map(JobView::of).toList());
            body.put("next_cursor", page.next() == null ? null : page.next().toString());
            body.put("count", page.count());
            body.put("count_capped", page.countCapped());
        }
        HttpReply.json(exchange, 200, body, Map.of());
    }

    /** {@code GET /v1/admin/jobs/{id}}: the job's whole story ({@link JobStory}). */
    public void story(Exchange exchange) {
        UUID id = jobId(exchange);
        HttpReply.json(exchange, 200, stories.of(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + ".")),
                Map.of());
    }

    /** The {@code jobId} path parameter; a malformed id is a missing job (404). */
    static UUID jobId(Exchange exchange) {
        String text = exchange.getIn().getHeader("jobId", String.class);
        try {
            return UUID.fromString(text);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw ApiProblem.of(404, "job_not_found", "No job '" + text + "'.");
        }
    }
}
