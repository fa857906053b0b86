package io.jobgate.console;

import io.jobgate.job.JobSearch;
import java.io.InputStream;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.github.mustachejava.DefaultMustacheFactory;
import com.github.mustachejava.MustacheFactory;
import io.jobgate.api.HttpReply;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.Job;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobStore;
import org.apache.camel.Exchange;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The console's pages (docs/console.md), rendered here from the Mustache templates under {@code console/} in the jar:
 * every value HTML-escaped by the template engine, no script but htmx (the pages' live parts), no request to anywhere
 * but this gateway (the Content-Security-Policy says so to the browser too).
 */
public final class ConsolePages {

    /** The files the pages load, by the name they load them under: from the web jars on the class path, and our own. */
    static final Map<String, Asset> ASSETS = Map.of(
            "pico.min.css", new Asset("META-INF/resources/webjars/picocss__pico/2.1.1/css/pico.min.css", "text/css; charset=utf-8"),
            "htmx.min.js", new Asset("META-INF/resources/webjars/htmx.org/2.0.8/dist/htmx.min.js", "text/javascript; charset=utf-8"),
            "console.css", new Asset("console/console.css", "text/css; charset=utf-8"));

    record Asset(String resource, String mediaType) {
    }

    /** A transcript (or any text output) is shown on its job's page up to this many bytes. */
    static final int MAX_TEXT_SHOWN = 64 * 1024;

    static final Map<String, String> PAGE_HEADERS = Map.of(
            "Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                    + "media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            "X-Content-Type-Options", "nosniff",
            "Referrer-Policy", "no-referrer",
            "Cache-Control", "no-store");

    private static final DateTimeFormatter SHOWN = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss").withZone(ZoneOffset.UTC);

    private final JobSearch search;
    private final JobStory stories;
    private final JobStore jobs;
    private final Overview overview;
    private final Failures failures;
    private final OperatorActions actions;
    private final S3Client s3;
    private final String bucket;
    private final MustacheFactory templates = new DefaultMustacheFactory("console");

    public ConsolePages(JobSearch search, JobStory stories, JobStore jobs, Overview overview, Failures failures,
                        OperatorActions actions, S3Client s3, String bucket) {
        this.search = search;
        this.stories = stories;
        this.jobs = jobs;
        this.overview = overview;
        this.failures = failures;
        this.actions = actions;
        this.s3 = s3;
        this.bucket = bucket;
    }

    /** {@code GET /console}: the overview of tenants, providers, canaries, pools and the last hour. */
    public void home(Exchange exchange) {
        Map<String, Object> page = new LinkedHashMap<>(overview.now());
        page.put("canaries", overview.canaries());
        page.put("title", "Overview");
        page.put("nav_overview", true);
        page.put("operator", signedInAs(exchange));
        page.put("read_shown", shown((String) page.get("read_at")));
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> minutes = (List<Map<String, Object>>) page.get("last_hour");
        page.put("finished_chart", bars(minutes, "jobs", "%,.0f jobs finished in the minute from %s"));
        page.put("p95_chart", bars(minutes, "p95_seconds", "p95 accept to final %.2f s in the minute from %s"));
        page.put("finished_total", minutes.stream().mapToLong(m -> (Long) m.get("jobs")).sum());
        page.put("minutes", minutes.stream().map(m -> {
            Map<String, Object> row = new LinkedHashMap<>(m);
            row.put("shown", shown((String) m.get("minute")));
            row.put("p95", String.format("%.2f", (Double) m.get("p95_seconds")));
            return row;
        }).toList());
        render(exchange, 200, "overview.mustache", page);
    }

    /** {@code GET /console/failures?since=24h}: failed jobs and dead deliveries, grouped, each group with a sample. */
    public void failures(Exchange exchange) {
        String sinceParam = exchange.getIn().getHeader("since", String.class);
        Instant since = since(sinceParam);
        Map<String, Object> page = new LinkedHashMap<>();
        page.put("title", "Failures");
        page.put("nav_failures", true);
        page.put("operator", signedInAs(exchange));
        page.put("since", sinceParam == null || sinceParam.isBlank() ? "24h" : sinceParam.strip());
        page.put("since_shown", shown(since.toString()));
        List<Map<String, Object>> groups = failures.failedJobs(since);
        page.put("groups", groups);
        page.put("any_groups", !groups.isEmpty());
        List<Map<String, Object>> dead = failures.deadDeliveries();
        page.put("dead", dead);
        page.put("any_dead", !dead.isEmpty());
        render(exchange, 200, "failures.mustache", page);
    }

    /** A time ago ({@code 1h}, {@code 24h}, {@code 7d}; 24 hours when not said) or an RFC 3339 instant. */
    static Instant since(String text) {
        String t = text == null || text.isBlank() ? "24h" : text.strip();
        java.util.regex.Matcher ago = java.util.regex.Pattern.compile("([1-9][0-9]{0,3})([hd])").matcher(t);
        if (ago.matches()) {
            long n = Long.parseLong(ago.group(1));
            return Instant.now().minus(ago.group(2).equals("h") ? java.time.Duration.ofHours(n) : java.time.Duration.ofDays(n));
        }
        try {
            return java.time.OffsetDateTime.parse(t).toInstant();
        } catch (java.time.format.DateTimeParseException e) {
            throw ApiProblem.of(400, "invalid_parameter", "'since' is a time ago (1h, 24h, 7d) or an RFC 3339 instant.")
                    .with("field", "since");
        }
    }

    /** The name the operator signed in with (HTTP Basic's user), or null: the name an action is recorded under by default. */
    static String signedInAs(Exchange exchange) {
        String authorization = exchange.getIn().getHeader("Authorization", String.class);
        if (authorization == null || !authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            return null;
        }
        try {
            String pair = new String(java.util.Base64.getDecoder().decode(authorization.substring(6).trim()), StandardCharsets.UTF_8);
            int colon = pair.indexOf(':');
            String user = colon < 0 ? "" : pair.substring(0, colon).strip();
            return user.isEmpty() || user.length() > OperatorActions.MAX_OPERATOR ? null : user;
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** Bars of one value per minute, scaled to the largest, each with its words for a screen reader and a tooltip. */
    private static List<Map<String, Object>> bars(List<Map<String, Object>> minutes, String value, String words) {
        double max = minutes.stream().mapToDouble(m -> ((Number) m.get(value)).doubleValue()).max().orElse(0);
        List<Map<String, Object>> bars = new ArrayList<>();
        Instant end = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MINUTES);
        for (Map<String, Object> m : minutes) {
            long slot = 59 - java.time.Duration.between(Instant.parse((String) m.get("minute")), end).toMinutes();
            if (slot < 0 || slot > 59) {
                continue;
            }
            double v = ((Number) m.get(value)).doubleValue();
            int height = max <= 0 ? 0 : (int) Math.max(1, Math.round(100 * v / max));
            bars.add(Map.of("x", slot * 10, "y", 110 - height, "height", height,
                    "label", String.format(words, v, shown((String) m.get("minute")))));
        }
        return bars;
    }

    /** {@code GET /console/jobs}: the search form, a page of jobs and the way to the next. */
    public void jobs(Exchange exchange) {
        SearchParams params = SearchParams.of(exchange);
        Map<String, Object> page = new LinkedHashMap<>();
        page.put("title", "Jobs");
        page.put("nav_jobs", true);
        page.put("asked", params.asked());
        page.put("statuses", options(java.util.Arrays.stream(JobStatus.values()).map(JobStatus::wire).toList(), params.asked().get("status")));
        page.put("categories", options(java.util.Arrays.stream(ErrorCategory.values()).map(ErrorCategory::wire).toList(),
                params.asked().get("category")));
        List<Job> shown;
        if (params.find() != null) {
            shown = search.find(params.find());
            page.put("count", shown.isEmpty() ? "No job has the id or idempotency key \u201c" + params.find() + "\u201d."
                    : shown.size() == 1 ? "1 job found." : shown.size() + " jobs found (one per tenant with that key).");
        } else {
            JobSearch.Page found = search.search(params.filter());
            shown = found.jobs();
            page.put("count", found.countCapped() ? "More than " + String.format("%,d", found.count()) + " jobs match."
                    : String.format("%,d", found.count()) + (found.count() == 1 ? " job matches." : " jobs match."));
            if (found.next() != null) {
                Map<String, String> next = new LinkedHashMap<>(params.asked());
                next.put("cursor", found.next().toString());
                page.put("next", "/console/jobs?" + query(next));
            }
            if (params.filter().before() != null) {
                Map<String, String> first = new LinkedHashMap<>(params.asked());
                first.remove("cursor");
                page.put("first", "/console/jobs" + (first.isEmpty() ? "" : "?" + query(first)));
            }
        }
        page.put("jobs", shown.stream().map(ConsolePages::row).toList());
        page.put("any", !shown.isEmpty());
        page.put("self", "/console/jobs" + (params.asked().isEmpty() ? "" : "?" + query(params.asked())));
        render(exchange, 200, "jobs.mustache", page);
    }

    /** {@code GET /console/jobs/{jobId}}: the job's whole story. */
    public void job(Exchange exchange) {
        UUID id = JobsAdmin.jobId(exchange);
        Map<String, Object> story = stories.of(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + "."));
        @SuppressWarnings("unchecked")
        Map<String, Object> job = (Map<String, Object>) story.get("job");
        JobStatus status = JobStatus.fromWire((String) job.get("status")).orElseThrow();
        Map<String, Object> page = new LinkedHashMap<>(story);
        page.put("title", "Job " + id);
        page.put("nav_jobs", true);
        page.put("id", id.toString());
        page.put("self", "/console/jobs/" + id);
        page.put("live", !status.terminal());
        page.put("status_class", "status-" + status.wire());
        page.put("output_view", outputView(id, job));
        page.put("any_attempts", !((List<?>) story.get("attempts")).isEmpty());
        page.put("any_ledger", !((List<?>) story.get("ledger")).isEmpty());
        page.put("any_deliveries", !((List<?>) story.get("deliveries")).isEmpty());
        page.put("any_evaluations", !((List<?>) story.get("evaluations")).isEmpty());
        page.put("any_redrives", !((List<?>) story.get("redrives")).isEmpty());
        page.put("any_webhooks", !((List<?>) story.get("webhooks_received")).isEmpty());
        page.put("operator", signedInAs(exchange));
        page.put("can_cancel", !status.terminal());
        page.put("can_redrive", status == JobStatus.FAILED);
        page.put("can_reconcile", JobStatus.AT_PROVIDER.contains(status));
        page.put("no_action", status.terminal() && status != JobStatus.FAILED);
        List<Map<String, Object>> taken = actions.ofJob(id);
        page.put("actions_taken", taken);
        page.put("any_actions_taken", !taken.isEmpty());
        @SuppressWarnings("unchecked")
        Map<String, Object> manifest = (Map<String, Object>) story.get("manifest");
        page.put("manifest_lines", manifest == null ? List.of() : manifest.entrySet().stream()
                .map(e -> Map.of("name", e.getKey(), "value", e.getValue() instanceof String s ? s : Json.write(e.getValue()))).toList());
        page.put("timeline", ((List<?>) story.get("timeline")).stream().map(e -> {
            @SuppressWarnings("unchecked")
            Map<String, Object> event = new LinkedHashMap<>((Map<String, Object>) e);
            event.put("shown", shown((String) event.get("at")));
            return event;
        }).toList());
        render(exchange, 200, "job.mustache", page);
    }

    /** {@code GET /console/jobs/{jobId}/output}: the promoted output, for the job's page to show; never a quarantined one. */
    public void output(Exchange exchange) {
        UUID id = JobsAdmin.jobId(exchange);
        Job job = jobs.findAny(id).orElseThrow(() -> ApiProblem.of(404, "job_not_found", "No job " + id + "."));
        String key = promotedKey(job);
        if (key == null) {
            throw ApiProblem.of(409, "not_ready", "Job " + id + " has no output to show: it is " + job.status().wire() + ".");
        }
        byte[] bytes = s3.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray();
        Map<String, String> headers = new LinkedHashMap<>(PAGE_HEADERS);
        headers.put("Content-Disposition", "inline");
        HttpReply.write(exchange, 200, mediaType(job), bytes, headers);
    }

    /** {@code GET /console/assets/{name}}: the pages' style sheets and script, from the jar. */
    public void asset(Exchange exchange) {
        String name = exchange.getIn().getHeader("name", String.class);
        Asset asset = ASSETS.get(name);
        if (asset == null) {
            throw ApiProblem.of(404, "not_found", "No console asset '" + name + "'.");
        }
        try (InputStream in = ConsolePages.class.getClassLoader().getResourceAsStream(asset.resource())) {
            if (in == null) {
                throw new IllegalStateException("the console's asset " + asset.resource() + " is not in the jar");
            }
            HttpReply.write(exchange, 200, asset.mediaType(), in.readAllBytes(), Map.of("Cache-Control", "private, max-age=3600",
                    "X-Content-Type-Options", "nosniff"));
        } catch (java.io.IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The page of a refusal or failure: its status, code and message (the exchange's caught exception). */
    public void error(Exchange exchange) {
        Exception caught = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, Exception.class);
        Map<String, Object> page = new LinkedHashMap<>();
        int status = 500;
        if (caught instanceof ApiProblem problem) {
            status = problem.status();
            page.put("code", problem.code());
            page.put("message", problem.getMessage());
        } else {
            page.put("code", "internal_error");
            page.put("message", "The console could not answer; the gateway's log says why.");
        }
        page.put("title", status == 404 ? "Not found" : "Refused");
        page.put("status", status);
        render(exchange, status, "error.mustache", page);
    }

    private void render(Exchange exchange, int status, String template, Map<String, Object> page) {
        StringWriter html = new StringWriter();
        templates.compile(template).execute(html, page);
        HttpReply.write(exchange, status, "text/html; charset=utf-8", html.toString(), PAGE_HEADERS);
    }

    private static Map<String, Object> row(Job job) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("id", job.id().toString());
        row.put("tenant", job.tenantId());
        row.put("status", job.status().wire());
        row.put("kind", job.kind());
        row.put("preset", job.presetId() + " v" + job.presetVersion());
        row.put("provider", job.pool() == null ? job.provider() : job.provider() + " (pool " + job.pool() + ")");
        row.put("attempts", job.attempts());
        row.put("created", shown(job.createdAt().toString()));
        row.put("created_at", job.createdAt().toString());
        row.put("key", job.idempotencyKey());
        row.put("error", job.errorCategory());
        return row;
    }

    private static List<Map<String, Object>> options(List<String> values, String selected) {
        List<Map<String, Object>> options = new ArrayList<>();
        for (String v : values) {
            options.add(Map.of("value", v, "selected", v.equals(selected)));
        }
        return options;
    }

    /** How the job's page shows its output: an image, a video to play, or the text of a transcript. */
    private Map<String, Object> outputView(UUID id, Map<String, Object> job) {
        if (!(job.get("output") instanceof Map<?, ?> output)) {
            return null;
        }
        String mediaType = String.valueOf(output.get("media_type"));
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("src", "/console/jobs/" + id + "/output");
        view.put("media_type", mediaType);
        view.put("bytes", output.get("bytes"));
        view.put("sha256", output.get("sha256"));
        view.put("width", output.get("width"));
        view.put("height", output.get("height"));
        if (mediaType.startsWith("image/")) {
            view.put("image", true);
        } else if (mediaType.startsWith("video/")) {
            view.put("video", true);
        } else if (mediaType.startsWith("text/") || mediaType.equals("application/json")) {
            Number bytes = (Number) output.get("bytes");
            if (bytes != null && bytes.longValue() <= MAX_TEXT_SHOWN) {
                jobs.findAny(id).map(ConsolePages::promotedKey)
                        .ifPresent(key -> view.put("text", new String(s3.getObjectAsBytes(b -> b.bucket(bucket).key(key))
                                .asByteArray(), StandardCharsets.UTF_8)));
            }
            view.put("download", true);
        } else {
            view.put("download", true);
        }
        return view;
    }

    /** The key of a succeeded job's promoted output (never a quarantined object), or null. */
    static String promotedKey(Job job) {
        if (job.status() != JobStatus.SUCCEEDED || job.result() == null) {
            return null;
        }
        String key = Json.parseObject(job.result().getBytes(StandardCharsets.UTF_8)).path("output_key").asText("");
        return key.startsWith("outputs/" + job.tenantId() + "/") ? key : null;
    }

    private static String mediaType(Job job) {
        return Json.parseObject(job.result().getBytes(StandardCharsets.UTF_8)).path("media_type").asText("application/octet-stream");
    }

    static String shown(String iso) {
        return iso == null ? null : SHOWN.format(Instant.parse(iso)) + " UTC";
    }

    static String query(Map<String, String> params) {
        StringBuilder q = new StringBuilder();
        params.forEach((k, v) -> q.append(q.isEmpty() ? "" : "&").append(k).append('=').append(URLEncoder.encode(v, StandardCharsets.UTF_8)));
        return q.toString();
    }
}
