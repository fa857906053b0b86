package io.jobgate.support;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

/** Every log line of the JVM while open (logger name and formatted message), for assertions on what is logged. */
public final class LogCapture implements AutoCloseable {

    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final List<String> leveled = new CopyOnWriteArrayList<>();
    private final AbstractAppender appender;
    private final LoggerContext context;

    public LogCapture() {
        context = (LoggerContext) LogManager.getContext(false);
        appender = new AbstractAppender("capture-" + System.nanoTime(), null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                String thrown = event.getThrown() == null ? "" : " " + event.getThrown();
                lines.add(event.getLoggerName() + " " + event.getMessage().getFormattedMessage() + thrown);
                leveled.add(event.getLevel() + " " + event.getLoggerName() + " " + event.getMessage().getFormattedMessage() + thrown);
            }
        };
        appender.start();
        context.getConfiguration().getRootLogger().addAppender(appender, null, null);
        context.updateLoggers();
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
        context.getConfiguration().getRootLogger().removeAppender(appender.getName());
        context.updateLoggers();
        appender.stop();
    }
}
