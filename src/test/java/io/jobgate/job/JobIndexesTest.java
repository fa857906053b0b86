package io.jobgate.job;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import io.jobgate.support.GenericPlans;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the jobs table's indexes cost a drained job (V26): every row version that is not HOT inserts
 * into each index whose predicate it meets, so an index no statement needs is paid four times a job.
 */
class JobIndexesTest {

    @Test
    void theRelaysSlotChangesNoIndexedColumnSoItsVersionMayBeHot() throws Exception {
        TestDatabase.migratedPool(1).close(); // the schema the gateway runs on
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("""
                     SELECT i.indexrelid::regclass::text AS name FROM pg_index i
                      WHERE i.indrelid = 'jobs'::regclass
                        AND (EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attname = 'dispatched_at'
                                        AND a.attnum = ANY (i.indkey))
                             OR pg_get_indexdef(i.indexrelid) LIKE '%dispatched_at%')""")) {
            List<String> indexes = new ArrayList<>();
            while (rs.next()) {
                indexes.add(rs.getString(1));
            }
            // The relay's claim sets dispatched_at and nothing else (sql/relay-claim-dispatch.sql).
            assertThat(indexes).as("indexes of jobs that read dispatched_at (key, expression or predicate)").isEmpty();
        }
    }

    @Test
    void theLeasesOfOneOwnerAreFoundAmongTheLeasedJobsOnly() throws Exception {
        TestDatabase.migratedPool(1).close();
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            s.execute("SET plan_cache_mode = force_generic_plan");
            // The test database's jobs table is small enough to be read whole: asked is whether an index
            // of leased jobs serves the lookup at all (Sweeper.reclaimLeasesOfGoneInstances, handBack).
            s.execute("SET enable_seqscan = off");
            for (String lookup : List.of(
                    "SELECT job_id, lease_token, lease_owner, status, provider FROM jobs WHERE lease_token IS NOT NULL AND lease_owner = ANY (?) LIMIT ?",
                    "SELECT job_id, lease_token, lease_owner, status, provider FROM jobs WHERE lease_token IS NOT NULL AND lease_owner = ?")) {
                String plan = GenericPlans.ofJdbc(s, lookup);
                // An index scan or a bitmap scan of the partial index of leased jobs, either way bounded by them.
                assertThat(plan).as(plan).containsPattern("Index Scan (using|on) jobs_lease_expiry").doesNotContain("Seq Scan");
            }
            s.execute("DEALLOCATE ALL");
            s.execute("RESET ALL");
        }
    }
}
