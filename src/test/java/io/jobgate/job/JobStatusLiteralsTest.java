package io.jobgate.job;

import java.util.EnumSet;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The status literals the jobs queries write from {@link JobStatus} are the text the partial indexes
 * name (V4 jobs_checks_due, V20.1 jobs_succeeded_at): a generic plan can use such an index only when the
 * statement spells its predicate the same way.
 */
class JobStatusLiteralsTest {

    @Test
    void theWaitingPredicateIsTheOneTheIndexOfDueChecksNames() {
        assertThat(JobSchedules.WAITING_PREDICATE)
                .isEqualTo("status IN ('provider_pending', 'submission_unknown') AND finalized_at IS NULL");
        assertThat(JobSchedules.CLAIM_DUE).contains("WHERE " + JobSchedules.WAITING_PREDICATE + " AND next_check_at <= ?");
    }

    @Test
    void literalsAreTheWireNamesQuotedInWireOrder() {
        assertThat(JobStatus.SUCCEEDED.sqlLiteral()).isEqualTo("'succeeded'");
        assertThat(JobStatus.sqlLiterals(EnumSet.of(JobStatus.SUBMITTING, JobStatus.RUNNING))).isEqualTo("'running', 'submitting'");
        assertThat(JobStatus.sqlLiterals(EnumSet.noneOf(JobStatus.class))).isEmpty();
        for (JobStatus status : JobStatus.values()) {
            assertThat(status.sqlLiteral()).isEqualTo("'" + status.wire() + "'");
        }
    }
}
