package io.jobgate.console;

import io.jobgate.job.JobSearch;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import io.jobgate.common.ApiProblem;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.JobStatus;
import org.apache.camel.Exchange;

/**
 * A job search as a request asks for it, the admin API's ({@code GET /v1/admin/jobs}) and the console's jobs page alike:
 * {@code find} (a job id or an idempotency key) or the filters {@code tenant, status, kind, provider, preset, category,
 * from, to}, and {@code cursor, limit}. A value that cannot be is refused with the field it came in.
 */
public record SearchParams(String find, JobSearch.Filter filter, Map<String, String> asked) {

    /** The page's size when none is asked. */
    static final int DEFAULT_LIMIT = 50;
    static final int MAX_TEXT = 255;

    public static SearchParams of(Exchange exchange) {
        Map<String, String> asked = new LinkedHashMap<>();
        for (String name : new String[] {"find", "tenant", "status", "kind", "provider", "preset", "category", "from", "to"}) {
            String value = exchange.getIn().getHeader(name, String.class);
            if (value != null && !value.isBlank()) {
                if (value.length() > MAX_TEXT) {
                    throw ApiProblem.of(400, "invalid_parameter", "'" + name + "' is at most " + MAX_TEXT + " characters.")
                            .with("field", name);
                }
                asked.put(name, value.strip());
            }
        }
        JobStatus status = asked.containsKey("status") ? JobStatus.fromWire(asked.get("status")).orElseThrow(() ->
                ApiProblem.of(400, "invalid_parameter", "Unknown status '" + asked.get("status") + "'.").with("field", "status")) : null;
        if (asked.containsKey("category") && ErrorCategory.fromWire(asked.get("category")).isEmpty()) {
            throw ApiProblem.of(400, "invalid_parameter", "Unknown error category '" + asked.get("category") + "'.")
                    .with("field", "category");
        }
        Instant from = instant(asked.get("from"), "from", false);
        Instant to = instant(asked.get("to"), "to", true);
        if (from != null && to != null && !from.isBefore(to)) {
            throw ApiProblem.of(400, "invalid_parameter", "'from' is before 'to'.").with("field", "from");
        }
        String cursor = exchange.getIn().getHeader("cursor", String.class);
        UUID before = null;
        if (cursor != null && !cursor.isBlank()) {
            try {
                before = UUID.fromString(cursor.strip());
            } catch (IllegalArgumentException e) {
                throw ApiProblem.of(400, "invalid_parameter", "'cursor' is the next_cursor of a page.").with("field", "cursor");
            }
            asked.put("cursor", before.toString());
        }
        int limit = DEFAULT_LIMIT;
        String limitParam = exchange.getIn().getHeader("limit", String.class);
        if (limitParam != null && !limitParam.isBlank()) {
            try {
                limit = Integer.parseInt(limitParam.strip());
            } catch (NumberFormatException e) {
                limit = -1;
            }
            if (limit < 1 || limit > JobSearch.MAX_LIMIT) {
                throw ApiProblem.of(400, "invalid_parameter", "'limit' is 1 to " + JobSearch.MAX_LIMIT + ".").with("field", "limit");
            }
            asked.put("limit", Integer.toString(limit));
        }
        JobSearch.Filter filter = new JobSearch.Filter(asked.get("tenant"), status, asked.get("kind"), asked.get("provider"),
                asked.get("preset"), asked.get("category"), from, to, before, limit);
        return new SearchParams(asked.get("find"), filter, java.util.Collections.unmodifiableMap(asked));
    }

    /** An RFC 3339 instant, or a date: its first instant ({@code from}) or the first of the next day ({@code to}), UTC. */
    private static Instant instant(String text, String field, boolean endOfDay) {
        if (text == null) {
            return null;
        }
        try {
            if (text.length() == 10) {
                LocalDate day = LocalDate.parse(text);
                return (endOfDay ? day.plusDays(1) : day).atStartOfDay().toInstant(ZoneOffset.UTC);
            }
            return java.time.OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            throw ApiProblem.of(400, "invalid_parameter", "'" + field + "' is a date (2026-12-07) or an RFC 3339 instant "
                    + "(2026-12-07T10:00:00Z).").with("field", field);
        }
    }
}
