package io.jobgate.fate;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Which member of a pool an attempt goes to (docs/providers.md, "Pools"), decided in one place. A member that cannot
 * serve the job (kind, aspect class, input size, route not running, a member its tenant may not use) is never chosen.
 * A job whose tenant allows no failover stays on its member while that member can serve it, its gate waited out
 * however long it is closed. Of the rest, a member is
 * eligible when its gate is open or reopens within its {@code max-wait}; the member that just failed definitely is
 * left out when another is eligible; the weights spread the attempts among the eligible ones by the job's hash
 * (members of weight 0 only when no weighted one is eligible: a fallback). When none is eligible the attempt waits
 * for the member whose gate reopens first: a pool job waits, it never fails for a closed gate. A member cooling down
 * after its failures, or whose probe runs, takes no new attempt (it waits like a closed gate when no other can take
 * it); once its cooldown ends it is placed on again, and the first of its starts claims its probe (the caller's). A
 * drained member takes none. Pure: the caller
 * reads the facts and writes the choice; whether the attempt may move at all (never after it may have reached its
 * provider, never for a pinned job) is the caller's, before it asks.
 */
public final class PoolPlacements {

    private PoolPlacements() {
    }

    public static PoolPlacement place(PoolFacts facts) {
        Instant now = facts.now();
        List<PoolFacts.Member> serving = facts.members().stream().filter(m -> m.whyNot() == null).toList();
        if (serving.isEmpty()) {
            return new PoolPlacement.Unserved(facts.members().stream().map(m -> m.name() + ": " + m.whyNot())
                    .collect(Collectors.joining("; ")));
        }
        if (facts.stay() != null) {
            for (PoolFacts.Member m : serving) {
                if (m.name().equals(facts.stay())) {
                    return new PoolPlacement.To(m.name(), closed(m, now) ? m.closedUntil() : null, "failover is off for its tenant: it stays on "
                            + m.name() + (closed(m, now) ? ", whose gate is closed until " + m.closedUntil() : ""));
                }
            }
        }
        List<PoolFacts.Member> eligible = new ArrayList<>(serving.stream().filter(m -> m.state().takesAttempts())
                .filter(m -> !closed(m, now) || !m.closedUntil().isAfter(now.plus(m.maxWait()))).toList());
        if (eligible.isEmpty()) {
            // Each waits for the later of its gate's reopening and its cooldown's end; a drained member takes no job.
            List<PoolFacts.Member> waiting = serving.stream().filter(m -> m.state() != MemberState.DRAINED).toList();
            if (waiting.isEmpty()) {
                return new PoolPlacement.Unserved(facts.members().stream().map(m -> m.name() + ": "
                        + (m.whyNot() != null ? m.whyNot() : "drained by an operator")).collect(Collectors.joining("; ")), true);
            }
            PoolFacts.Member first = waiting.get(0);
            for (PoolFacts.Member m : waiting) {
                if (readyAt(m, now).isBefore(readyAt(first, now))) {
                    first = m;
                }
            }
            boolean cooling = !first.state().takesAttempts() && !readyAt(first, now).equals(first.closedUntil());
            return new PoolPlacement.To(first.name(), readyAt(first, now), cooling
                    ? "no member can take it now; " + first.name() + (first.state() == MemberState.PROBING ? "'s probe ends first"
                    : " cools down until " + first.stateUntil() + ", the first to take attempts again") + notServing(facts)
                    : "every member's gate is closed beyond its max-wait; " + first.name() + "'s reopens first" + notServing(facts));
        }
        String left = "";
        if (facts.exclude() != null && eligible.stream().anyMatch(m -> !m.name().equals(facts.exclude()))
                && eligible.removeIf(m -> m.name().equals(facts.exclude()))) {
            left = ", " + facts.exclude() + " left out after its failure";
        }
        List<PoolFacts.Member> weighted = eligible.stream().filter(m -> m.weight() > 0).toList();
        PoolFacts.Member chosen;
        String how;
        if (weighted.isEmpty()) {
            chosen = eligible.get(0);
            how = "the first eligible member (no weighted member is eligible)";
        } else {
            long total = weighted.stream().mapToLong(PoolFacts.Member::weight).sum();
            long bucket = Math.floorMod(facts.hash(), total);
            chosen = weighted.get(weighted.size() - 1);
            for (PoolFacts.Member m : weighted) {
                if (bucket < m.weight()) {
                    chosen = m;
                    break;
                }
                bucket -= m.weight();
            }
            how = weighted.size() == 1 ? "the only weighted eligible member" : "by weight among " + weighted.stream()
                    .map(PoolFacts.Member::name).collect(Collectors.joining(", "));
        }
        return new PoolPlacement.To(chosen.name(), closed(chosen, now) ? chosen.closedUntil() : null, how + left);
    }

    /** When a member can take an attempt: its gate's reopening, its cooldown's end or its probe's, whichever is later. */
    private static Instant readyAt(PoolFacts.Member m, Instant now) {
        Instant at = closed(m, now) ? m.closedUntil() : now;
        return !m.state().takesAttempts() && m.stateUntil() != null && m.stateUntil().isAfter(at) ? m.stateUntil() : at;
    }

    /**
     * May a pool job's next attempt leave the member whose attempt failed with {@code category}? Only after a failure
     * that says the request was not rendered there: a {@code 429} or a {@code 5xx} / refused connection before the
     * provider accepted ({@code transient}). Never after one that may have reached a render: {@code ambiguous} (a
     * timeout after the body was sent, a lost reply) parks and is settled on its member; an unparseable reply came from
     * a provider that may have accepted the request, so its retry stays there too (the same idempotency key); and a
     * category that ends the job moves nothing.
     */
    public static boolean mayLeaveAfter(io.jobgate.job.ErrorCategory category) {
        return category == io.jobgate.job.ErrorCategory.RATE_LIMITED || category == io.jobgate.job.ErrorCategory.TRANSIENT;
    }

    /**
     * May a pool job's next attempt be placed again (maybe on another member) after its attempt failed with
     * {@code category} and the rulebook decided {@code fate}? Only a job of a pool ({@code pooled}; a job that named a
     * provider is pinned to it), only after a failure that says the request was not rendered ({@link #mayLeaveAfter}),
     * only when the job goes on: a retry, or a 429 whose wait on the failed member would run past the job's lifetime
     * (another member need not wait it out). Never a canary candidate's attempt: its retry goes to its provider's
     * stable revision.
     */
    public static boolean mayMove(Fate fate, io.jobgate.job.ErrorCategory category, boolean pooled, io.jobgate.job.RevisionRole role) {
        boolean goesOn = fate instanceof Fate.Retry || (fate instanceof Fate.Fail fail && fail.rateLimit() != null);
        return pooled && goesOn && mayLeaveAfter(category) && role != io.jobgate.job.RevisionRole.CANDIDATE;
    }

    /**
     * Does an attempt that failed with {@code category} count against its member's health (its failure threshold)? A
     * {@code 5xx} or refused connection ({@code transient}) and a timeout or lost reply ({@code ambiguous}): the member
     * failed. Not a {@code 429} (its gate waits it out), nor what the request or the output caused.
     */
    public static boolean countsAgainstMember(io.jobgate.job.ErrorCategory category) {
        return category == io.jobgate.job.ErrorCategory.TRANSIENT || category == io.jobgate.job.ErrorCategory.AMBIGUOUS;
    }

    /** The members that cannot serve the job, each with its reason (a member the tenant may not use among them). */
    private static String notServing(PoolFacts facts) {
        String reasons = facts.members().stream().filter(m -> m.whyNot() != null).map(m -> m.name() + ": " + m.whyNot())
                .collect(Collectors.joining("; "));
        return reasons.isEmpty() ? "" : " (" + reasons + ")";
    }

    private static boolean closed(PoolFacts.Member member, Instant now) {
        return member.closedUntil() != null && member.closedUntil().isAfter(now);
    }
}
