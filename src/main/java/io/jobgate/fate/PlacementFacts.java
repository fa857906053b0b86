package io.jobgate.fate;

import java.time.Instant;
import java.util.function.BooleanSupplier;

/**
 * What placing one attempt reads, gathered by the caller in the start's transaction. The two facts that cost a
 * statement are asked last, and only when every cheaper rule has let the candidate through: the job's previous
 * revision, and the candidate's first-sample count (which takes an advisory lock).
 *
 * @param canary             the provider's canary, {@link Canary#NONE} when no candidate route is loaded
 * @param attemptsSoFar      the job's attempts before this one
 * @param inShare            the attempt's hash bucket falls within the candidate's share
 * @param closedUntil        the candidate's own gate (its 429), or null
 * @param previousOnCandidate whether the job's previous attempt ran on the candidate (asked lazily)
 * @param sampleFull         whether the candidate already has its first sample before its gates judged it (asked
 *                           lazily, last)
 */
public record PlacementFacts(Canary canary, int attemptsSoFar, int maxAttempts, boolean inShare, Instant closedUntil,
                             BooleanSupplier previousOnCandidate, BooleanSupplier sampleFull, Instant now) {

    /** A provider's canary as the placement sees it. */
    public enum Canary {
        NONE, RUNNING, STOPPED, PROMOTED
    }
}
