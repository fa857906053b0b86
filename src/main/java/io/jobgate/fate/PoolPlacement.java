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

        /**
         * What the job says while it waits for its member (its {@code waiting_reason}: its closed gate or its cooldown,
         * in {@code why}); null when it can go now.
         */
        public String waitingReason() {
            return notBefore == null ? null : "waits for " + member + " until " + notBefore + ": " + why;
        }
    }

    /**
     * No member can serve this job at all (kind, aspect class, input size, route): {@code why} names each one's reason;
     * {@code drained}: some member could, but an operator drained each of those.
     */
    record Unserved(String why, boolean drained) implements PoolPlacement {

        public Unserved(String why) {
            this(why, false);
        }
    }
}
