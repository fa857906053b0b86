package io.jobgate.common;

import java.util.logging.LogRecord;
import java.util.logging.StreamHandler;

/**
 * Log lines to standard output, each flushed as written (JUL's ConsoleHandler writes to standard
 * error). Publishing runs on the logging thread, which {@link LogLines} names in each line.
 */
public final class StdoutHandler extends StreamHandler {

    public StdoutHandler() {
        super(System.out, LogLines.fromSettings());
    }

    @Override
    public synchronized void publish(LogRecord record) {
        super.publish(record);
        flush();
    }

    /** Standard output stays open: the JVM owns it. */
    @Override
    public synchronized void close() {
        flush();
    }
}
