package io.jobgate.worker;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;

import io.jobgate.canary.Canaries;
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.ErrorCategory;
import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;
import io.jobgate.job.ProviderSlots;
import io.jobgate.job.RevisionRole;
import io.jobgate.provider.Provider;

/**
 * Whether a dispatch starts an attempt, and on which revision: the lease, what re-validation found, the job's caps
 * and the provider's gate, decided with the rulebook ({@link Outcomes}) and the canary's placement
 * ({@link Canaries#choose}), written through the job's one door ({@link JobLeases}) in one transaction.
 */
public final class AttemptStarts {

    private final JobLeases leases;
    /** Attempts may go to a provider's canary candidate (docs/canary.md); with none running every attempt is stable. */
    private final Canaries canaries;
    private final Clock clock;
    /** A pool job whose member's gate is closed beyond its max-wait is placed again instead of waiting. */
    private final PoolMoves moves;

    AttemptStarts(JobLeases leases, Canaries canaries, Clock clock, PoolMoves moves) {
        this.moves = moves;
        this.leases = leases;
        this.canaries = canaries;
        this.clock = clock;
    }

    /** What re-validation found before the call: fail now, or wait and try again (no attempt spent). */
    public record Verdict(ErrorCategory category, String message, boolean retry) {
    }

    /** How starting an attempt ended. */
    public sealed interface GatePass permits Submitting, Snoozed, Ended, NotLeased {
    }

    /**
     * The attempt started under {@code lease}: the job is {@code submitting}, its attempt row is open;
     * {@code route}: the revision it runs on (a canary's candidate or the stable one).
     */
    public record Submitting(Lease lease, int attempt, Canaries.Choice route) implements GatePass {
    }

    /** The gate was closed or full, or re-validation asked to wait: back to {@code retry_wait} until {@code until}. */
    public record Snoozed(Instant until, String reason) implements GatePass {
    }

    /** The job ended before its call (caps, invalid request). */
    public record Ended(String reason) implements GatePass {
    }

    /** Another worker or a newer event got there first: nothing changed. */
    public record NotLeased(String reason) implements GatePass {
    }

    /**
     * In one transaction: the lease (fresh token, owner, expiry), then what re-validation decided, the
     * job's caps, and the provider's gate — closed until a Retry-After, or full at the provider's
     * concurrency limit, its slots (V19) all held across instances. A closed or full
     * gate snoozes the job without spending an attempt; passing opens the attempt row.
     */
    public GatePass start(UUID jobId, long eventId, String worker, Duration leaseFor, Provider provider,
                          Duration fullDelay, Verdict verdict, Duration deferDelay) {
        return start(jobId, eventId, worker, leaseFor, provider, fullDelay, verdict, deferDelay, null);
    }

