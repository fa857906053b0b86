package io.jobgate.job;

/**
 * The part an attempt's adapter revision plays (docs/canary.md): the provider's stable revision, whose answers are
 * the job's, or a canary candidate, whose outputs are held and whose failures are its own, never the job's.
 */
public enum RevisionRole {
    STABLE, CANDIDATE
}
