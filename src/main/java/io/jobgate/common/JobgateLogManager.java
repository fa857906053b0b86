package io.jobgate.common;

import java.io.IOException;
import java.io.InputStream;
import java.util.logging.LogManager;

/**
 * Logging is java.util.logging behind SLF4J: the JDK's own, so a start does not load and configure a
 * logging framework first (Log4j's took 0.4-0.5 s of CPU on the main thread before anything else
 * could begin). This manager reads {@code jobgate-logging.properties} from the class path, and keeps
 * its handlers through the JVM's shutdown, when JUL's own hook would drop them while Camel's is still
 * stopping the routes and embedded parts and logging it. Chosen by
 * {@code -Djava.util.logging.manager=io.jobgate.common.JobgateLogManager} ({@link LogSetup#use}
 * before anything logs; the tests' JVM has it on its command line).
 */
public final class JobgateLogManager extends LogManager {

    /** {@code -Djava.util.logging.config.file=…} if given (JUL's own rule), else the bundled file. */
    @Override
    public void readConfiguration() throws IOException {
        if (System.getProperty("java.util.logging.config.file") != null) {
            super.readConfiguration();
            return;
        }
        try (InputStream in = JobgateLogManager.class.getResourceAsStream("/jobgate-logging.properties")) {
            if (in == null) {
                throw new IOException("jobgate-logging.properties is not on the class path");
            }
            readConfiguration(in);
        }
    }

    @Override
    public void reset() {
        if (Thread.currentThread().getClass().getName().equals("java.util.logging.LogManager$Cleaner")) {
            return; // JVM shutdown: later shutdown hooks still log
        }
        super.reset();
    }
}
