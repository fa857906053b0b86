package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

/**
 * A provider's concurrency limit, across instances: {@code max_concurrency} slot rows (V19), one
 * claimed by each call in flight. A claim takes a free slot that no other transaction is
 * claiming ({@code FOR UPDATE SKIP LOCKED}; the first from a random one on, {@link #freeSlot}), so starts of one provider never queue behind each
 * other's commits; the transition that takes the job out of {@code submitting} frees the slot in its
 * own transaction ({@link JobTransitions}). A free slot being claimed or freed by a transaction not
 * yet committed is skipped: the limit is never exceeded, at worst a start waits one more round.
 */
public final class ProviderSlots {

    private final JdbcTemplate jdbc;
    private final NamedParameterJdbcTemplate named;

    public ProviderSlots(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        this.named = new NamedParameterJdbcTemplate(jdbc);
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
        ensureRows(provider, limit);
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
        MapSqlParameterSource p = new MapSqlParameterSource().addValue("provider", provider).addValue("limit", limit)
                .addValue("firstSlot", startingSlot(limit)).addValue("at", Timestamp.from(now)).addValue("token", leaseToken)
                .addValue("job", jobId);
        // The gate's condition inside the slot's subquery: a closed gate locks no slot row at all.
        return named.queryForObject("""
                WITH gate AS (SELECT closed_until FROM provider_gates WHERE provider = :provider AND closed_until > :at),
                taken AS (
                    UPDATE provider_slots s SET lease_token = :token, job_id = :job, taken_at = :at
                     WHERE s.provider = :provider AND s.slot = """ + freeSlot("NOT EXISTS (SELECT 1 FROM gate)") + """

                    RETURNING s.slot)
                SELECT (SELECT closed_until FROM gate) AS closed_until, EXISTS (SELECT 1 FROM taken) AS claimed,
                       NOT EXISTS (SELECT 1 FROM gate) AND NOT EXISTS (SELECT 1 FROM taken)
                           AND (SELECT count(*) FROM provider_slots c WHERE c.provider = :provider AND c.slot < :limit) < :limit
                           AS rows_missing""",
                p, (rs, n) -> {
                    Timestamp closed = rs.getTimestamp("closed_until");
                    return new Claim(closed == null ? null : closed.toInstant(), rs.getBoolean("claimed"), rs.getBoolean("rows_missing"));
                });
    }

    /**
     * The slot a claim takes, as an SQL expression over {@code :provider}, {@code :limit} and {@code :firstSlot}
     * ({@link #startingSlot}), only where {@code onlyIf} holds: the first free slot from {@code :firstSlot} on, else
     * the first below it; one no other transaction is claiming or freeing (SKIP LOCKED), locked. Each claim
     * starting at slot 0 had every start of a wave walk past the slots the starts before it were claiming (22
     * rows skipped for one, 2,000 calls starting at once) and update the same few pages, and the lowest slots
     * gathered the most row versions for the primary key to pass; from a random slot on, the starts spread.
     */
    static String freeSlot(String onlyIf) {
        String first = "SELECT f.slot FROM provider_slots f WHERE f.provider = :provider AND %s AND f.lease_token IS NULL AND "
                + onlyIf + " ORDER BY f.slot LIMIT 1 FOR UPDATE SKIP LOCKED";
        // Two index descents at most; the second runs only when the first found none (coalesce stops at a value).
        return "coalesce((" + first.formatted("f.slot >= :firstSlot AND f.slot < :limit") + "), ("
                + first.formatted("f.slot < least(:firstSlot, :limit)") + "))";
    }

    /** Where a claim among {@code limit} slots starts looking ({@link #freeSlot}'s {@code :firstSlot}). */
    static int startingSlot(int limit) {
        return java.util.concurrent.ThreadLocalRandom.current().nextInt(Math.max(1, limit));
    }
}
