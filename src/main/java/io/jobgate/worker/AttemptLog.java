package io.jobgate.worker;

import io.jobgate.adapter.AdapterResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One structured line per attempt outcome (logger {@code jobgate.attempts}): ids, versions,
 * adapter, attempt number, duration and category. Never the prompt, user text or source URLs.
 */
public final class AttemptLog {

    private static final Logger LOG = LoggerFactory.getLogger("jobgate.attempts");
    /** A value written without quotes (compiled once: a line has a dozen fields). */
    private static final java.util.regex.Pattern BARE = java.util.regex.Pattern.compile("[A-Za-z0-9@._:/-]+");

    private AttemptLog() {
    }

    public record Line(String jobId, String correlationId, String presetId, int presetVersion, String aspectClass,
                       String adapter, String revision, int attempt, long durationMs, Integer httpStatus,
                       String outcome, String category, String next) {
    }

    static String format(Line l) {
        StringBuilder s = new StringBuilder("attempt");
        field(s, "job", l.jobId());
        field(s, "correlation", l.correlationId());
        field(s, "preset", l.presetId() + "@v" + l.presetVersion());
        field(s, "aspect", l.aspectClass());
        field(s, "adapter", l.adapter());
        field(s, "revision", l.revision());
        field(s, "attempt", Integer.toString(l.attempt()));
        field(s, "duration_ms", Long.toString(l.durationMs()));
        field(s, "http_status", l.httpStatus() == null ? null : l.httpStatus().toString());
        field(s, "outcome", l.outcome());
        field(s, "category", l.category());
        field(s, "next", l.next());
        return s.toString();
    }

    public static void write(Line line) {
        try (var fields = io.jobgate.common.LogFields.of("job", line.jobId(), "correlation", line.correlationId(),
                "preset", line.presetId() + "@v" + line.presetVersion(), "aspect", line.aspectClass(), "adapter", line.adapter(),
                "revision", line.revision(), "attempt", Integer.toString(line.attempt()),
                "duration_ms", Long.toString(line.durationMs()),
                "http_status", line.httpStatus() == null ? null : line.httpStatus().toString(), "outcome", line.outcome(),
                "category", line.category(), "next", line.next())) {
            if (line.category() == null) {
                LOG.info(format(line));
            } else {
                LOG.warn(format(line));
            }
        }
    }

    /** The start of an unreadable reply, with the job id: enough to recognise it, never the request. */
    public static void unparseable(String jobId, String excerpt) {
        String start = excerpt == null ? "" : AdapterResult.truncate(excerpt, 200);
        LOG.warn("unparseable provider reply job={} first_200_chars={}", jobId, quote(start));
    }

    private static void field(StringBuilder s, String key, String value) {
        if (value != null) {
            s.append(' ').append(key).append('=').append(BARE.matcher(value).matches() ? value : quote(value));
        }
    }

    private static String quote(String value) {
        return '"' + value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n").replace("\r", "\\r") + '"';
    }
}
