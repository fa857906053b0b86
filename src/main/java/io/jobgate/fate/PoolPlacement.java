package io.jobgate.fate;

import java.time.Instant;

/** Which member of a pool an attempt goes to, or why none can serve the job. */
public sealed interface PoolPlacement {

    /**
     * The attempt goes to {@code member}.
     *
     * @param notBefore its gate's reopening when it is closed now (the attempt waits for it, never fails for it), else null
     * @param why       how it was chosen (for the log line of a move)
     */
    record To(String member, Instant notBefore, String why) implements PoolPlacement {
    }

    /** No member can serve this job at all (kind, aspect class, input size, route): {@code why} names each one's reason. */
    record Unserved(String why) implements PoolPlacement {
    }
}
