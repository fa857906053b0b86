package io.jobgate.common;

/**
 * The gateway will not start as configured, and says so in one line: what, why, and what to set. The
 * {@code run} command prints that line alone (the stack at debug level), since the refusal is the
 * operator's to act on, not a fault of the code.
 */
public class StartRefused extends IllegalStateException {

    public StartRefused(String message) {
        super(message);
    }

    /** The refusal behind {@code failure}, if it is one (Camel and the background starts wrap it). */
    public static java.util.Optional<StartRefused> in(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof StartRefused refused) {
                return java.util.Optional.of(refused);
            }
        }
        return java.util.Optional.empty();
    }
}
