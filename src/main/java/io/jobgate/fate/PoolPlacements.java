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
 * for the member whose gate reopens first: a pool job waits, it never fails for a closed gate. Pure: the caller
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
        List<PoolFacts.Member> eligible = new ArrayList<>(serving.stream()
                .filter(m -> !closed(m, now) || !m.closedUntil().isAfter(now.plus(m.maxWait()))).toList());
        if (eligible.isEmpty()) {
            PoolFacts.Member first = serving.get(0);
            for (PoolFacts.Member m : serving) {
                if (m.closedUntil().isBefore(first.closedUntil())) {
                    first = m;
                }
            }
            return new PoolPlacement.To(first.name(), first.closedUntil(), "every member's gate is closed beyond its max-wait; "
                    + first.name() + "'s reopens first" + notServing(facts));
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
