package io.jobgate.fate;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

/**
 * What {@link PoolPlacements#place} decides from: a pool's members in their declared order, the member to leave out
 * (the one that just failed definitely, or null), a stable hash of the job and its attempt, now, and the member the
 * job must stay on (its tenant allows no failover; null: it may move). Read by the caller (the pool's settings, the
 * providers' fit, the tenant's rules, the gates); the rule itself reads nothing.
 */
public record PoolFacts(List<Member> members, String exclude, long hash, Instant now, String stay) {

    public PoolFacts {
        members = List.copyOf(members);
    }

    /** A job that may move among the members. */
    public PoolFacts(List<Member> members, String exclude, long hash, Instant now) {
        this(members, exclude, hash, now, null);
    }

    /**
     * One member as it stands now.
     *
     * @param weight      its share among the members that can take the attempt now (0: only when no weighted one can)
     * @param maxWait     how long its closed gate is waited out before the pool moves on
     * @param whyNot      why it cannot serve this job at all (kind, aspect class, input size, route not running, the
     *                    tenant's rules), or null when it can
     * @param closedUntil until when its gate is closed, or null when it is open
     * @param state       its health ({@link MemberState}): cooling, probed or drained, it takes no new attempt
     * @param stateUntil  until when it cools ({@code COOLING}), or its probe's time runs out ({@code PROBING}); else null
     */
    public record Member(String name, int weight, Duration maxWait, String whyNot, Instant closedUntil, MemberState state,
                         Instant stateUntil) {

        /** A healthy member. */
        public Member(String name, int weight, Duration maxWait, String whyNot, Instant closedUntil) {
            this(name, weight, maxWait, whyNot, closedUntil, MemberState.HEALTHY, null);
        }

        public Member withClosedUntil(Instant until) {
            return new Member(name, weight, maxWait, whyNot, until, state, stateUntil);
        }

        public Member withState(MemberState newState, Instant until) {
            return new Member(name, weight, maxWait, whyNot, closedUntil, newState, until);
        }
    }

    /**
     * The stable hash of a job's attempt: the same job and attempt always land on the same member of the same
     * members, and a job's next attempt is spread anew (an FNV-1a over the id's bits and the attempt).
     */
    public static long hash(UUID jobId, int attempt) {
        long h = 0xcbf29ce484222325L;
        for (long part : new long[] {jobId.getMostSignificantBits(), jobId.getLeastSignificantBits(), attempt}) {
            for (int i = 0; i < 8; i++) {
                h ^= (part >>> (8 * i)) & 0xff;
                h *= 0x100000001b3L;
            }
        }
        return h;
    }
}
