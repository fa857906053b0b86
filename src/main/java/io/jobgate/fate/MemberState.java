package io.jobgate.fate;

/**
 * A pool member's health as placement sees it (docs/providers.md, "Cooldown, probe and drain"), apart from its gate.
 * Read by the caller from the member's row; {@link PoolPlacements#place} decides with it.
 */
public enum MemberState {
    /** Takes attempts by its weight. */
    HEALTHY,
    /** Failed its threshold of attempts in its window: takes no new attempt until its cooldown ends. */
    COOLING,
    /** Its cooldown ended and no probe runs: placed on again; the first of its attempts to start is its probe. */
    PROBE_OPEN,
    /** Its probe runs (another job's): no other attempt until the probe decides, or its time runs out. */
    PROBING,
    /** An operator drained it: no new attempts; the jobs it has finish there. */
    DRAINED;

    /** Can an attempt be placed on it now (its gate aside)? */
    public boolean takesAttempts() {
        return this == HEALTHY || this == PROBE_OPEN;
    }

    public String wire() {
        return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }
}
