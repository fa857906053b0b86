package io.jobgate.chaos;

import java.util.List;
import java.util.Map;

import io.jobgate.chaos.PoolInvariants.Attempt;
import io.jobgate.chaos.PoolInvariants.Entry;
import io.jobgate.chaos.PoolInvariants.PoolJob;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The chaos soak's pool invariants ({@link PoolInvariants}) on crafted jobs: each holds for what the design allows and
 * fires for what it forbids, so that none of them can pass whatever a run did.
 */
class PoolInvariantsTest {

    static final Map<String, Long> PRICES = Map.of("simulator", 40_000L, "openai", 63_000L);

    @Test
    void aDefiniteFailureMayMoveTheJobAnAttemptThatMayHaveRenderedMayNot() {
        // 503 on the simulator (transient), then OpenAI: a move the design makes.
        assertThat(PoolInvariants.neverTwoRenders("j", List.of(new Attempt(1, "simulator", "retry_wait", "transient"),
                new Attempt(2, "openai", "succeeded", null)))).isEmpty();
        // A lost reply stays and is settled on its member.
        assertThat(PoolInvariants.neverTwoRenders("j", List.of(new Attempt(1, "simulator", "submission_unknown", "ambiguous"),
                new Attempt(2, "simulator", "succeeded", null)))).isEmpty();
        // A lost reply on the simulator, then a call to OpenAI: two renders possible.
        assertThat(PoolInvariants.neverTwoRenders("j", List.of(new Attempt(1, "simulator", "submission_unknown", "ambiguous"),
                new Attempt(2, "openai", "succeeded", null)))).singleElement().asString()
                .contains("attempt 1 on simulator ended submission_unknown", "attempt 2 ran on openai");
        // A lease that ended after sending (closed ambiguous, outcome lease_expired), later moved: fires too.
        assertThat(PoolInvariants.neverTwoRenders("j", List.of(new Attempt(1, "openai", "lease_expired", "ambiguous"),
                new Attempt(2, "openai", "retry_wait", "transient"), new Attempt(3, "simulator", "succeeded", null)))).hasSize(1);
        // A success followed by an attempt elsewhere.
        assertThat(PoolInvariants.neverTwoRenders("j", List.of(new Attempt(1, "openai", "succeeded", null),
                new Attempt(2, "simulator", "retry_wait", "transient")))).hasSize(1);
    }

    @Test
    void theJobsProviderIsTheMemberOfItsLastAttempt() {
        List<Attempt> moved = List.of(new Attempt(1, "simulator", "retry_wait", "rate_limited"), new Attempt(2, "openai", "succeeded", null));
        assertThat(PoolInvariants.providerIsLastAttemptsMember(new PoolJob("j", "images", "openai", "succeeded", 63_000), moved)).isEmpty();
        assertThat(PoolInvariants.providerIsLastAttemptsMember(new PoolJob("j", "images", "simulator", "succeeded", 63_000), moved))
                .singleElement().asString().contains("names provider simulator, its last attempt 2 ran on openai");
        assertThat(PoolInvariants.providerIsLastAttemptsMember(new PoolJob("j", "images", "openai", "failed", 63_000), List.of())).isEmpty();
        assertThat(PoolInvariants.moved(moved)).isTrue();
        assertThat(PoolInvariants.moved(moved.subList(1, 2))).isFalse();
    }

    @Test
    void aSucceededPoolJobIsDebitedOnceAtTheDearestMembersPrice() {
        PoolJob onTheCheaper = new PoolJob("j", "images", "simulator", "succeeded", 63_000);
        assertThat(PoolInvariants.chargedOnceAtTheDearest(onTheCheaper, List.of(new Entry("debit", -63_000, 1L)), PRICES)).isEmpty();
        // Charged the serving member's price, not the dearest's.
        assertThat(PoolInvariants.chargedOnceAtTheDearest(new PoolJob("j", "images", "simulator", "succeeded", 40_000),
                List.of(new Entry("debit", -40_000, 1L)), PRICES)).singleElement().asString().contains("the dearest member's price is 63000");
        // Debited twice (a move charged again).
        assertThat(PoolInvariants.chargedOnceAtTheDearest(onTheCheaper, List.of(new Entry("debit", -63_000, 1L),
                new Entry("debit", -63_000, 1L)), PRICES)).singleElement().asString().contains("2 debits");
        // A debit that is not the job's cost (raised after admission).
        assertThat(PoolInvariants.chargedOnceAtTheDearest(onTheCheaper, List.of(new Entry("debit", -80_000, 1L)), PRICES))
                .singleElement().asString().contains("debit -80000 for its cost 63000");
        // Two images: twice the dearest.
        assertThat(PoolInvariants.chargedOnceAtTheDearest(new PoolJob("j", "images", "openai", "succeeded", 126_000),
                List.of(new Entry("debit", -126_000, 2L)), PRICES)).isEmpty();
        // A failed job is the refund check's (ChaosChecks.ledgerPerJob), not this one's.
        assertThat(PoolInvariants.chargedOnceAtTheDearest(new PoolJob("j", "images", "openai", "failed", 63_000), List.of(), PRICES)).isEmpty();
    }
}
