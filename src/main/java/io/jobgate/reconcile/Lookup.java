package io.jobgate.reconcile;

import java.time.Instant;

import io.jobgate.adapter.AdapterResult;
import io.jobgate.job.WaitingJob;
import io.jobgate.provider.Provider;

/**
 * What asking the provider about one waiting job came to (route step {@code ask-provider}): the
 * adapter's answer, or why the provider was not asked. Asking writes nothing; {@link
 * Reconciler#apply(Lookup, String)} (step {@code apply-evidence}) makes every write of either.
 *
 * @param provider   the job's provider, null when it has no settings here
 * @param answer     the adapter's answer, only when {@link Reply#ANSWERED}
 * @param gateOpenAt when the provider's gate reopens, only when {@link Reply#GATE_CLOSED}
 */
public record Lookup(WaitingJob job, Reply reply, Provider provider, AdapterResult answer, Instant gateOpenAt) {

    public enum Reply {
        /** The job's provider has no settings here (any more): asked again later. */
        NO_SETTINGS,
        /** The adapter has no lookup: a webhook, a resubmit the provider deduplicates, or the lifetime ends the wait. */
        NO_LOOKUP,
        /** The provider's gate (or a canary candidate's) is closed: not asked before it reopens. */
        GATE_CLOSED,
        /** The adapter's lookup answered (a 429 included). */
        ANSWERED
    }

    static Lookup noSettings(WaitingJob job) {
        return new Lookup(job, Reply.NO_SETTINGS, null, null, null);
    }

    static Lookup noLookup(WaitingJob job, Provider provider) {
        return new Lookup(job, Reply.NO_LOOKUP, provider, null, null);
    }

    static Lookup gateClosed(WaitingJob job, Provider provider, Instant openAt) {
        return new Lookup(job, Reply.GATE_CLOSED, provider, null, openAt);
    }

    static Lookup answered(WaitingJob job, Provider provider, AdapterResult answer) {
        return new Lookup(job, Reply.ANSWERED, provider, answer, null);
    }
}
