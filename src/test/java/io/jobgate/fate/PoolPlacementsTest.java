package io.jobgate.fate;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which member of a pool an attempt goes to, as a table: a row per rule (fit, gate within or beyond max-wait, the
 * member left out after its failure, weights, fallbacks of weight 0, every gate closed), the whole placement compared.
 */
class PoolPlacementsTest {

    static final Instant NOW = Instant.parse("2026-01-01T00:00:00Z");
    static final Duration MINUTE = Duration.ofSeconds(60);

    record Row(String name, PoolFacts facts, PoolPlacement expected) {
        @Override
        public String toString() {
            return name;
        }
    }

    static PoolFacts.Member open(String name, int weight) {
        return new PoolFacts.Member(name, weight, MINUTE, null, null);
    }

    static PoolFacts.Member closed(String name, int weight, long seconds) {
        return new PoolFacts.Member(name, weight, MINUTE, null, NOW.plusSeconds(seconds));
    }

    static PoolFacts.Member unfit(String name, String why) {
        return new PoolFacts.Member(name, 1, MINUTE, why, null);
    }

    static PoolFacts facts(String exclude, long hash, PoolFacts.Member... members) {
        return new PoolFacts(List.of(members), exclude, hash, NOW);
    }

    static Stream<Row> rows() {
        return List.of(
                new Row("a pool of one open member: it", facts(null, 7, open("a", 1)),
                        new PoolPlacement.To("a", null, "the only weighted eligible member")),
                new Row("the hash's bucket 0 of weights 1+3: the first", facts(null, 0, open("a", 1), open("b", 3)),
                        new PoolPlacement.To("a", null, "by weight among a, b")),
                new Row("the hash's bucket 1 of weights 1+3: the second", facts(null, 1, open("a", 1), open("b", 3)),
                        new PoolPlacement.To("b", null, "by weight among a, b")),
                new Row("a negative hash spreads as well (floor modulo)", facts(null, -1, open("a", 1), open("b", 3)),
                        new PoolPlacement.To("b", null, "by weight among a, b")),
                new Row("a member that does not fit is never chosen", facts(null, 0, unfit("a", "its size table declares no portrait"),
                        open("b", 1)), new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("no member fits: unserved, each one's reason", facts(null, 0, unfit("a", "no portrait"), unfit("b", "not running")),
                        new PoolPlacement.Unserved("a: no portrait; b: not running")),
                new Row("a gate that reopens within max-wait: eligible, the attempt waits for it",
                        facts(null, 0, closed("a", 1, 30), open("b", 0)), new PoolPlacement.To("a", NOW.plusSeconds(30),
                                "the only weighted eligible member")),
                new Row("a gate closed beyond max-wait: the pool moves on", facts(null, 0, closed("a", 1, 3600), open("b", 1)),
                        new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("a gate that reopened is open", facts(null, 0, closed("a", 1, 0), open("b", 0)),
                        new PoolPlacement.To("a", null, "the only weighted eligible member")),
                new Row("the member that just failed is left out when another is eligible", facts("a", 0, open("a", 5), open("b", 1)),
                        new PoolPlacement.To("b", null, "the only weighted eligible member, a left out after its failure")),
                new Row("the member that just failed is kept when it is the only eligible one",
                        facts("a", 0, open("a", 1), closed("b", 1, 3600)), new PoolPlacement.To("a", null, "the only weighted eligible member")),
                new Row("weight 0 is a fallback: only when no weighted member is eligible", facts(null, 0, closed("a", 1, 3600),
                        open("b", 0), open("c", 0)), new PoolPlacement.To("b", null, "the first eligible member (no weighted member is eligible)")),
                new Row("a fallback is not used while a weighted member is eligible", facts(null, 3, open("a", 0), open("b", 2)),
                        new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("every gate closed beyond max-wait: the one that reopens first, the job waits",
                        facts(null, 0, closed("a", 1, 3600), closed("b", 1, 600), closed("c", 1, 900)),
                        new PoolPlacement.To("b", NOW.plusSeconds(600), "every member's gate is closed beyond its max-wait; b's reopens first")),
                new Row("every gate closed: an unfit member is not waited for", facts(null, 0, closed("a", 1, 3600),
                        new PoolFacts.Member("b", 1, MINUTE, "not running", NOW.plusSeconds(60))),
                        new PoolPlacement.To("a", NOW.plusSeconds(3600), "every member's gate is closed beyond its max-wait; a's reopens first"
                                + " (b: not running)")),
                new Row("a member the tenant may not use is never chosen, however open", facts(null, 0,
                        unfit("a", "tenant eu may not use it (providers.deny)"), open("b", 0)),
                        new PoolPlacement.To("b", null, "the first eligible member (no weighted member is eligible)")),
                new Row("the only member the tenant may use is closed: the job waits for it and the reason names the denied one",
                        facts("a", 0, closed("a", 1, 600), new PoolFacts.Member("b", 1, MINUTE, "tenant eu may not use it (providers.deny)", null)),
                        new PoolPlacement.To("a", NOW.plusSeconds(600), "every member's gate is closed beyond its max-wait; a's reopens first"
                                + " (b: tenant eu may not use it (providers.deny))")),
                new Row("every member ruled out for the tenant: unserved", facts(null, 0, unfit("a", "tenant eu may not use it (providers.deny)"),
                        unfit("b", "tenant eu may not use it (not in providers.allow)")), new PoolPlacement.Unserved(
                        "a: tenant eu may not use it (providers.deny); b: tenant eu may not use it (not in providers.allow)")),
                new Row("no failover: the job stays on its member, though another is open and weighted", new PoolFacts(List.of(open("a", 1),
                        open("b", 5)), "a", 1, NOW, "a"), new PoolPlacement.To("a", null, "failover is off for its tenant: it stays on a")),
                new Row("no failover: the job waits out its member's gate however long", new PoolFacts(List.of(closed("a", 1, 3600),
                        open("b", 1)), null, 0, NOW, "a"), new PoolPlacement.To("a", NOW.plusSeconds(3600),
                        "failover is off for its tenant: it stays on a, whose gate is closed until " + NOW.plusSeconds(3600))),
                new Row("no failover, but its member cannot serve it now: placed as any job", new PoolFacts(List.of(unfit("a", "not running"),
                        open("b", 1)), null, 0, NOW, "a"), new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("a longer max-wait keeps a member eligible", facts(null, 0,
                        new PoolFacts.Member("a", 1, Duration.ofHours(2), null, NOW.plusSeconds(3600)), open("b", 0)),
                        new PoolPlacement.To("a", NOW.plusSeconds(3600), "the only weighted eligible member")),
                new Row("a cooling member takes no attempt; the pool moves on", facts(null, 0, cooling("a", 1, 30), open("b", 1)),
                        new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("a member whose cooldown ended is placed on again (its first start claims its probe)", facts(null, 0,
                        state(open("a", 1), MemberState.PROBE_OPEN, null), open("b", 1)), new PoolPlacement.To("a", null,
                        "by weight among a, b")),
                new Row("a member whose probe runs takes no other attempt", facts(null, 0,
                        state(open("a", 1), MemberState.PROBING, NOW.plusSeconds(20)), open("b", 1)),
                        new PoolPlacement.To("b", null, "the only weighted eligible member")),
                new Row("a drained member takes no attempt, whatever its weight", facts(null, 0,
                        state(open("a", 9), MemberState.DRAINED, null), open("b", 0)),
                        new PoolPlacement.To("b", null, "the first eligible member (no weighted member is eligible)")),
                new Row("every member cooling: the job waits for the first cooldown to end", facts(null, 0, cooling("a", 1, 30),
                        cooling("b", 1, 10)), new PoolPlacement.To("b", NOW.plusSeconds(10), "no member can take it now; b cools down until "
                        + NOW.plusSeconds(10) + ", the first to take attempts again")),
                new Row("cooling and closed for longer: waits for the later of the two", facts(null, 0,
                        state(closed("a", 1, 600), MemberState.COOLING, NOW.plusSeconds(30)), state(open("b", 1), MemberState.DRAINED, null)),
                        new PoolPlacement.To("a", NOW.plusSeconds(600), "every member's gate is closed beyond its max-wait; a's reopens first")),
                new Row("every member drained: unserved, each one's reason", facts(null, 0, state(open("a", 1), MemberState.DRAINED, null),
                        unfit("b", "not running")), new PoolPlacement.Unserved("a: drained by an operator; b: not running", true)),
                new Row("no failover: the job stays on its member however it cools", new PoolFacts(List.of(cooling("a", 1, 30),
                        open("b", 1)), null, 0, NOW, "a"), new PoolPlacement.To("a", null, "failover is off for its tenant: it stays on a"))).stream();
    }

    static PoolFacts.Member cooling(String name, int weight, long seconds) {
        return state(open(name, weight), MemberState.COOLING, NOW.plusSeconds(seconds));
    }

    static PoolFacts.Member state(PoolFacts.Member member, MemberState state, Instant until) {
        return member.withState(state, until);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rows")
    void places(Row row) {
        assertThat(PoolPlacements.place(row.facts())).isEqualTo(row.expected());
    }

    @Test
    void weightsSpreadJobsInTheirProportionAndTheHashIsStable() {
        UUID job = UUID.fromString("0190f3a4-0000-7000-8000-000000000001");
        // Pinned (FNV-1a over the id's two halves and the attempt, little-endian bytes): every instance places a job
        // alike, whatever JVM it runs on; a hash seeded per process or by identity fails here.
        assertThat(PoolFacts.hash(job, 1)).isEqualTo(8378163936811386467L);
        assertThat(PoolFacts.hash(job, 2)).isEqualTo(1681217715908618240L);
        long onB = IntStream.range(0, 4000).mapToObj(i -> new UUID(0x0190f3a400007000L + i, 0x8000000000000000L + i * 7919L))
                .map(id -> PoolPlacements.place(facts(null, PoolFacts.hash(id, 1), open("a", 1), open("b", 3))))
                .filter(p -> ((PoolPlacement.To) p).member().equals("b")).count();
        assertThat(onB).isBetween(2800L, 3200L);
    }

    @Test
    void aRetryMovedToAnotherMemberIsJudgedAgainstItsOwnDueTimeNotTheFailedMembersWait() {
        Standing standing = new Standing(1, 4, NOW.plusSeconds(1800), 0);
        Fate.RateLimit hour = new Fate.RateLimit(NOW.plusSeconds(3600), true, false);
        // A 429 whose Retry-After passes the lifetime ends the job on its member; moved, it retries on the other one.
        Fate ended = Outcomes.decide(new Evidence.Failure(io.jobgate.job.ErrorCategory.RATE_LIMITED, "HTTP 429", "3600"),
                io.jobgate.job.RevisionRole.STABLE, standing, new Waits(Duration.ofSeconds(1), Duration.ofSeconds(2)), NOW);
        assertThat(ended).isInstanceOf(Fate.Fail.class);
        assertThat(Outcomes.movedTo(ended, NOW.plusSeconds(1), standing))
                .isEqualTo(new Fate.Retry(NOW.plusSeconds(1), 0, io.jobgate.job.ErrorCategory.RATE_LIMITED, hour));
        // A retry stays one, due when moved; the attempt cap still ends the job; a terminal failure is never moved.
        Fate retry = new Fate.Retry(NOW.plusSeconds(9), 0, io.jobgate.job.ErrorCategory.TRANSIENT, null);
        assertThat(Outcomes.movedTo(retry, NOW.plusSeconds(1), standing))
                .isEqualTo(new Fate.Retry(NOW.plusSeconds(1), 0, io.jobgate.job.ErrorCategory.TRANSIENT, null));
        assertThat(Outcomes.movedTo(retry, NOW.plusSeconds(1), new Standing(4, 4, NOW.plusSeconds(1800), 0)))
                .isInstanceOf(Fate.Fail.class).extracting(f -> ((Fate.Fail) f).category()).isEqualTo(io.jobgate.job.ErrorCategory.EXHAUSTED);
        Fate terminal = new Fate.Fail(io.jobgate.job.ErrorCategory.TERMINAL_REQUEST, "HTTP 400", null, null);
        assertThat(Outcomes.movedTo(terminal, NOW.plusSeconds(1), standing)).isSameAs(terminal);
    }

    /** Whether a pool job's next attempt is placed again: the whole condition, row by row. */
    @Test
    void aJobIsPlacedAgainOnlyWhenItIsAPoolJobThatGoesOnAfterADefiniteFailureOfItsStableRevision() {
        io.jobgate.job.ErrorCategory transientError = io.jobgate.job.ErrorCategory.TRANSIENT;
        io.jobgate.job.RevisionRole stable = io.jobgate.job.RevisionRole.STABLE;
        Fate retry = new Fate.Retry(NOW.plusSeconds(1), 0, transientError, null);
        Fate.RateLimit hour = new Fate.RateLimit(NOW.plusSeconds(3600), true, false);
        Fate endedOnA429PastItsLifetime = new Fate.Fail(io.jobgate.job.ErrorCategory.RATE_LIMITED, "HTTP 429", null, hour);
        Fate ended = new Fate.Fail(io.jobgate.job.ErrorCategory.EXHAUSTED, "no attempts left", null, null);
        assertThat(PoolPlacements.mayMove(retry, transientError, true, stable)).as("a pool job's retry after a 5xx").isTrue();
        assertThat(PoolPlacements.mayMove(endedOnA429PastItsLifetime, io.jobgate.job.ErrorCategory.RATE_LIMITED, true, stable))
                .as("a 429 whose wait runs past the lifetime: another member need not wait").isTrue();
        assertThat(PoolPlacements.mayMove(retry, transientError, false, stable)).as("a job pinned to its provider").isFalse();
        assertThat(PoolPlacements.mayMove(ended, transientError, true, stable)).as("a job that ends").isFalse();
        assertThat(PoolPlacements.mayMove(retry, io.jobgate.job.ErrorCategory.UNPARSEABLE_RESPONSE, true, stable))
                .as("a reply from a provider that may have accepted it").isFalse();
        assertThat(PoolPlacements.mayMove(retry, transientError, true, io.jobgate.job.RevisionRole.CANDIDATE))
                .as("a canary candidate's attempt: back to its stable revision").isFalse();
    }

    /** A job leaves its member only after a failure that says the request was not rendered there. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(io.jobgate.job.ErrorCategory.class)
    void aJobLeavesItsMemberOnlyAfterA429OrA5xxBeforeTheProviderAccepted(io.jobgate.job.ErrorCategory category) {
        boolean leaves = category == io.jobgate.job.ErrorCategory.RATE_LIMITED || category == io.jobgate.job.ErrorCategory.TRANSIENT;
        assertThat(PoolPlacements.mayLeaveAfter(category)).as(category.wire()).isEqualTo(leaves);
    }
}
