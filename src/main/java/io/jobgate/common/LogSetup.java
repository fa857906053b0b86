package io.jobgate.common;

/** Chooses {@link JobgateLogManager} for this JVM, before anything logs. */
public final class LogSetup {

    private LogSetup() {
    }

    /**
     * Call before the first logger is made. (Not a method of the manager itself: initialising that
     * class initialises JUL's LogManager first, which reads the setting before it is set.)
     */
    public static void use() {
        System.setProperty("java.util.logging.manager", "io.jobgate.common.JobgateLogManager");
    }
}
