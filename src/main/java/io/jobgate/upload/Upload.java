package io.jobgate.upload;

import java.time.Instant;
import java.util.UUID;

/**
 * A stored source object of a tenant; the bytes live in object storage under {@code objectKey}.
 * {@code expired}: retention expired it (upload/UploadRetention), so new jobs may not name it.
 */
public record Upload(UUID id, String tenantId, String sha256, long bytes, String mediaType, String objectKey,
                     Long durationMillis, Instant createdAt, boolean expired) {
}
