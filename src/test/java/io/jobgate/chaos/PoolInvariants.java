package io.jobgate.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The invariants of pool jobs (docs/providers.md, "Pools"), as pure rules over what a run left of one job: its
 * attempts in order, its final row, its ledger lines. {@link ChaosChecks} reads the rows and applies them to every job
 * that named a pool; {@code PoolInvariantsTest} shows each rule firing on a crafted job.
 */
public final class PoolInvariants {

    private PoolInvariants() {
    }

    /** One attempt of a job: its number, the member that ran it ({@code attempts.adapter}), how it ended. */
    public record Attempt(int attempt, String member, String outcome, String errorCategory) {

        /**
         * May this attempt have reached its member and rendered there? A call whose outcome nobody knows
         * ({@code submission_unknown}: a timeout after the body was sent, a lost reply, a lease that ended after
         * sending) or whose failure is {@code ambiguous}.
         */
        public boolean mayHaveRendered() {
            return "submission_unknown".equals(outcome) || "ambiguous".equals(errorCategory);
        }
    }

    /** A pool job as it ended: its final {@code provider} column, status, cost fixed at admission. */
    public record PoolJob(String id, String pool, String provider, String status, long costMicros) {
    }

    /** A ledger line of a job: {@code debit}, {@code refund}, ...; its amount (a debit is negative) and units. */
    public record Entry(String type, long amountMicros, Long units) {
    }

    /**
     * Never two renders: no attempt that may have rendered on one member (see {@link Attempt#mayHaveRendered}) is
     * followed by an attempt on another member. Also a success on one member followed by any other attempt elsewhere.
     *
     * @param attempts the job's attempts in order of their number
     */
    public static List<String> neverTwoRenders(String jobId, List<Attempt> attempts) {
        List<String> wrong = new ArrayList<>();
        for (int i = 0; i < attempts.size(); i++) {
            Attempt a = attempts.get(i);
            boolean rendering = a.mayHaveRendered() || "succeeded".equals(a.outcome());
            if (!rendering) {
                continue;
            }
            for (Attempt later : attempts.subList(i + 1, attempts.size())) {
                if (!later.member().equals(a.member())) {
                    wrong.add("job " + jobId + ": attempt " + a.attempt() + " on " + a.member() + " ended " + a.outcome()
                            + (a.errorCategory() == null ? "" : " " + a.errorCategory()) + ", yet attempt " + later.attempt()
                            + " ran on " + later.member());
                    break;
                }
            }
        }
        return wrong;
    }

    /**
     * A pool job's final {@code provider} column is the member of its last attempt (a job without attempts: nothing
     * to compare).
     */
    public static List<String> providerIsLastAttemptsMember(PoolJob job, List<Attempt> attempts) {
        if (attempts.isEmpty()) {
            return List.of();
        }
        Attempt last = attempts.get(attempts.size() - 1);
        return last.member().equals(job.provider()) ? List.of()
                : List.of("job " + job.id() + " (" + job.status() + ") names provider " + job.provider() + ", its last attempt "
                + last.attempt() + " ran on " + last.member());
    }

    /**
     * Money of a succeeded pool job: exactly one debit, of its cost, and that cost is the dearest member's price for
     * the units it was debited for (the price fixed at admission, never raised by a move): {@code dearestPerUnit} x the
     * debit's units.
     *
     * @param memberPrices each member's price per unit of the job's kind (an image), micro-units
     */
    public static List<String> chargedOnceAtTheDearest(PoolJob job, List<Entry> entries, Map<String, Long> memberPrices) {
        if (!"succeeded".equals(job.status())) {
            return List.of();
        }
        List<Entry> debits = entries.stream().filter(e -> e.type().equals("debit")).toList();
        if (debits.size() != 1) {
            return List.of("succeeded pool job " + job.id() + " has " + debits.size() + " debits "
                    + debits.stream().map(Entry::amountMicros).toList());
        }
        Entry debit = debits.get(0);
        List<String> wrong = new ArrayList<>();
        if (debit.amountMicros() != -job.costMicros()) {
            wrong.add("succeeded pool job " + job.id() + ": debit " + debit.amountMicros() + " for its cost " + job.costMicros());
        }
        long dearest = memberPrices.values().stream().mapToLong(Long::longValue).max().orElseThrow();
        long units = debit.units() == null ? 1 : debit.units();
        if (job.costMicros() != dearest * units) {
            wrong.add("succeeded pool job " + job.id() + " on " + job.provider() + " cost " + job.costMicros() + " for " + units
                    + " unit(s), the dearest member's price is " + dearest + " each " + memberPrices);
        }
        return wrong;
    }

    /** Did the job's attempts run on more than one member? */
    public static boolean moved(List<Attempt> attempts) {
        return attempts.stream().map(Attempt::member).distinct().count() > 1;
    }
}
