package io.jobgate.bench;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.TestDatabase;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The history bench measures the drain with and without 1M finished jobs of the drain's own tenants;
 * what the bench itself runs while its clock runs must not grow with that history, or it measures
 * itself. Proven on the plans, as {@code HotPathPlansTest} does for the gateway's statements: with a
 * history of the drain tenants seeded, none of the drain's probes reads jobs or the outbox whole.
 */
class DrainProbesTest extends GatewayTestBase {

    static final Pattern WHOLE_TABLE = Pattern.compile("Seq Scan on (jobs|outbox)\\b");
    static final List<String> TENANTS = List.of("bench-1-drain-00", "bench-1-drain-01");

    @BeanInject("dataSource")
    DataSource dataSource;

    @Test
    void theDrainsProbesReadItsOwnJobsAndWaitingEventsNotTheHistory() throws Exception {
        HistorySeed.seed(dataSource, TENANTS, "fakeimg", 30_000, Duration.ofDays(1));
        List<String> scans = new ArrayList<>();
        try (Connection c = TestDatabase.connect(); Statement s = c.createStatement()) {
            s.execute("SET plan_cache_mode = force_generic_plan");
            for (String probe : List.of(DrainBench.STILL_OPEN, DrainBench.FAILED, DrainBench.STATUS_WAITING,
                    DrainBench.RELEASE)) {
                String plan = io.jobgate.support.GenericPlans.ofJdbc(s, probe);
                if (WHOLE_TABLE.matcher(plan).find()) {
                    scans.add(probe + "\n" + plan);
                }
            }
            // The check sees what it is for: the drain tenants' jobs counted by tenant, as the probe was.
            assertThat(io.jobgate.support.GenericPlans.ofJdbc(s, "SELECT count(*) FILTER (WHERE finalized_at IS NULL) FROM jobs WHERE tenant_id LIKE ?"))
                    .containsPattern(WHOLE_TABLE);
        }
        assertThat(scans).as("probes of the drain that read a history table whole").isEmpty();

        // What the probes count: of the given jobs, the open ones and the failed ones.
        List<UUID> some = new ArrayList<>();
        try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT job_id FROM jobs WHERE tenant_id = 'bench-1-drain-00' LIMIT 3")) {
            while (rs.next()) {
                some.add(rs.getObject(1, UUID.class));
            }
            assertThat(some).hasSize(3);
            // Seeded as succeeded: none open, none failed; an id of no job counts nothing.
            some.add(UUID.randomUUID());
            UUID[] given = some.toArray(UUID[]::new);
            assertThat(DrainBench.stillOpen(c, given)).isEmpty();
            assertThat(DrainBench.failed(c, given)).isZero();
            s.execute("INSERT INTO tenants (tenant_id, display_name, api_key_sha256, max_open_jobs, max_running_jobs, "
                    + "max_queued_bytes) VALUES ('bench-1-drain-00', 'drain', 'probe-test', 10, 10, 0) ON CONFLICT DO NOTHING");
            UUID open = UUID.randomUUID();
            UUID failed = UUID.randomUUID();
            io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onConnection(c);
            java.time.Instant inAMinute = java.time.Instant.now().plusSeconds(60);
            jobs.job("bench-1-drain-00").id(open).key("probe-open").preset("p", 1).maxAttempts(1).lifetime(60, inAMinute).insert();
            jobs.job("bench-1-drain-00").id(failed).key("probe-failed").status("failed").preset("p", 1).maxAttempts(1)
                    .lifetime(60, inAMinute).finalizedAt(java.time.Instant.now()).errorCategory("transient").insert();
            some.add(open);
            some.add(failed);
            given = some.toArray(UUID[]::new);
            assertThat(DrainBench.stillOpen(c, given)).containsExactly(open);
            assertThat(DrainBench.failed(c, given)).isEqualTo(1);
        }
    }
}
