package io.jobgate.output;

import io.jobgate.job.ErrorCategory;

/**
 * What {@link OutputStore} did with an output. Each is an ordinary end of storing one (the caller moves
 * the job by it), so it comes back as a value; only a failure of the store itself (S3, the route) is an
 * exception. Java 17 has no pattern {@code switch}: callers test each kind with {@code instanceof}.
 */
public sealed interface StoreResult {

    /** Checked and readable under {@code outputs/<tenant>/<job>/}; {@code record}: the result record (JSON) for the job. */
    record Promoted(String record) implements StoreResult {
    }

    /**
     * A canary candidate's output (docs/canary.md): checked like any, then kept in quarantine with its
     * manifest beside it, never promoted; {@code record}: the record (JSON) of where it lies.
     */
    record Held(String record) implements StoreResult {
    }

    /**
     * The output's signal (a worker whose lease was lost, evidence for a job that ended meanwhile) may no
     * longer finish the job: nothing was promoted, and no quarantine object is left.
     */
    record Superseded() implements StoreResult {
    }

    /**
     * Not stored: the output could not be had (download, base64, byte cap; the category says whether a
     * later try may get it) or the checks refused it ({@code invalid_output}, kept in quarantine for an
     * operator). The attempt ends with this category and message.
     */
    record Refused(ErrorCategory category, String message) implements StoreResult {
    }
}
