package io.jobgate.pool;

import java.time.Duration;
import java.util.List;

/**
 * A provider pool as its file declares it (docs/providers.md, "Pools"): a job kind, its members in order.
 *
 * @param kind        the kind of the jobs it serves ({@code image}, {@code transcription}, {@code summary}, {@code video})
 * @param members     in their declared order (the order breaks ties and picks among fallbacks of weight 0)
 * @param presets     the presets whose jobs it takes when they name neither a provider nor a pool
 * @param kindDefault it takes its kind's jobs that name neither and whose preset no pool lists
 */
public record Pool(String name, String kind, List<Member> members, java.util.Set<String> presets, boolean kindDefault) {

    public Pool {
        members = List.copyOf(members);
        presets = java.util.Set.copyOf(presets);
    }

    /** A pool that jobs take only by naming it. */
    public Pool(String name, String kind, List<Member> members) {
        this(name, kind, members, java.util.Set.of(), false);
    }

    /**
     * @param weight           its share of the attempts among the members that can take one now; 0: a fallback only
     * @param maxWait          how long its closed gate is waited out before the pool moves on to another member
     * @param failureThreshold definite failures within {@code failureWindow} that cool it down for every job; 0: never
     * @param cooldown         how long it takes no new attempt once cooled; then one attempt probes it
     */
    public record Member(String provider, int weight, Duration maxWait, int failureThreshold, Duration failureWindow,
                         Duration cooldown) {

        /** A member with the default threshold, window and cooldown. */
        public Member(String provider, int weight, Duration maxWait) {
            this(provider, weight, maxWait, PoolCatalog.DEFAULT_FAILURE_THRESHOLD, PoolCatalog.DEFAULT_FAILURE_WINDOW,
                    PoolCatalog.DEFAULT_COOLDOWN);
        }
    }

    /** Its member {@code provider}, if it has that one. */
    public java.util.Optional<Member> member(String provider) {
        return members.stream().filter(m -> m.provider().equals(provider)).findFirst();
    }

    public List<String> providers() {
        return members.stream().map(Member::provider).toList();
    }
}
