package io.jobgate.fate;

import io.jobgate.job.ErrorCategory;
import java.time.Instant;

/** What was learned about a job's attempt (or its start), from whichever source. */
public sealed interface Evidence {

    /**
     * The attempt failed with a category: an adapter's answer to a submit, a lookup's or a webhook's declared
     * failure, an output refused by its checks.
     *
     * @param retryAfter the provider's {@code Retry-After} with a 429, else null
     */
    record Failure(ErrorCategory category, String message, String retryAfter) implements Evidence {
    }

    /**
     * The provider has not got the request, or deduplicates a resubmit by our key: a new attempt is safe.
     *
     * @param why said in the job's message when the caps end it
     */
    record NotAtProvider(String why) implements Evidence {
    }

    /**
     * A canary candidate's output was checked and kept in quarantine: never the job's.
     *
     * @param record its quarantine record, kept on its attempt (null where the caller records it itself)
     */
    record HeldOutput(String record) implements Evidence {
    }

    /** The attempt's output was checked and promoted: the job's result ({@code record}). */
    record Output(String record) implements Evidence {
    }

    /**
     * The provider has the task and is still working on it.
     *
     * @param wasUnknown the job was {@code submission_unknown}: its task is found
     */
    record TaskRunning(String task, String state, boolean wasUnknown) implements Evidence {
    }

    /**
     * Nothing to decide on yet (no answer, a retryable refusal of the output, an answer that moves nothing, a
     * provider that may not be asked now).
     *
     * @param until when to ask again, null: the job's next check
     */
    record NoAnswer(String why, Instant until) implements Evidence {
        public NoAnswer(String why) {
            this(why, null);
        }
    }

    /**
     * A lookup was answered {@code 429} that the adapter did not declare to be about the task: the provider asks to be
     * left alone (its gate, or a candidate's own, closes as after a submit's 429), and the task is asked about again
     * once the pause is over.
     *
     * @param retryAfter the provider's {@code Retry-After}, null when it sent none
     */
    record LookupRateLimited(String retryAfter) implements Evidence {
    }

    /**
     * A lease ended with nobody to finish its attempt (expired, handed back, its owner gone).
     *
     * @param sent         the request may have reached the provider
     * @param resubmitSafe the provider deduplicates by our key, or the attempt was a candidate's
     */
    record LeaseEnded(boolean sent, boolean resubmitSafe, String why) implements Evidence {
    }

    /**
     * A canary was stopped while the job waited on its candidate's task: its next attempt, on the stable revision,
     * is due now (the candidate's task could only ever give a held output).
     */
    record RolledBack(String why) implements Evidence {
    }

    /** A start with nothing against it yet: may an attempt begin? */
    record Starting() implements Evidence {
    }

    /**
     * A start that cannot run now: the provider's gate is closed, its calls are all taken, or the stored
     * request could not be re-validated for now.
     *
     * @param category the re-validation's category, null when the provider made it wait
     */
    record Deferred(Instant until, ErrorCategory category, String reason) implements Evidence {
    }

    /**
     * The broker dead-lettered the dispatch message the job waits on: no attempt started from it (a worker that rolled
     * it back each time, or consumers killed with it in their buffers, each counted as a delivery).
     *
     * @param givenBackBefore the job's dispatches given back to the outbox before this one
     */
    record DispatchDeadLettered(int givenBackBefore) implements Evidence {
    }
}
