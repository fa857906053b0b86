package io.jobgate.fate;

import io.jobgate.job.RevisionRole;

/** Where an attempt runs: the provider's stable revision, or its canary candidate ({@link Placements#place}). */
public sealed interface Placement {

    /** The stable revision, and why not the candidate (for the log and the table). */
    record Stable(String why) implements Placement {
    }

    /**
     * The candidate's route and revision.
     *
     * @param role {@link RevisionRole#CANDIDATE} while its outputs are held; {@link RevisionRole#STABLE} once promoted
     */
    record OnCandidate(RevisionRole role) implements Placement {
    }
}
