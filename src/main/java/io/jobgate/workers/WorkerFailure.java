package io.jobgate.workers;

import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;

/**
 * What a worker's fail says of its task (docs/workers.md), and the adapter outcome it becomes. {@code terminal}: the
 * request cannot be rendered (never retried: {@code declined}); {@code transient}: try again, after its
 * {@code retry_after_seconds} when it gives one; {@code unknown}: the worker does not know what happened — retried as
 * transient, which is safe here (unlike a provider's lost reply): the gateway holds the board, and the failed worker's
 * token can deliver nothing any more.
 */
public enum WorkerFailure {
    TERMINAL("declined"), TRANSIENT("transient"), UNKNOWN("transient");

    private final String outcome;

    WorkerFailure(String outcome) {
        this.outcome = outcome;
    }

    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The adapter outcome (an error category's wire name). */
    public String outcome() {
        return outcome;
    }

    public static Optional<WorkerFailure> parse(String wire) {
        return Arrays.stream(values()).filter(f -> f.wire().equals(wire)).findFirst();
    }

    static WorkerFailure of(String wire) {
        return parse(wire).orElse(UNKNOWN);
    }
}
