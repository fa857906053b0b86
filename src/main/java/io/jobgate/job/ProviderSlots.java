package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
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
     * Claims a slot of {@code provider} for the job's call under {@code leaseToken}, in the caller's
     * transaction (after the job row's lock: the order every transition keeps).
     *
     * @return false when all {@code limit} slots are held (the provider is at its concurrency limit)
     */
    public boolean claim(String provider, int limit, UUID jobId, UUID leaseToken, Instant now) {
        if (take(provider, limit, jobId, leaseToken, now)) {
            return true;
        }
        // The provider's first call, or its limit was raised: make the missing rows, then look again.
        Integer rows = jdbc.queryForObject("SELECT count(*) FROM provider_slots WHERE provider = ? AND slot < ?",
                Integer.class, provider, limit);
        if (rows != null && rows >= limit) {
            return false;
        }
        jdbc.update("INSERT INTO provider_slots (provider, slot) SELECT ?, g FROM generate_series(0, ? - 1) g ON CONFLICT DO NOTHING",
                provider, limit);
        return take(provider, limit, jobId, leaseToken, now);
    }

    private boolean take(String provider, int limit, UUID jobId, UUID leaseToken, Instant now) {
        List<Integer> slot = jdbc.queryForList("""
                UPDATE provider_slots s SET lease_token = ?, job_id = ?, taken_at = ?
                 WHERE s.provider = ? AND s.slot = (SELECT f.slot FROM provider_slots f
                                                     WHERE f.provider = ? AND f.slot < ? AND f.lease_token IS NULL
                                                     ORDER BY f.slot LIMIT 1 FOR UPDATE SKIP LOCKED)
                RETURNING s.slot""", Integer.class, leaseToken, jobId, Timestamp.from(now), provider, provider, limit);
        return !slot.isEmpty();
    }
}