    /**
     * As {@link #start(UUID, long, String, Duration, Provider, Duration, Verdict, Duration)}, from the job as
     * {@link JobLeases#peek} read it ({@code peeked}; null: not read). The usual start — nothing against the request,
     * caps left by the peeked row, a free slot — takes the lease and opens the attempt as one transition (START: one
     * row version of the job) on the provider's slot; its guard is the peeked state (the same dispatch event, as many
     * attempts), and when it does not hold, no slot is claimed either. Without a canary candidate that is one
     * statement ({@link JobLeases#startOnFreeSlot}); with one, the slot is claimed first, then the choice is made (it
     * may count the candidate's sample), then START, in one transaction. Anything else goes the long way: the lease,
     * then the checks.
     */
    public GatePass start(UUID jobId, long eventId, String worker, Duration leaseFor, Provider provider,
                          Duration fullDelay, Verdict verdict, Duration deferDelay, Lease peeked) {
        boolean usual = peeked != null && verdict == null && provider != null
                && Outcomes.mayStart(standing(peeked), clock.instant())
                // A pool job whose member cools down, is probed by another job or drained goes the long way: placed again.
                && moves.mayStart(peeked, provider.name());
        ProviderSlots.Claim triedFirst = null;
        if (usual && !canaries.hasCandidate(provider)) {
            // No canary to choose for: the slot's claim and START are one statement (the choice is the stable revision).
            Canaries.Choice route = Canaries.Choice.stable(provider, peeked.kind());
            JobLeases.FreeSlotStart tried = leases.startOnFreeSlot(jobId, eventId, peeked.attempts(), worker, leaseFor,
                    provider.name(), provider.maxConcurrency(), route.revision());
            if (tried.started().isPresent()) {
                return new Submitting(tried.started().get().lease(), tried.started().get().attempt(), route);
            }
            if (!tried.qualified()) {
                return new NotLeased(leases.whyNoLease(jobId, eventId));
            }
            // No slot (or the gate closed): the long way takes the lease and snoozes the job on what the claim found;
            // rows missing: the long way makes them, with the job's row locked, and looks again.
            usual = false;
            triedFirst = tried.found();
        }
        boolean claimFirst = usual;
        ProviderSlots.Claim foundFirst = triedFirst;
        return leases.inOneTransaction(tx -> {
            ProviderSlots.Claim claimed = foundFirst;
            if (claimFirst) {
                UUID token = UUID.randomUUID();
                claimed = leases.tryClaim(provider.name(), provider.maxConcurrency(), jobId, token);
                if (claimed.claimed()) {
                    // No job row is locked yet (START locks it next): the choice may wait for a candidate's count.
                    Canaries.Choice route = canaries.choose(provider, jobId, peeked.kind(), peeked.attempts(), peeked.maxAttempts(), true);
                    Optional<JobLeases.Started> started = leases.start(jobId, eventId, peeked.attempts(), worker, leaseFor, token,
                            provider.name(), route.revision(), route.role());
                    if (started.isEmpty()) {
                        tx.setRollbackOnly(); // the slot claimed for it goes back
                        return new NotLeased(leases.whyNoLease(jobId, eventId));
                    }
                    return new Submitting(started.get().lease(), started.get().attempt(), route);
                }
                if (claimed.rowsMissing()) {
                    claimed = null; // the long way makes them, with the job's row locked, and looks again
                }
            }
            Optional<Lease> taken = leases.lease(jobId, eventId, worker, leaseFor);
            if (taken.isEmpty()) {
                return new NotLeased(leases.whyNoLease(jobId, eventId));
            }
            Lease lease = taken.get();
            Instant now = clock.instant();
            if (verdict != null && !verdict.retry()) {
                return end(lease, verdict.category(), verdict.message());
            }
            if (Outcomes.decide(new Evidence.Starting(), RevisionRole.STABLE, standing(lease), Waits.NONE, now)
                    instanceof Fate.Fail none) {
                return end(lease, none.category(), none.message());
            }
            if (verdict == null && provider != null && !moves.mayStart(lease, provider.name())) {
                Optional<PoolMoves.Move> placed = moves.atMemberTakingNoAttempts(lease);
                if (placed.isPresent() && (placed.get().leaves(lease) || placed.get().waits() != null)) {
                    PoolMoves.Move move = placed.get();
                    // No attempt spent: to another member, dispatched at once (or when it can take it), or back to wait
                    // on this one until its cooldown ends when no member can take it sooner.
                    if (leases.requeueOn(lease.jobId(), lease.token(), move.leaves(lease) ? move.provider() : null, move.at(),
                            lease.unparseableStreak(), null, move.waits()) && move.leaves(lease)) {
                        moves.log(lease, lease.attempts(), move, "its member " + provider.name() + " takes no attempt now");
                    }
                    return new Snoozed(move.at(), "member " + provider.name() + " of pool " + lease.pool() + " takes no attempt now: "
                            + (move.leaves(lease) ? "moved to " + move.provider() : move.waits()));
                }
                // It stays and goes now: failover is off for its tenant, or no other member can serve it.
            }
            Instant wakeAt = null;
            String reason = null;
            if (verdict != null) {
                wakeAt = now.plus(deferDelay);
                reason = verdict.message();
            } else {
                // Closed by a Retry-After: no slot claimed. Full: no free slot of the provider's limit (V19).
                ProviderSlots.Claim claim = claimed != null ? claimed : leases.claim(provider.name(), provider.maxConcurrency(), lease);
                if (claim.closedUntil() != null) {
                    Optional<PoolMoves.Move> placed = moves.atClosedGate(lease, claim.closedUntil());
                    Optional<PoolMoves.Move> move = placed.filter(m -> m.leaves(lease));
                    if (move.isPresent()) {
                        // No attempt spent: the job goes back to retry_wait on the other member, dispatched at once (or at
                        // that member's reopening within its max-wait); its next start prepares the request for it.
                        if (leases.requeueOn(lease.jobId(), lease.token(), move.get().provider(), move.get().at(), lease.unparseableStreak(),
                                null)) {
                            moves.log(lease, lease.attempts(), move.get(), "its gate is closed until " + claim.closedUntil());
                        }
                        return new Snoozed(move.get().at(), "provider " + provider.name() + " gate closed until " + claim.closedUntil()
                                + " beyond its max-wait in pool " + lease.pool() + ": moved to " + move.get().provider());
                    }
                    wakeAt = claim.closedUntil();
                    // A pool job that stays says why: no other member it may use can take it, or no failover for its tenant.
                    reason = placed.map(PoolMoves.Move::waits).filter(w -> w != null)
                            .orElse("provider " + provider.name() + " gate closed until " + claim.closedUntil());
                } else if (!claim.claimed()) {
                    wakeAt = now.plus(fullDelay);
                    reason = "provider " + provider.name() + " at its concurrency limit " + provider.maxConcurrency();
                }
            }
            if (wakeAt != null) {
                Fate deferred = Outcomes.decide(new Evidence.Deferred(wakeAt, verdict == null ? null : verdict.category(), reason),
                        RevisionRole.STABLE, standing(lease), Waits.NONE, now);
                if (deferred instanceof Fate.Fail late) {
                    return end(lease, late.category(), late.message());
                }
                Fate.Retry retry = (Fate.Retry) deferred;
                // The job says why it waits (a closed or full gate, what re-validation found) while it does.
                leases.requeueOn(lease.jobId(), lease.token(), null, retry.at(), retry.unparseableStreak(),
                        retry.last() == null ? null : retry.last().wire(), reason);
                return new Snoozed(wakeAt, reason);
            }
            // The stable revision or a canary's candidate (docs/canary.md): decided from the attempt alone. The job's
            // row is locked (LEASE): the choice does not wait for a candidate's count.
            Canaries.Choice route = canaries.choose(provider, jobId, lease.kind(), lease.attempts(), lease.maxAttempts());
            int attempt = leases.submit(lease, worker, provider.name(), route.revision(), route.role());
            return new Submitting(lease, attempt, route);
        });
    }

    /** Where a leased (or peeked) job stands against its caps: the attempts before the one it would start. */
    private static Standing standing(Lease lease) {
        return new Standing(lease.attempts(), lease.maxAttempts(), lease.expiresAt(), lease.unparseableStreak());
    }

    private Ended end(Lease lease, ErrorCategory category, String message) {
        boolean ended = leases.fail(lease.jobId(), lease.token(), category, message, null);
        return new Ended(ended ? category.wire() + ": " + message : "lease lost");
    }
}
