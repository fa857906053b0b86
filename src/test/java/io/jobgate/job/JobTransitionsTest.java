package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariDataSource;
import io.jobgate.infra.RetryingTransactions;
import io.jobgate.job.JobTransitions.Change;
import io.jobgate.job.JobTransitions.Effect;
import io.jobgate.job.JobTransitions.Event;
import io.jobgate.job.JobTransitions.Guard;
import io.jobgate.support.JobFactory;
import io.jobgate.support.TestDatabase;
import io.jobgate.support.TestTenants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The job state machine walked against PostgreSQL: every (status, event) pair, the allowed ones
 * with each of their effects and the refused ones changing nothing; every (status, status) pair
 * written by hand, which the database refuses unless the table allows it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class JobTransitionsTest {

    static final String TENANT = "walk";
    static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.MICROS);

    HikariDataSource pool;
    JdbcTemplate jdbc;
    JobTransitions transitions;

    @BeforeAll
    void migrate() throws Exception {
        pool = TestDatabase.migratedPool(4);
        TestDatabase.reset();
        jdbc = new JdbcTemplate(pool);
        // A fixed clock: every time the transitions write is this one, so the test can compare them exactly.
        transitions = new JobTransitions(new NamedParameterJdbcTemplate(jdbc), new RetryingTransactions(pool, 3),
                Clock.fixed(NOW, ZoneOffset.UTC));
        TestTenants.withAccount(jdbc, TENANT, 1000, 1000, 1_000_000);
    }

    @AfterAll
    void close() {
        pool.close();
    }

    static Stream<Arguments> everyStatusAndEvent() {
        return Arrays.stream(JobStatus.values()).flatMap(s -> Arrays.stream(Event.values()).map(e -> Arguments.of(s, e)));
    }

    /** A job as it really is in {@code status}: lease, slot, a published and a waiting dispatch event, a debit. */
    record Fixture(UUID jobId, UUID leaseToken, long newestDispatch, boolean holdsSlot) {
    }

    Fixture jobIn(JobStatus status) {
        UUID id = UUID.randomUUID();
        boolean leased = status == JobStatus.RUNNING || status == JobStatus.SUBMITTING;
        boolean slot = Set.of(JobStatus.QUEUED, JobStatus.RETRY_WAIT, JobStatus.RUNNING, JobStatus.SUBMITTING,
                JobStatus.PROVIDER_PENDING).contains(status);
        UUID token = leased ? UUID.randomUUID() : null;
        jdbc.execute((java.sql.Connection c) -> {
            try (var st = c.createStatement()) {
                st.execute("SET session_replication_role = replica"); // set the stage past the triggers
            }
            try {
                JobFactory.onConnection(c).job(TENANT).id(id).key("walk-" + id).status(status.wire()).costMicros(1000).attempts(1)
                        .lease(token, leased ? "walker" : null, leased ? NOW.plusSeconds(60) : null)
                        .dispatchedAt(slot ? NOW : null).finalizedAt(status.terminal() ? NOW : null).insert();
            } finally {
                try (var st = c.createStatement()) {
                    st.execute("SET session_replication_role = DEFAULT");
                }
            }
            return null;
        });
        JobFactory jobs = JobFactory.on(jdbc);
        jobs.ledger(id, TENANT, "debit", -1000);
        jobs.publishedDispatch(id, TENANT);
        jobs.dispatch(id, TENANT, Instant.now().plusSeconds(3600));
        long newest = jdbc.queryForObject("SELECT max(event_id) FROM outbox WHERE job_id = ?", Long.class, id);
        if (status == JobStatus.SUBMITTING) {
            // Its call holds a slot of the provider's limit (V19).
            jdbc.update("INSERT INTO provider_slots (provider, slot, lease_token, job_id, taken_at) VALUES ('fakeimg', ?, ?, ?, now())",
                    SLOTS.getAndIncrement(), token, id);
        }
        if (!status.terminal()) {
            jdbc.update("UPDATE tenant_accounts SET open_jobs = open_jobs + 1, running_jobs = running_jobs + ? WHERE tenant_id = ?",
                    slot ? 1 : 0, TENANT);
            jdbc.update("UPDATE gateway_capacity SET in_flight = in_flight + 1 WHERE id = 1");
            jdbc.update("UPDATE dispatch_window SET running = running + ? WHERE id = 1", slot ? 1 : 0);
        }
        if (slot && BEFORE_CALL_PAST.contains(status)) {
            // Dispatched and not yet past its call: its provider's share of the window (V30), taken by a relay round.
            jdbc.update("INSERT INTO provider_window AS w (provider, shard, running) VALUES ('fakeimg', 0, 1) "
                    + "ON CONFLICT (provider, shard) DO UPDATE SET running = w.running + 1");
        }
        return new Fixture(id, token, newest, slot);
    }

    private static final java.util.concurrent.atomic.AtomicInteger SLOTS = new java.util.concurrent.atomic.AtomicInteger();

    /** A dispatched job in these holds its provider's share of the dispatch window (V30). */
    private static final Set<JobStatus> BEFORE_CALL_PAST = Set.of(JobStatus.QUEUED, JobStatus.RETRY_WAIT, JobStatus.RUNNING,
            JobStatus.SUBMITTING);

    /** What a job and its counters look like, to compare before and after. */
    record Snapshot(Map<String, Object> job, List<Map<String, Object>> outbox, List<Map<String, Object>> ledger,
                    List<Map<String, Object>> attempts, Map<String, Object> counters, boolean holdsProviderSlot) {
    }

    Snapshot snapshot(UUID id) {
        return new Snapshot(
                jdbc.queryForMap("SELECT status, lease_token, dispatched_at, attempts, finalized_at, next_attempt_at, "
                        + "next_check_at, provider_task, error_category, result::text AS result FROM jobs WHERE job_id = ?", id),
                jdbc.queryForList("SELECT event_id, event_type, available_at, published_at, payload->>'status' AS status "
                        + "FROM outbox WHERE job_id = ? ORDER BY event_id", id),
                jdbc.queryForList("SELECT entry_type, amount_micros FROM ledger WHERE job_id = ? ORDER BY entry_id", id),
                jdbc.queryForList("SELECT attempt, lease_token, adapter FROM attempts WHERE job_id = ? ORDER BY attempt", id),
                jdbc.queryForMap("SELECT a.open_jobs::int AS open_jobs, a.running_jobs::int AS running_jobs, "
                        + "(SELECT sum(in_flight)::int FROM gateway_capacity) AS in_flight, "
                        + "(SELECT sum(running)::int FROM dispatch_window) AS window_running, "
                        + "(SELECT coalesce(sum(running), 0)::int FROM provider_window WHERE provider = 'fakeimg') AS provider_window "
                        + "FROM tenant_counters a WHERE tenant_id = ?", TENANT),
                Boolean.TRUE.equals(jdbc.queryForObject("SELECT EXISTS (SELECT 1 FROM provider_slots WHERE job_id = ?)", Boolean.class, id)));
    }

    static Change change(Event event) {
        return switch (event) {
            case START -> Change.start("walker-2", Duration.ofSeconds(30), UUID.randomUUID(), "fakeimg", "fake-r1", RevisionRole.STABLE);
            case LEASE -> Change.lease("walker-2", Duration.ofSeconds(30));
            case SUBMIT -> Change.attempt("walker", "fakeimg", "fake-r1", RevisionRole.STABLE);
            case RETRY, RESUBMIT -> Change.retryAt(NOW.plusSeconds(60), 0, "transient");
            case UNKNOWN -> Change.checkFrom(NOW.plusSeconds(2), null, "req-1", "ambiguous");
            case ACCEPTED, TASK_FOUND -> Change.checkFrom(NOW.plusSeconds(2), "task-" + UUID.randomUUID(), null, null);
            case SUCCEED -> Change.ending(null, null, "{\"ok\": true}", 0);
            case FAIL -> Change.ending("transient", "walked into failure", null, 100);
            case CANCEL -> Change.ending("cancelled", "walked into cancel", null, 100);
            case REDRIVE -> Change.redrive(NOW.plusSeconds(60), 1, null);
        };
    }

    @ParameterizedTest(name = "{0} + {1}")
    @MethodSource("everyStatusAndEvent")
    void eachEventLeavesOnlyItsFromStatesWithItsEffects(JobStatus status, Event event) {
        Fixture job = jobIn(status);
        Snapshot before = snapshot(job.jobId());
        boolean allowed = event.from().contains(status);
        // Allowed: the guard the real caller uses. Refused: the most permissive guard, so the status alone refuses.
        Guard guard = event == Event.LEASE || event == Event.START ? Guard.dispatchEvent(job.newestDispatch())
                : allowed && job.leaseToken() != null ? Guard.lease(job.leaseToken()) : Guard.anyone();

        Optional<JobTransitions.Moved> moved = transitions.apply(job.jobId(), event, guard, change(event));
        Snapshot after = snapshot(job.jobId());

        if (!allowed) {
            assertThat(moved).isEmpty();
            assertThat(after).isEqualTo(before);
            return;
        }
        assertThat(moved).isPresent();
        assertThat(after.job().get("status")).isEqualTo(event.to().wire());
        Set<Effect> effects = event.effects();
        int slotDelta = effects.contains(Effect.RELEASE_SLOT) && job.holdsSlot() ? -1 : 0;
        int openDelta = effects.contains(Effect.FINALIZE) ? -1 : effects.contains(Effect.REOPEN) ? 1 : 0;
        // The provider's share (V30) comes back once the job is past its call, or gives its dispatch slot back before it.
        int providerDelta = job.holdsSlot() && BEFORE_CALL_PAST.contains(status)
                && (effects.contains(Effect.RELEASE_SLOT) || status == JobStatus.SUBMITTING && event.to() != JobStatus.SUBMITTING) ? -1 : 0;
        assertThat(after.counters()).isEqualTo(Map.of(
                "open_jobs", (int) before.counters().get("open_jobs") + openDelta,
                "running_jobs", (int) before.counters().get("running_jobs") + slotDelta,
                "in_flight", (int) before.counters().get("in_flight") + openDelta,
                "window_running", (int) before.counters().get("window_running") + slotDelta,
                "provider_window", (int) before.counters().get("provider_window") + providerDelta));
        // Whatever takes a job out of submitting frees its call's provider slot; the claim is the worker's (JobLeases).
        assertThat(after.holdsProviderSlot()).isEqualTo(before.holdsProviderSlot() && event.to() == JobStatus.SUBMITTING);
        assertThat(after.job().get("dispatched_at") == null)
                .isEqualTo(effects.contains(Effect.RELEASE_SLOT) || before.job().get("dispatched_at") == null);

        if (effects.contains(Effect.TAKE_LEASE)) {
            assertThat(after.job().get("lease_token")).isNotNull().isNotEqualTo(before.job().get("lease_token"));
        } else if (effects.contains(Effect.END_LEASE)) {
            assertThat(after.job().get("lease_token")).isNull();
        } else {
            assertThat(after.job().get("lease_token")).isEqualTo(before.job().get("lease_token"));
        }

        List<Map<String, Object>> waiting = after.outbox().stream()
                .filter(o -> "dispatch".equals(o.get("event_type")) && o.get("published_at") == null).toList();
        if (effects.contains(Effect.DISPATCH_AT)) {
            assertThat(waiting).singleElement().satisfies(o ->
                    assertThat(((Timestamp) o.get("available_at")).toInstant()).isEqualTo(NOW.plusSeconds(60)));
            assertThat(after.job().get("next_attempt_at")).isEqualTo(Timestamp.from(NOW.plusSeconds(60)));
        } else if (effects.contains(Effect.DROP_DISPATCH)) {
            assertThat(waiting).isEmpty();
        } else {
            assertThat(waiting).hasSize(1).first().extracting(o -> o.get("event_id")).isEqualTo(job.newestDispatch());
        }

        List<Object> statusEvents = after.outbox().stream().filter(o -> "status".equals(o.get("event_type")))
                .map(o -> o.get("status")).toList();
        assertThat(statusEvents).isEqualTo(effects.contains(Effect.STATUS_EVENT) ? List.of(event.to().wire()) : List.of());

        if (effects.contains(Effect.OPEN_ATTEMPT)) {
            assertThat(after.job().get("attempts")).isEqualTo((int) before.job().get("attempts") + 1);
            assertThat(after.attempts()).singleElement().satisfies(a -> {
                assertThat(a.get("attempt")).isEqualTo((int) before.job().get("attempts") + 1);
                assertThat(a.get("lease_token")).isEqualTo(after.job().get("lease_token"));
            });
        } else {
            assertThat(after.job().get("attempts")).isEqualTo(before.job().get("attempts"));
            assertThat(after.attempts()).isEmpty();
        }

        if (effects.contains(Effect.SCHEDULE_CHECK)) {
            assertThat(after.job().get("next_check_at")).isEqualTo(Timestamp.from(NOW.plusSeconds(2)));
        }
        assertThat(after.job().get("finalized_at")).isEqualTo(effects.contains(Effect.FINALIZE) ? Timestamp.from(NOW) : null);
        List<Object> refunds = after.ledger().stream().filter(l -> "refund".equals(l.get("entry_type")))
                .map(l -> l.get("amount_micros")).toList();
        assertThat(refunds).isEqualTo(effects.contains(Effect.REFUND) ? List.of(1000L) : List.of());
        if (event == Event.SUCCEED) {
            assertThat((String) after.job().get("result")).contains("\"ok\"");
        }
        if (effects.contains(Effect.REOPEN)) {
            assertThat(after.job().get("error_category")).isNull();
            assertThat(after.ledger()).as("nothing was refunded: nothing is charged again").isEqualTo(before.ledger());
        }
    }

    @Test
    void aSecondEndingChangesNothingAndRefundsNothing() {
        Fixture job = jobIn(JobStatus.PROVIDER_PENDING);
        assertThat(transitions.apply(job.jobId(), Event.FAIL, Guard.anyone(), change(Event.FAIL))).isPresent();
        Snapshot ended = snapshot(job.jobId());
        assertThat(transitions.apply(job.jobId(), Event.CANCEL, Guard.anyone(), change(Event.CANCEL))).isEmpty();
        assertThat(transitions.apply(job.jobId(), Event.FAIL, Guard.anyone(), change(Event.FAIL))).isEmpty();
        assertThat(snapshot(job.jobId())).isEqualTo(ended);
    }

    static Stream<Event> exitsOfSubmitting() {
        return JobTransitions.exits(JobStatus.SUBMITTING).stream().filter(e -> e.to() != JobStatus.SUBMITTING).sorted();
    }

    @ParameterizedTest
    @MethodSource("exitsOfSubmitting")
    void anAnsweredCallGivesItsSlotAndItsProvidersShareBackOnceWhateverEndsItsJobLater(Event event) {
        Fixture job = jobIn(JobStatus.SUBMITTING);
        Snapshot called = snapshot(job.jobId());

        assertThat(transitions.endCall(job.jobId(), UUID.randomUUID())).as("another lease's answer frees nothing").isFalse();
        assertThat(snapshot(job.jobId())).isEqualTo(called);

        assertThat(transitions.endCall(job.jobId(), job.leaseToken())).isTrue();
        Snapshot answered = snapshot(job.jobId());
        assertThat(answered.holdsProviderSlot()).isFalse();
        assertThat(answered.job()).as("the job is still in its call's attempt until the answer is recorded").isEqualTo(called.job());
        assertThat(answered.counters()).isEqualTo(with(called.counters(), "provider_window", -1));
        assertThat(transitions.endCall(job.jobId(), job.leaseToken())).as("given back once").isFalse();
        assertThat(snapshot(job.jobId())).isEqualTo(answered);

        Guard guard = Guard.lease(job.leaseToken());
        assertThat(transitions.apply(job.jobId(), event, guard, change(event))).isPresent();
        Map<String, Object> after = snapshot(job.jobId()).counters();
        assertThat(after.get("provider_window")).as("the provider's share is not given back a second time")
                .isEqualTo(answered.counters().get("provider_window"));
        int slotDelta = event.has(Effect.RELEASE_SLOT) ? -1 : 0;
        int openDelta = event.has(Effect.FINALIZE) ? -1 : 0;
        assertThat(after).isEqualTo(Map.of(
                "open_jobs", (int) answered.counters().get("open_jobs") + openDelta,
                "running_jobs", (int) answered.counters().get("running_jobs") + slotDelta,
                "in_flight", (int) answered.counters().get("in_flight") + openDelta,
                "window_running", (int) answered.counters().get("window_running") + slotDelta,
                "provider_window", answered.counters().get("provider_window")));
    }

    @Test
    void aBatchOfAnsweredCallsGivesEachSlotBackUnderItsOwnLeaseTokenOnce() {
        Fixture first = jobIn(JobStatus.SUBMITTING);
        Fixture stale = jobIn(JobStatus.SUBMITTING);
        Fixture last = jobIn(JobStatus.SUBMITTING);
        Snapshot before = snapshot(first.jobId());
        List<UUID> jobs = List.of(first.jobId(), stale.jobId(), last.jobId());
        List<UUID> tokens = List.of(first.leaseToken(), UUID.randomUUID(), last.leaseToken());

        assertThat(transitions.endCalls(jobs, tokens)).as("the call under another lease's token frees nothing").isEqualTo(2);
        assertThat(snapshot(first.jobId()).holdsProviderSlot()).isFalse();
        assertThat(snapshot(stale.jobId()).holdsProviderSlot()).isTrue();
        assertThat(snapshot(last.jobId()).holdsProviderSlot()).isFalse();
        Snapshot after = snapshot(first.jobId());
        assertThat(after.counters()).isEqualTo(with(before.counters(), "provider_window", -2));
        assertThat(after.job()).as("the jobs stay in their calls' attempts until the answers are recorded").isEqualTo(before.job());

        assertThat(transitions.endCalls(jobs, tokens)).as("given back once").isZero();
        assertThat(snapshot(first.jobId()).counters()).isEqualTo(after.counters());
    }

    private static Map<String, Object> with(Map<String, Object> counters, String name, int delta) {
        Map<String, Object> changed = new java.util.HashMap<>(counters);
        changed.put(name, (int) counters.get(name) + delta);
        return changed;
    }

    @Test
    void aStaleLeaseTokenMovesNothing() {
        Fixture job = jobIn(JobStatus.SUBMITTING);
        Snapshot before = snapshot(job.jobId());
        for (Event event : JobTransitions.exits(JobStatus.SUBMITTING)) {
            assertThat(transitions.apply(job.jobId(), event, Guard.lease(UUID.randomUUID()), change(event))).as(event.name()).isEmpty();
        }
        assertThat(snapshot(job.jobId())).isEqualTo(before);
    }

    @Test
    void anEndingClosesTheWorkersAttemptInItsOwnWritesOnlyUnderItsLease() {
        Fixture job = jobIn(JobStatus.SUBMITTING);
        // An earlier attempt left open (its worker died) and the one the worker is recording now.
        JobFactory jobs = JobFactory.on(jdbc);
        jobs.attempt(job.jobId(), 1).lease(UUID.randomUUID(), "walker-0").revision("fake-r1").insert();
        jobs.attempt(job.jobId(), 2).lease(job.leaseToken(), "walker").revision("fake-r1").insert();
        JobTransitions.AttemptClose close = new JobTransitions.AttemptClose(2, job.leaseToken(),
                "ended_at = :closeEnded, outcome = :closeOutcome, http_status = :closeStatus",
                Map.of("closeEnded", Timestamp.from(NOW.plusSeconds(5)), "closeOutcome", "succeeded", "closeStatus", 200));
        String attempts = "SELECT attempt, outcome, http_status, ended_at FROM attempts WHERE job_id = ? ORDER BY attempt";
        Snapshot before = snapshot(job.jobId());
        List<Map<String, Object>> open = jdbc.queryForList(attempts, job.jobId());

        assertThat(transitions.apply(job.jobId(), Event.SUCCEED, Guard.lease(UUID.randomUUID()), change(Event.SUCCEED), null, close))
                .as("a stale lease ends nothing and closes nothing").isEmpty();
        assertThat(snapshot(job.jobId())).isEqualTo(before);
        assertThat(jdbc.queryForList(attempts, job.jobId())).isEqualTo(open);

        assertThat(transitions.apply(job.jobId(), Event.SUCCEED, Guard.lease(job.leaseToken()), change(Event.SUCCEED), null, close))
                .isPresent();
        List<Map<String, Object>> closed = jdbc.queryForList(attempts, job.jobId());
        assertThat(closed.get(0).get("outcome")).as("the attempt left open ends with its job").isEqualTo("ended_with_job");
        assertThat(closed.get(1)).as("the worker's attempt says what the worker saw").containsEntry("outcome", "succeeded")
                .containsEntry("http_status", 200).containsEntry("ended_at", Timestamp.from(NOW.plusSeconds(5)));
        assertThat(snapshot(job.jobId()).job()).containsEntry("status", "succeeded");
    }

    @Test
    void theDatabaseHoldsTheSameTableAsTheCode() {
        Set<List<String>> inDatabase = new HashSet<>(jdbc.query("SELECT event, from_status, to_status FROM job_status_transitions",
                (rs, i) -> List.of(rs.getString(1), rs.getString(2), rs.getString(3))));
        Set<List<String>> inCode = new HashSet<>();
        for (Event e : Event.values()) {
            e.from().forEach(f -> inCode.add(List.of(e.name().toLowerCase(), f.wire(), e.to().wire())));
        }
        assertThat(inDatabase).isEqualTo(inCode);
    }

    static Stream<Arguments> everyPairOfStatuses() {
        return Arrays.stream(JobStatus.values()).flatMap(from -> Arrays.stream(JobStatus.values())
                .filter(to -> to != from).map(to -> Arguments.of(from, to)));
    }

    /** Whoever writes the row (an operator's psql, a future statement): only the table's pairs pass. */
    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("everyPairOfStatuses")
    void theDatabaseRefusesEveryOtherStatusChange(JobStatus from, JobStatus to) {
        UUID id = jobIn(from).jobId();
        String sql = "UPDATE jobs SET status = '" + to.wire() + "'"
                + (to.terminal() ? ", finalized_at = now(), lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL" : "")
                // Out of a terminal state only a redrive (V18): final no more, one more redrive counted.
                + (from.terminal() && !to.terminal() ? ", finalized_at = NULL, redrives = redrives + 1" : "")
                + " WHERE job_id = '" + id + "'";
        if (JobTransitions.pairs().contains(List.of(from, to))) {
            jdbc.update(sql);
            assertThat(jdbc.queryForObject("SELECT status FROM jobs WHERE job_id = ?", String.class, id)).isEqualTo(to.wire());
        } else {
            assertThatThrownBy(() -> jdbc.update(sql)).hasMessageMatching("(?s).*(may not go from|is final).*");
            assertThat(jdbc.queryForObject("SELECT status FROM jobs WHERE job_id = ?", String.class, id)).isEqualTo(from.wire());
        }
    }

    @Test
    void theReadmeStateTableIsThisTable() throws Exception {
        String readme = java.nio.file.Files.readString(java.nio.file.Path.of("docs/api.md"));
        String table = readme.substring(readme.indexOf("<!-- state-table:start -->") + "<!-- state-table:start -->".length(),
                readme.indexOf("<!-- state-table:end -->")).strip();
        StringBuilder expected = new StringBuilder("| event | from | to | effects |\n| --- | --- | --- | --- |");
        for (Event e : Event.values()) {
            expected.append("\n| `").append(e.name().toLowerCase()).append("` | ")
                    .append(e.from().stream().map(JobStatus::wire).sorted().map(w -> "`" + w + "`")
                            .collect(java.util.stream.Collectors.joining(", ")))
                    .append(" | `").append(e.to().wire()).append("` | ")
                    .append(java.util.EnumSet.copyOf(e.effects()).stream().map(f -> f.name().toLowerCase().replace('_', ' '))
                            .collect(java.util.stream.Collectors.joining(", ")))
                    .append(" |");
        }
        assertThat(table).isEqualTo(expected.toString());
    }
}
