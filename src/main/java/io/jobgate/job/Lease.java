package io.jobgate.job;

import java.time.Instant;
import java.util.UUID;

/**
 * A worker's hold on one job: the token every write of this attempt is conditional on, and the
 * stored request the attempt works from.
 */
public record Lease(UUID jobId, UUID token, String tenantId, String presetId, int presetVersion, String kind,
                    String aspectClass, String provider, String inputsJson, String sourceKey, String sourceSha256,
                    String sourceMediaType,
                    String correlationId, int attempts, int maxAttempts, Instant expiresAt, int unparseableStreak,
                    String pool, long sourceBytes) {
    // pool: the pool the job named (null: pinned to its provider, or the kind's default); sourceBytes: its upload's size,
    // which a pool's member must take when the job moves to it.
}
