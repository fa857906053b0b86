package io.jobgate.pool;

import java.time.Duration;
import java.util.List;

/**
 * A provider pool as its file declares it (docs/providers.md, "Pools"): a job kind, its members in order.
 *
 * @param kind    the kind of the jobs it serves ({@code image}, {@code transcription}, {@code summary}, {@code video})
 * @param members in their declared order (the order breaks ties and picks among fallbacks of weight 0)
 */
public record Pool(String name, String kind, List<Member> members) {

    public Pool {
        members = List.copyOf(members);
    }

    /**
     * @param weight  its share of the attempts among the members that can take one now; 0: a fallback only
     * @param maxWait how long its closed gate is waited out before the pool moves on to another member
     */
    public record Member(String provider, int weight, Duration maxWait) {
    }

    public List<String> providers() {
        return members.stream().map(Member::provider).toList();
    }
}
