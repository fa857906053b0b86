package io.jobgate.reconcile;

import java.sql.Connection;
import java.sql.Statement;

import io.jobgate.job.JobSchedules;
import io.jobgate.support.GenericPlans;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The poller's claim reads only the jobs waiting on a provider, whatever else is open: planned the
 * way the pool runs it (a generic plan), it walks the partial index of due checks. With the waiting
 * statuses as a parameter the planner could not prove that index's predicate, and during a backlog
 * of queued jobs each poll read every open job (~50 ms a poll at 20,000 open jobs, twice a second).
 */
class ReconcilerPlansTest {

    @Test
    void theClaimOfDueChecksReadsTheIndexOfWaitingJobs() throws Exception {
        TestDatabase.migratedPool(1).close(); // the schema the gateway runs on
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            s.execute("SET plan_cache_mode = force_generic_plan");
            // The test database's jobs table is small enough to be read whole, or through any index of
            // open jobs and a sort; what is asked here is whether the index of due checks can serve the
            // claim at all (a backlog makes any other read the cost). Only that index gives the claim's
            // order without a sort; on small tables the planner's choice among the others is a coin toss.
            s.execute("SET enable_seqscan = off");
            s.execute("SET enable_sort = off");
            String plan = GenericPlans.ofJdbc(s, JobSchedules.CLAIM_DUE);
            assertThat(plan).as(plan).contains("Index Scan using jobs_checks_due on jobs");
            s.execute("DEALLOCATE ALL");
            s.execute("RESET ALL");
        }
    }
}
