package io.jobgate.upload;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import org.apache.camel.Exchange;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Uploads retention (route {@code retention}, role sweeper), in two steps. An upload that no job has
 * used for {@code jobgate.retention.uploads-hours} (made that long ago, and every job that named it
 * final that long ago) <em>expires</em>: new jobs may not name it ({@code upload_expired}); the same
 * bytes uploaded again revive it. Once every upload of the same bytes (the object is shared by digest)
 * expired more than {@link #SETTLE} ago, the source object is removed and the uploads are
 * <em>purged</em>. The wait lets an admission that read the upload just before it expired commit its
 * job first; such a job revives the upload instead. The object key's lock, taken by the upload path
 * too, keeps an upload of the same bytes from being stored while the object is removed. Jobs keep the
 * source's digest and size.
 */
public final class UploadRetention {

    /** Longer than any admission takes from reading its upload to committing its job. */
    static final Duration SETTLE = Duration.ofMinutes(15);

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final Clock clock;
    private final Duration keep;
    private final int batch;
    private final S3Client s3;
    private final String bucket;

    public UploadRetention(JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock, Duration keep, int batch,
                           S3Client s3, String bucket) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
        this.keep = keep;
        this.batch = batch;
        this.s3 = s3;
        this.bucket = bucket;
    }

    /** Route step: one batch of each; headers say how many. */
    public void sweep(Exchange exchange) {
        exchange.getMessage().setHeader("uploadsExpired", expire());
        exchange.getMessage().setHeader("sourceObjectsRemoved", purge());
    }

    /** Marks uploads unused for the retention period as expired; returns how many. */
    public int expire() {
        Instant now = clock.instant();
        Timestamp cutoff = Timestamp.from(now.minus(keep));
        return jdbc.update("""
                UPDATE uploads SET expired_at = ? WHERE upload_id = ANY (ARRAY(
                    SELECT u.upload_id FROM uploads u
                     WHERE u.expired_at IS NULL AND u.created_at < ?
                       AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.upload_id = u.upload_id
                                          AND (j.finalized_at IS NULL OR j.finalized_at >= ?))
                     ORDER BY u.created_at LIMIT ? FOR UPDATE SKIP LOCKED))""",
                Timestamp.from(now), cutoff, cutoff, batch);
    }

    /** Removes the source objects whose uploads all expired more than {@link #SETTLE} ago; returns how many. */
    public int purge() {
        Timestamp settled = Timestamp.from(clock.instant().minus(SETTLE));
        List<String> keys = jdbc.queryForList("""
                SELECT object_key FROM uploads WHERE expired_at < ? AND purged_at IS NULL
                 GROUP BY object_key ORDER BY min(expired_at) LIMIT ?""", String.class, settled, batch);
        int removed = 0;
        for (String key : keys) {
            if (Boolean.TRUE.equals(transactions.execute(tx -> purge(key, settled)))) {
                removed++;
            }
        }
        return removed;
    }

    /** One object: removed if every upload of it may go, else the expiries that may not stand are undone. */
    private boolean purge(String key, Timestamp settled) {
        jdbc.queryForList("SELECT pg_advisory_xact_lock(?, hashtext(?))", UploadStore.OBJECT_LOCK, key);
        List<Map<String, Object>> uploads = jdbc.queryForList("""
                SELECT u.upload_id, u.expired_at,
                       EXISTS (SELECT 1 FROM jobs j WHERE j.upload_id = u.upload_id AND j.created_at >= u.expired_at) AS used_since
                  FROM uploads u WHERE u.object_key = ? FOR UPDATE OF u""", key);
        // A job admitted while its upload expired (it read the upload just before): the upload lives on.
        jdbc.update("""
                UPDATE uploads u SET expired_at = NULL, purged_at = NULL WHERE u.object_key = ? AND u.expired_at IS NOT NULL
                   AND EXISTS (SELECT 1 FROM jobs j WHERE j.upload_id = u.upload_id AND j.created_at >= u.expired_at)""", key);
        boolean anyLive = uploads.stream().anyMatch(u -> u.get("expired_at") == null || Boolean.TRUE.equals(u.get("used_since")));
        boolean allSettled = uploads.stream().allMatch(u -> u.get("expired_at") == null
                || ((Timestamp) u.get("expired_at")).before(settled));
        if (anyLive) {
            // Another upload of the same bytes is live: the object stays; these expiries are settled.
            jdbc.update("UPDATE uploads SET purged_at = ? WHERE object_key = ? AND expired_at < ? AND purged_at IS NULL",
                    Timestamp.from(clock.instant()), key, settled);
            return false;
        }
        if (!allSettled) {
            return false; // one expired too recently: next round
        }
        s3.deleteObject(b -> b.bucket(bucket).key(key));
        jdbc.update("UPDATE uploads SET purged_at = ? WHERE object_key = ? AND purged_at IS NULL",
                Timestamp.from(clock.instant()), key);
        return true;
    }
}
