package io.jobgate.job;

import java.util.Locale;

/**
 * The part an attempt's adapter revision plays (docs/canary.md): the provider's stable revision, whose answers are
 * the job's, or a canary candidate, whose outputs are held and whose failures are its own, never the job's. Carried
 * on the attempt and on its job from the attempt's start ({@code revision_role}); a canary's promotion, restart or
 * stop rewrites it on the open jobs of its revisions ({@link JobRows#assignRole}).
 */
public enum RevisionRole {
    STABLE, CANDIDATE;

    /**
     * The role column of {@code jobs} as the statement names the table: a row written before the column existed
     * reads as its revision's role now (a canary's revision not promoted is a candidate).
     */
    static String column(String jobs) {
        return """
                coalesce(%1$s.revision_role, CASE WHEN EXISTS (SELECT 1 FROM canaries c WHERE %1$s.adapter_revision = ANY (c.revisions)
                   AND c.status <> 'promoted') THEN 'candidate' ELSE 'stable' END) AS revision_role""".formatted(jobs);
    }

    public String wire() {
        return name().toLowerCase(Locale.ROOT);
    }

    static RevisionRole fromWire(String value) {
        return value == null ? STABLE : valueOf(value.toUpperCase(Locale.ROOT));
    }
}
