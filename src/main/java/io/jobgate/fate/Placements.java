package io.jobgate.fate;

import io.jobgate.job.RevisionRole;

/**
 * Where an attempt runs, decided in one place (docs/canary.md). The candidate gets the attempt when its route is
 * loaded and its canary running (promoted: every attempt, as the approved revision), the job keeps an attempt for
 * the stable revision after this one, the attempt's bucket is within the share, its own gate is open, the job's previous
 * attempt did not run on it, and — until its gates judged a full sample — it has fewer than
 * {@code canary.min-sample} attempts started. Pure: the caller reads the facts and writes the choice.
 */
public final class Placements {

    private Placements() {
    }

    public static Placement place(PlacementFacts facts) {
        switch (facts.canary()) {
            case NONE -> {
                return new Placement.Stable("no candidate loaded");
            }
            case PROMOTED -> {
                return new Placement.OnCandidate(RevisionRole.STABLE);
            }
            case STOPPED -> {
                return new Placement.Stable("its canary is stopped");
            }
            default -> {
                // running: the rules below
            }
        }
        if (facts.attemptsSoFar() + 1 >= facts.maxAttempts()) {
            return new Placement.Stable("the job's last attempt is the stable revision's");
        }
        if (!facts.inShare()) {
            return new Placement.Stable("outside the candidate's share");
        }
        // The facts read from the database (the previous attempt's revision, the sample's count) are asked last.
        if (facts.closedUntil() != null && facts.closedUntil().isAfter(facts.now())) {
            return new Placement.Stable("the candidate's own gate is closed until " + facts.closedUntil());
        }
        if (facts.previousOnCandidate().getAsBoolean()) {
            return new Placement.Stable("its previous attempt ran on the candidate");
        }
        if (facts.sampleFull().getAsBoolean()) {
            return new Placement.Stable("the candidate's first sample is full");
        }
        return new Placement.OnCandidate(RevisionRole.CANDIDATE);
    }
}
