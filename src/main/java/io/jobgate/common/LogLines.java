package io.jobgate.common;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import org.slf4j.MDC;

/**
 * One log line per record, as text ({@code 12:00:00.000 INFO  [thread] o.a.c.Logger - message}) or
 * as one JSON object ({@code timeMillis}, {@code level}, {@code loggerName}, {@code thread},
 * {@code message}, the structured line's fields under {@code contextMap}, {@code thrown}). Levels are
 * named as SLF4J names them. The thread is the one formatting: the handler publishes synchronously.
 */
public final class LogLines extends Formatter {

    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSS").withZone(ZoneId.systemDefault());

    private final boolean json;

    public LogLines(boolean json) {
        this.json = json;
    }

    /** {@code -Djobgate.log.format}, else {@code JOBGATE_LOG_FORMAT}, else text. */
    public static LogLines fromSettings() {
        String format = System.getProperty("jobgate.log.format", System.getenv().getOrDefault("JOBGATE_LOG_FORMAT", "text"));
        return new LogLines("json".equalsIgnoreCase(format.trim()));
    }

    /** SLF4J's name of a JUL level. */
    public static String levelName(Level level) {
        int value = level.intValue();
        if (value >= Level.SEVERE.intValue()) {
            return "ERROR";
        }
        if (value >= Level.WARNING.intValue()) {
            return "WARN";
        }
        if (value >= Level.INFO.intValue()) {
            return "INFO";
        }
        return value >= Level.FINE.intValue() ? "DEBUG" : "TRACE";
    }

    @Override
    public String format(LogRecord record) {
        String message = formatMessage(record);
        String thread = Thread.currentThread().getName();
        return json ? json(record, message, thread) : text(record, message, thread);
    }

    private static String text(LogRecord record, String message, String thread) {
        StringBuilder line = new StringBuilder(96 + message.length());
        TIME.formatTo(record.getInstant(), line);
        String level = levelName(record.getLevel());
        line.append(' ').append(level).append(" ".repeat(Math.max(1, 6 - level.length())))
                .append('[').append(thread).append("] ").append(abbreviated(record.getLoggerName())).append(" - ")
                .append(message).append('\n');
        if (record.getThrown() != null) {
            line.append(stackTrace(record.getThrown()));
        }
        return line.toString();
    }

    private static String json(LogRecord record, String message, String thread) {
        StringBuilder line = new StringBuilder(160 + message.length());
        line.append("{\"timeMillis\":").append(record.getMillis())
                .append(",\"level\":\"").append(levelName(record.getLevel()))
                .append("\",\"loggerName\":");
        quote(line, record.getLoggerName());
        line.append(",\"thread\":");
        quote(line, thread);
        line.append(",\"message\":");
        quote(line, message);
        Map<String, String> fields = MDC.getCopyOfContextMap();
        line.append(",\"contextMap\":{");
        if (fields != null) {
            boolean first = true;
            for (Map.Entry<String, String> field : fields.entrySet()) {
                line.append(first ? "" : ",");
                quote(line, field.getKey());
                line.append(':');
                quote(line, field.getValue());
                first = false;
            }
        }
        line.append('}');
        if (record.getThrown() != null) {
            Throwable thrown = record.getThrown();
            line.append(",\"thrown\":{\"name\":");
            quote(line, thrown.getClass().getName());
            line.append(",\"message\":");
            quote(line, thrown.getMessage());
            line.append(",\"stackTrace\":");
            quote(line, stackTrace(thrown));
            line.append('}');
        }
        return line.append("}\n").toString();
    }

    /** {@code org.apache.camel.Main} → {@code o.a.c.Main}. */
    static String abbreviated(String logger) {
        if (logger == null) {
            return "";
        }
        int last = logger.lastIndexOf('.');
        if (last < 0) {
            return logger;
        }
        StringBuilder out = new StringBuilder(logger.length());
        int start = 0;
        while (start < last) {
            int dot = logger.indexOf('.', start);
            out.append(logger.charAt(start)).append('.');
            start = dot + 1;
        }
        return out.append(logger, last + 1, logger.length()).toString();
    }

    private static String stackTrace(Throwable thrown) {
        StringWriter out = new StringWriter();
        thrown.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    private static void quote(StringBuilder out, String value) {
        if (value == null) {
            out.append("null");
            return;
        }
        out.append('"');
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }
}
