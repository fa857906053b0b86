package io.jobgate.pool;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.common.ApiProblem;
import io.jobgate.fate.MemberState;
import io.jobgate.support.MovableClock;
import io.jobgate.support.TestDatabase;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A pool member's health on the shared table (V38): failures counted in a window cool it down at its threshold; when
 * the cooldown ends one attempt probes it, whose success gives it its traffic back and whose failure cools it again; an
 * operator's drain keeps new attempts off it until restored. Two instances see one state (two PoolHealth on one table).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PoolHealthTest {

    static final Pool.Member A = new Pool.Member("ha", 1, Duration.ofSeconds(60), 3, Duration.ofSeconds(60), Duration.ofSeconds(30));
    static final Pool.Member B = new Pool.Member("hb", 1, Duration.ofSeconds(60), 0, Duration.ofSeconds(60), Duration.ofSeconds(30));
    static final Pool POOL = new Pool("health-test", "image", List.of(A, B));

    /** Timestamps as stored (microseconds) against the clock's (nanoseconds). */
    static final org.assertj.core.data.TemporalUnitOffset MS = org.assertj.core.api.Assertions.within(1, java.time.temporal.ChronoUnit.MILLIS);

    HikariDataSource db;
    JdbcTemplate jdbc;
    MovableClock clock;
    PoolHealth health;
    /** A second instance on the same table. */
    PoolHealth other;

    @BeforeAll
    void migrate() {
        db = TestDatabase.migratedPool(3);
        jdbc = new JdbcTemplate(db);
        io.jobgate.support.TestTenants.tenant(jdbc, "health-tenant", 100, 10, 1_000_000);
    }

    @BeforeEach
    void fresh() {
        jdbc.update("DELETE FROM pool_members WHERE pool = ?", POOL.name());
        jdbc.update("DELETE FROM outbox WHERE tenant_id = 'health-tenant'");
        jdbc.update("DELETE FROM jobs WHERE tenant_id = 'health-tenant'");
        clock = new MovableClock();
        // Every read reads the table (an instance's snapshot is at most a second old: PoolHealth.SNAPSHOT_AGE).
        health = new PoolHealth(jdbc, clock, Duration.ZERO);
        other = new PoolHealth(jdbc, clock, Duration.ZERO);
    }

    @AfterAll
    void close() {
        jdbc.update("DELETE FROM pool_members WHERE pool = ?", POOL.name());
        db.close();
    }

    @Test
    void itsThresholdOfFailuresWithinItsWindowCoolsItDownForEveryJobAndOnlyThen() {
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        assertThat(state(health, A)).isEqualTo(MemberState.HEALTHY);
        // The window ran out: counting starts again.
        clock.advance(Duration.ofSeconds(61));
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        assertThat(state(health, A)).isEqualTo(MemberState.HEALTHY);
        java.time.Instant third = clock.instant();
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        PoolHealth.State cooling = other.state(POOL, A, UUID.randomUUID());
        assertThat(cooling.state()).as("seen by another instance").isEqualTo(MemberState.COOLING);
        assertThat(cooling.until()).as("its cooldown from the third failure").isBetween(third.plusSeconds(29), clock.instant().plusSeconds(30));
        // The other member of the pool is not touched; a member of threshold 0 never cools.
        assertThat(state(health, B)).isEqualTo(MemberState.HEALTHY);
        for (int i = 0; i < 10; i++) {
            health.failed(POOL, B, UUID.randomUUID(), "HTTP 503");
        }
        assertThat(state(health, B)).isEqualTo(MemberState.HEALTHY);
    }

    @Test
    void failuresWhileItCoolsNeitherCountNorLengthenTheCooldown() {
        coolA();
        java.time.Instant until = health.state(POOL, A, null).until();
        clock.advance(Duration.ofSeconds(20));
        for (int i = 0; i < 5; i++) {
            health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        }
        assertThat(health.state(POOL, A, null).until()).isEqualTo(until);
        assertThat(jdbc.queryForObject("SELECT failures FROM pool_members WHERE pool = ? AND member = ?", Integer.class,
                POOL.name(), A.provider())).isZero();
    }

    @Test
    void whenItsCooldownEndsOneAttemptProbesItAndItsSuccessGivesItsTrafficBack() {
        coolA();
        clock.advance(Duration.ofSeconds(31));
        UUID probe = UUID.randomUUID();
        UUID another = UUID.randomUUID();
        assertThat(state(health, A)).isEqualTo(MemberState.PROBE_OPEN);
        assertThat(health.claimProbe(POOL, A, probe)).isTrue();
        assertThat(other.claimProbe(POOL, A, another)).as("one probe at a time, across instances").isFalse();
        assertThat(other.state(POOL, A, another).state()).isEqualTo(MemberState.PROBING);
        assertThat(other.state(POOL, A, probe).state()).as("the probe's own attempt goes").isEqualTo(MemberState.HEALTHY);
        // Another job's success (one already there before the cooldown) decides nothing: the probe does.
        other.succeeded(POOL, A, another);
        assertThat(state(health, A)).isEqualTo(MemberState.PROBING);
        other.succeeded(POOL, A, probe);
        assertThat(state(health, A)).isEqualTo(MemberState.HEALTHY);
        assertThat(jdbc.queryForObject("SELECT failures FROM pool_members WHERE pool = ? AND member = ?", Integer.class,
                POOL.name(), A.provider())).isZero();
    }

    @Test
    void aFailedProbeCoolsItAgain() {
        coolA();
        clock.advance(Duration.ofSeconds(31));
        UUID probe = UUID.randomUUID();
        assertThat(health.claimProbe(POOL, A, probe)).isTrue();
        health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        assertThat(state(health, A)).as("another job's failure is not the probe's").isEqualTo(MemberState.PROBING);
        health.failed(POOL, A, probe, "HTTP 503");
        PoolHealth.State again = health.state(POOL, A, probe);
        assertThat(again.state()).isEqualTo(MemberState.COOLING);
        assertThat(again.until()).isAfter(clock.instant().plusSeconds(29));
    }

    @Test
    void aProbeThatRunsPastItsTimeLetsAnotherAttemptProbe() {
        coolA();
        clock.advance(Duration.ofSeconds(31));
        assertThat(health.claimProbe(POOL, A, UUID.randomUUID())).isTrue();
        clock.advance(PoolHealth.probeTime(A).plusSeconds(1));
        assertThat(state(health, A)).isEqualTo(MemberState.PROBE_OPEN);
        assertThat(other.claimProbe(POOL, A, UUID.randomUUID())).isTrue();
    }

    @Test
    void aDrainKeepsNewAttemptsOffUntilRestoredAndNamesWhoDidIt() {
        health.drain(POOL, A.provider(), "ops@example.com", "provider maintenance");
        assertThat(other.state(POOL, A, UUID.randomUUID()).state()).isEqualTo(MemberState.DRAINED);
        PoolHealth.Row row = health.rows().get(POOL.name()).get(A.provider());
        assertThat(row.drainedBy()).isEqualTo("ops@example.com");
        assertThat(row.drainedReason()).isEqualTo("provider maintenance");
        // Drained, it cannot be probed either; restored, it is healthy again.
        assertThat(health.claimProbe(POOL, A, UUID.randomUUID())).isFalse();
        assertThat(health.restore(POOL, A.provider(), "ops@example.com", null)).isPresent();
        assertThat(state(other, A)).isEqualTo(MemberState.HEALTHY);
        assertThatThrownBy(() -> health.drain(POOL, "nobody", "ops", null)).isInstanceOf(ApiProblem.class)
                .hasMessageContaining("has no member 'nobody'");
    }

    @Test
    void theJobsWaitingOnItsProbeAreDueAtItsResultNotItsDeadline() {
        coolA();
        clock.advance(Duration.ofSeconds(31));
        UUID probe = UUID.randomUUID();
        assertThat(health.claimProbe(POOL, A, probe)).isTrue();
        java.time.Instant probeEnds = clock.instant().plus(PoolHealth.probeTime(A));
        // Placed while the probe runs: one waits for its end; one waits for its gate an hour away; one waits on the other member.
        UUID waitsForProbe = waiting(A, probeEnds);
        java.time.Instant gateReopens = clock.instant().plusSeconds(3600);
        UUID waitsForGate = waiting(A, gateReopens);
        UUID onOther = waiting(B, probeEnds);
        clock.advance(Duration.ofSeconds(2));
        List<java.time.Instant> relayTold = new java.util.ArrayList<>();
        health.onDispatchDue(relayTold::add);

        health.failed(POOL, A, probe, "HTTP 503");
        java.time.Instant coolsUntil = health.state(POOL, A, UUID.randomUUID()).until();
        assertThat(dueAt(waitsForProbe)).as("a failed probe: due when the new cooldown ends, not at the probe's deadline")
                .isCloseTo(coolsUntil, MS);
        assertThat(shownDue(waitsForProbe)).isCloseTo(coolsUntil, MS);
        assertThat(dueAt(waitsForGate)).as("waits for its gate: untouched").isCloseTo(gateReopens, MS);
        assertThat(dueAt(onOther)).as("waits on the other member: untouched").isCloseTo(probeEnds, MS);
        assertThat(relayTold).hasSize(1);
        assertThat(relayTold.get(0)).isCloseTo(coolsUntil, MS);

        clock.advance(Duration.ofSeconds(31));
        UUID second = UUID.randomUUID();
        assertThat(other.claimProbe(POOL, A, second)).isTrue();
        // The job woke at the cooldown's end, found the new probe running, and waits for its end again.
        io.jobgate.support.JobFactory.on(jdbc).waitsUntil(waitsForProbe, clock.instant().plus(PoolHealth.probeTime(A)));
        health.succeeded(POOL, A, second);
        java.time.Instant decided = relayTold.get(relayTold.size() - 1);
        assertThat(decided).isBetween(clock.instant().minusSeconds(5), clock.instant());
        assertThat(dueAt(waitsForProbe)).as("a probe that succeeded: due now").isCloseTo(decided, MS);
        assertThat(shownDue(waitsForProbe)).isCloseTo(decided, MS);
        assertThat(dueAt(onOther)).isCloseTo(probeEnds, MS);
        assertThat(relayTold).hasSize(2);
    }

    @Test
    void aWaitWrittenJustAfterTheProbeSucceededIsWokenAgain() {
        coolA();
        clock.advance(Duration.ofSeconds(31));
        UUID probe = UUID.randomUUID();
        assertThat(health.claimProbe(POOL, A, probe)).isTrue();
        health.succeeded(POOL, A, probe);
        // A start that read "probing" before the success writes its wait for the probe's deadline after the first wake.
        java.time.Instant staleDeadline = clock.instant().plus(PoolHealth.probeTime(A));
        UUID straggler = waiting(A, staleDeadline);
        assertThat(dueAt(straggler)).isCloseTo(staleDeadline, MS);
        org.awaitility.Awaitility.await("the second wake").atMost(PoolHealth.REWAKE_MARGIN.plusSeconds(10))
                .pollInterval(Duration.ofMillis(100)).until(() -> dueAt(straggler).isBefore(clock.instant()));
    }

    /** A job of the pool in retry_wait on {@code member}, its dispatch event due at {@code at}. */
    private UUID waiting(Pool.Member member, java.time.Instant at) {
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.on(jdbc);
        UUID job = jobs.job("health-tenant").pool(POOL.name()).provider(member.provider()).status("retry_wait").attempts(1)
                .nextAttemptAt(at).insert();
        jobs.dispatch(job, "health-tenant", at);
        return job;
    }

    private java.time.Instant dueAt(UUID job) {
        return jdbc.queryForObject("SELECT available_at FROM outbox WHERE job_id = ? AND event_type = 'dispatch'",
                java.sql.Timestamp.class, job).toInstant();
    }

    private java.time.Instant shownDue(UUID job) {
        return jdbc.queryForObject("SELECT next_attempt_at FROM jobs WHERE job_id = ?", java.sql.Timestamp.class, job).toInstant();
    }

    private void coolA() {
        for (int i = 0; i < A.failureThreshold(); i++) {
            health.failed(POOL, A, UUID.randomUUID(), "HTTP 503");
        }
        assertThat(state(health, A)).isEqualTo(MemberState.COOLING);
    }

    private MemberState state(PoolHealth h, Pool.Member member) {
        return h.state(POOL, member, UUID.randomUUID()).state();
    }
}
