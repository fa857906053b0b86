package io.jobgate.upload;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.util.Optional;
import java.util.UUID;

import org.springframework.jdbc.core.JdbcTemplate;

/** Upload records: one per tenant and digest; the bytes are in object storage. */
public final class UploadStore {

    private final JdbcTemplate jdbc;

    public UploadStore(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    /** Inserts the record, or returns the tenant's existing record of the same bytes. */
    public Stored save(Upload upload) {
        int inserted = jdbc.update("""
                INSERT INTO uploads (upload_id, tenant_id, sha256, bytes, media_type, object_key, duration_ms, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant_id, sha256) DO NOTHING""",
                upload.id(), upload.tenantId(), upload.sha256(), upload.bytes(), upload.mediaType(), upload.objectKey(),
                upload.durationMillis(), Timestamp.from(upload.createdAt()));
        if (inserted == 1) {
            return new Stored(upload, true);
        }
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
        long duration = rs.getLong("duration_ms");
        return new Upload(rs.getObject("upload_id", UUID.class), rs.getString("tenant_id"), rs.getString("sha256"),
                rs.getLong("bytes"), rs.getString("media_type"), rs.getString("object_key"),
                rs.wasNull() ? null : duration, rs.getTimestamp("created_at").toInstant());
    }

    public record Stored(Upload upload, boolean created) {
    }
}
