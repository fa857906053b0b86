package io.jobgate.support;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.jobgate.common.LogLines;

/** Every log line of the JVM while open (logger name and formatted message), for assertions on what is logged. */
public final class LogCapture implements AutoCloseable {

    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final List<String> leveled = new CopyOnWriteArrayList<>();
    private final Logger root = Logger.getLogger("");
    private final Handler handler = new Handler() {
        private final LogLines format = new LogLines(false);

        @Override
        public void publish(LogRecord record) {
            String thrown = record.getThrown() == null ? "" : " " + record.getThrown();
            String line = record.getLoggerName() + " " + format.formatMessage(record) + thrown;
            lines.add(line);
            leveled.add(LogLines.levelName(record.getLevel()) + " " + line);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    public LogCapture() {
        root.addHandler(handler);
    }

    public List<String> lines() {
        return List.copyOf(lines);
    }

    /** The same lines, each after its level: {@code INFO jobgate.attempts attempt job=…}. */
    public List<String> linesWithLevel() {
        return List.copyOf(leveled);
    }

    @Override
    public void close() {
        root.removeHandler(handler);
    }
}
