package io.jobgate.worker;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import io.jobgate.fate.PoolPlacement;
import io.jobgate.job.Lease;
import io.jobgate.pool.Pool;
import io.jobgate.pool.PoolPlacer;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a pool job's next attempt goes when the worker may move it (docs/providers.md, "Pools"): after a definite
 * failure (the failed member left out when another can take it), at a start whose member's gate is closed beyond
 * that member's max-wait, or at a start whose member takes no attempt now (cooling down, probed, drained). The callers decide whether a move is allowed at all — never after a request that may have
 * reached its provider, never for a pinned job, never for a canary candidate's attempt —; the placement itself, with
 * its tenant's rules (members it may not use, no failover), is the rule in {@code fate}
 * ({@link io.jobgate.fate.PoolPlacements}). Each move writes one line to {@code jobgate.pools}.
 */
final class PoolMoves {

    private static final Logger MOVES = LoggerFactory.getLogger("jobgate.pools");

    /**
     * The job's next attempt goes to {@code provider}, due at {@code at}: another member (a move) or its own (it stays,
     * when no other member it may use can take it, or its tenant allows no failover).
     *
     * @param waits what the job says while it waits for its member's closed gate, or null
     */
    record Move(String provider, Instant at, String why, String waits) {

        /** Does the job leave the member its lease is on? */
        boolean leaves(Lease lease) {
            return !provider.equals(lease.provider());
        }
    }

    private final PoolPlacer placer;
    private final PresetCatalog presets;
    private final Clock clock;
    private final io.jobgate.ops.Meters meters;

    PoolMoves(PoolPlacer placer, PresetCatalog presets, Clock clock, io.jobgate.ops.Meters meters) {
        this.meters = meters;
        this.placer = placer;
        this.presets = presets;
        this.clock = clock;
    }

    /**
     * After attempt {@code attempt} failed definitely on the lease's provider: another member, due after
     * {@code backoff} (or its gate's reopening within its max-wait), or the same one; empty for no pool, or when no
     * member can serve it.
     *
     * @param closingUntil the failed member's gate closes until then (its 429's Retry-After), or null
     */
    Optional<Move> afterFailure(Lease lease, int attempt, Duration backoff, Instant closingUntil) {
        return place(lease, attempt + 1, lease.provider(), closingUntil, clock.instant().plus(backoff));
    }

    /**
     * At a start that found the lease's provider's gate closed until {@code closedUntil}: where the job goes when that
     * is beyond the provider's max-wait in the job's pool (another member, or its own when it can only wait), else
     * empty (the start waits the gate out, as for any job).
     */
    Optional<Move> atClosedGate(Lease lease, Instant closedUntil) {
        Optional<Pool> pool = pool(lease);
        Optional<Pool.Member> member = pool.flatMap(p -> p.members().stream().filter(m -> m.provider().equals(lease.provider())).findFirst());
        Instant now = clock.instant();
        if (pool.isEmpty() || (member.isPresent() && !closedUntil.isAfter(now.plus(member.get().maxWait())))) {
            return Optional.empty();
        }
        return place(lease, lease.attempts() + 1, null, null, now);
    }

    /**
     * May the lease's attempt start on {@code provider} as far as its member's health goes (always, for a job of no
     * pool)? See {@link PoolPlacer#mayStartOn}.
     */
    boolean mayStart(Lease lease, String provider) {
        return pool(lease).map(p -> placer.mayStartOn(p, provider, lease.jobId())).orElse(true);
    }

    /**
     * At a start whose member takes no attempt now (cooling down, probed by another job, drained): where the job goes
     * (another member, or its own, when it is due, when no other can take it or its tenant allows no failover).
     */
    Optional<Move> atMemberTakingNoAttempts(Lease lease) {
        return place(lease, lease.attempts() + 1, null, null, clock.instant());
    }

    /**
     * The attempt of a pool job on its member ended: a failure that counts against the member
     * ({@link io.jobgate.fate.PoolPlacements#countsAgainstMember}) goes to its health, a success decides its probe. A
     * canary candidate's attempt counts for its candidate, not for the member.
     */
    void ended(Worker.Started started, io.jobgate.job.ErrorCategory failed, String cause) {
        Lease lease = started.lease();
        if (lease.pool() == null || started.role() == io.jobgate.job.RevisionRole.CANDIDATE) {
            return;
        }
        Optional<Pool> pool = pool(lease);
        Optional<Pool.Member> member = pool.flatMap(p -> p.member(lease.provider()));
        if (member.isEmpty()) {
            return;
        }
        if (failed == null) {
            placer.health().succeeded(pool.get(), member.get(), lease.jobId());
        } else if (io.jobgate.fate.PoolPlacements.countsAgainstMember(failed)) {
            placer.health().failed(pool.get(), member.get(), lease.jobId(), cause);
        }
    }

    private Optional<Move> place(Lease lease, int nextAttempt, String exclude, Instant excludeClosedUntil, Instant earliest) {
        Optional<Pool> pool = pool(lease);
        if (pool.isEmpty()) {
            return Optional.empty();
        }
        Preset preset = presets.resolve(lease.presetId(), lease.presetVersion());
        PoolPlacement placement = placer.place(pool.get(), lease.tenantId(), preset, lease.aspectClass(), lease.sourceBytes(),
                lease.jobId(), nextAttempt, exclude, excludeClosedUntil, lease.provider());
        if (!(placement instanceof PoolPlacement.To to)) {
            return Optional.empty();
        }
        Instant at = to.notBefore() != null && to.notBefore().isAfter(earliest) ? to.notBefore() : earliest;
        return Optional.of(new Move(to.member(), at, to.why(), to.waitingReason()));
    }

    private Optional<Pool> pool(Lease lease) {
        return lease.pool() == null ? Optional.empty() : placer.pools().find(lease.pool());
    }

    /** The line of a move made (written once the job's row says so). */
    void log(Lease lease, int attempt, Move move, String cause) {
        meters.poolMove(lease.pool(), lease.provider(), move.provider());
        MOVES.info("pool move job={} pool={} attempt={} from={} to={} due={} cause=\"{}\" placement=\"{}\"", lease.jobId(), lease.pool(),
                attempt, lease.provider(), move.provider(), move.at(), cause, move.why());
    }
}
