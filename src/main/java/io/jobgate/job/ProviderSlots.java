package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A provider's concurrency limit, across instances: {@code max_concurrency} slot rows (V19), one
 * claimed by each call in flight. A claim takes the first free slot that no other transaction is
 * claiming ({@code FOR UPDATE SKIP LOCKED}), so starts of one provider never queue behind each
 * other's commits; the transition that takes the job out of {@code submitting} frees the slot in its
 * own transaction ({@link JobTransitions}). A free slot being claimed or freed by a transaction not
 * yet committed is skipped: the limit is never exceeded, at worst a start waits one more round.
 */
public final class ProviderSlots {

    private final JdbcTemplate jdbc;

    public ProviderSlots(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /**
     * What a start found at the provider: closed until {@code closedUntil} (a Retry-After; no slot
     * claimed), or open with a slot claimed ({@code claimed}) or none free; {@code rowsMissing}: none free
     * because the provider's slot rows are not all made yet (its first call, or its limit was raised).
     */
    public record Claim(Instant closedUntil, boolean claimed, boolean rowsMissing) {
    }

    /**
     * Unless the provider's gate is closed (read, not locked: a close that races this start is the
     * same as one just after it), claims a slot of {@code provider} for the job's call under
     * {@code leaseToken}, in the caller's transaction (after the job row's lock: the order every
     * transition keeps). The gate's read and the claim are one statement, one round trip.
     */
    public Claim claim(String provider, int limit, UUID jobId, UUID leaseToken, Instant now) {
        Claim first = take(provider, limit, jobId, leaseToken, now);
        if (!first.rowsMissing()) {
            return first;
        }
        // The provider's first call, or its limit was raised: make the missing rows, then look again.
        jdbc.update("INSERT INTO provider_slots (provider, slot) SELECT ?, g FROM generate_series(0, ? - 1) g ON CONFLICT DO NOTHING",
                provider, limit);
        return take(provider, limit, jobId, leaseToken, now);
    }

    /**
     * Makes the provider's slot rows its limit needs (at start, for every provider), so that a start's
     * one-statement claim ({@link #tryClaim}) finds them from the first call on instead of going the
     * long way (lease first, then the claim) for a provider's first calls.
     */
    public void ensureRows(String provider, int limit) {
        jdbc.update("INSERT INTO provider_slots (provider, slot) SELECT ?, g FROM generate_series(0, ? - 1) g ON CONFLICT DO NOTHING",
                provider, limit);
    }

    /**
     * As {@link #claim}, without making missing slot rows ({@code rowsMissing}: the provider's rows are not
     * all there yet, so none may have been free). Never waits on a row lock, so it may come before the job row's lock
     * ({@link JobTransitions.Event#START}); making rows may wait on another transaction making the same.
     */
    public Claim tryClaim(String provider, int limit, UUID jobId, UUID leaseToken, Instant now) {
        return take(provider, limit, jobId, leaseToken, now);
    }

    private Claim take(String provider, int limit, UUID jobId, UUID leaseToken, Instant now) {
        Timestamp at = Timestamp.from(now);
        // The gate's condition inside the slot's subquery: a closed gate locks no slot row at all.
        return jdbc.queryForObject("""
                WITH gate AS (SELECT closed_until FROM provider_gates WHERE provider = ? AND closed_until > ?),
                taken AS (
                    UPDATE provider_slots s SET lease_token = ?, job_id = ?, taken_at = ?
                     WHERE s.provider = ? AND s.slot = (SELECT f.slot FROM provider_slots f
                                                         WHERE f.provider = ? AND f.slot < ? AND f.lease_token IS NULL
                                                           AND NOT EXISTS (SELECT 1 FROM gate)
                                                         ORDER BY f.slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                    RETURNING s.slot)
                SELECT (SELECT closed_until FROM gate) AS closed_until, EXISTS (SELECT 1 FROM taken) AS claimed,
                       NOT EXISTS (SELECT 1 FROM gate) AND NOT EXISTS (SELECT 1 FROM taken)
                           AND (SELECT count(*) FROM provider_slots c WHERE c.provider = ? AND c.slot < ?) < ? AS rows_missing""",
                (rs, n) -> {
                    Timestamp closed = rs.getTimestamp("closed_until");
                    return new Claim(closed == null ? null : closed.toInstant(), rs.getBoolean("claimed"), rs.getBoolean("rows_missing"));
                }, provider, at, leaseToken, jobId, at, provider, provider, limit, provider, limit, limit);
    }
}
