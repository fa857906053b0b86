package io.jobgate.upload;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/** Upload records: one per tenant and digest; the bytes are in object storage. */
public final class UploadStore {

    /** Advisory lock class of an object key: an upload storing it and retention removing it take turns. */
    static final int OBJECT_LOCK = 27240;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;

    public UploadStore(JdbcTemplate jdbc) {
        this(jdbc, null);
    }

    public UploadStore(JdbcTemplate jdbc, TransactionTemplate transactions) {
        this.jdbc = jdbc;
        this.transactions = transactions;
    }

    /**
     * Inserts the record, or returns the tenant's existing record of the same bytes (reviving it if it
     * had expired), then stores the bytes with {@code storeObject}: both under the object key's lock,
     * so retention never removes an object between an upload's record and its bytes.
     */
    public Stored save(Upload upload, Runnable storeObject) {
        return transactions.execute(tx -> {
            jdbc.queryForList("SELECT pg_advisory_xact_lock(?, hashtext(?))", OBJECT_LOCK, upload.objectKey());
            Stored stored = save(upload);
            storeObject.run();
            return stored;
        });
    }

    /** Inserts the record, or returns the tenant's existing record of the same bytes (revived if it had expired). */
    public Stored save(Upload upload) {
        int inserted = jdbc.update("""
                INSERT INTO uploads (upload_id, tenant_id, sha256, bytes, media_type, object_key, duration_ms, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, sha256) DO NOTHING""",
                upload.id(), upload.tenantId(), upload.sha256(), upload.bytes(), upload.mediaType(), upload.objectKey(),
                upload.durationMillis(), Timestamp.from(upload.createdAt()));
        if (inserted == 1) {
            return new Stored(upload, true);
        }
        // The same bytes again: a live record again, and it counts as new for retention.
        jdbc.update("UPDATE uploads SET expired_at = NULL, purged_at = NULL, created_at = ? "
                + "WHERE tenant_id = ? AND sha256 = ? AND expired_at IS NOT NULL",
                Timestamp.from(upload.createdAt()), upload.tenantId(), upload.sha256());
        Upload existing = jdbc.queryForObject("SELECT * FROM uploads WHERE tenant_id = ? AND sha256 = ?",
                UploadStore::map, upload.tenantId(), upload.sha256());
        return new Stored(existing, false);
    }

    /** The tenant's upload; another tenant's id is as unknown as a made-up one. */
    public Optional<Upload> find(String tenantId, UUID uploadId) {
        return jdbc.query("SELECT * FROM uploads WHERE tenant_id = ? AND upload_id = ?", UploadStore::map, tenantId, uploadId)
                .stream().findFirst();
    }

    private static Upload map(ResultSet rs, int row) throws SQLException {
        return new Upload(rs.getObject("upload_id", UUID.class), rs.getString("tenant_id"), rs.getString("sha256"),
                rs.getLong("bytes"), rs.getString("media_type"), rs.getString("object_key"),
                rs.getObject("duration_ms", Long.class), rs.getTimestamp("created_at").toInstant(), rs.getTimestamp("expired_at") != null);
    }

    public record Stored(Upload upload, boolean created) {
    }
}
