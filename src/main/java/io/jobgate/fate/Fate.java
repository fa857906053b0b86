package io.jobgate.fate;

import io.jobgate.job.ErrorCategory;
import java.time.Instant;

/** What becomes of a job after a piece of {@link Evidence}: the one decision its caller applies. */
public sealed interface Fate {

    /** A 429's pause this decision applies (a {@link Retry}'s or a {@link Fail}'s), else null. */
    default RateLimit rateLimit() {
        return null;
    }

    /**
     * The job fails now.
     *
     * @param cause     what used its caps up, when it was a 429 (the metrics' 429-caused failures), else null
     * @param rateLimit a 429's pause, applied even though the job ends (other jobs wait it out), else null
     */
    record Fail(ErrorCategory category, String message, String cause, RateLimit rateLimit) implements Fate {
        Fail(ErrorCategory category, String message) {
            this(category, message, null, null);
        }
    }

    /**
     * A new attempt at {@code at} (on the stable revision when the last ran on a candidate).
     *
     * @param unparseableStreak the stable revision's unparseable replies in a row, carried to the next attempt
     * @param last              the category shown with the retry, null when nothing failed
     * @param rateLimit         a 429's pause to close a gate with, else null
     */
    record Retry(Instant at, int unparseableStreak, ErrorCategory last, RateLimit rateLimit) implements Fate {
    }

    /** The request may have reached a provider that does not deduplicate: {@code submission_unknown}, looked up first. */
    record Park() implements Fate {
    }

    /** The job succeeds with its checked, promoted output. */
    record Succeed(String record) implements Fate {
    }

    /**
     * The job waits on its provider's task, asked about again at {@code at}.
     *
     * @param rateLimit a lookup's 429 pause to close a gate with, else null
     */
    record CheckAgain(Instant at, String why, RateLimit rateLimit) implements Fate {
        CheckAgain(Instant at, String why) {
            this(at, why, null);
        }
    }

    /** A {@code submission_unknown} job's task was found: it waits on it, first asked about at {@code firstCheck}. */
    record TaskFound(Instant firstCheck, String task, String state) implements Fate {
    }

    /** The job's dispatch goes out again, under the slot it holds: no attempt was made, none is spent. */
    record Redispatch() implements Fate {
    }

    /** Nothing stands against the attempt: it starts. */
    record Start() implements Fate {
    }

    /**
     * A 429's pause: the gate it closes and until when.
     *
     * @param headerUnderstood null without {@code Retry-After}, else whether it could be read
     * @param candidateGate    the canary candidate's own gate, not the provider's
     */
    record RateLimit(Instant until, Boolean headerUnderstood, boolean candidateGate) {
    }
}
