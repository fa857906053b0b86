package io.jobgate.job;

import java.time.Instant;
import java.util.UUID;

/** The stored job as the API shows it (inputs stay in the database: they may hold user text). */
public record Job(UUID id, String tenantId, String idempotencyKey, String requestSha256, JobStatus status,
                  String presetId, int presetVersion, String kind, String aspectClass, String provider,
                  UUID uploadId, String sourceSha256, long sourceBytes, String correlationId, long costMicros,
                  int maxAttempts, int maxLifetimeSeconds, Instant expiresAt, int attempts, String errorCategory,
                  String errorMessage, Instant createdAt, Instant updatedAt, Instant finalizedAt, Instant nextAttemptAt,
                  String adapterRevision, String result, UUID webhookEndpointId, UUID parentJobId, String pool,
                  String waitingReason) {
    // result: the result record (JSON) of a succeeded job's promoted output, null until it has one.
    // webhookEndpointId: the tenant's endpoint the job named (its webhook_url), its only receiver; null: every endpoint.
    // parentJobId: a summary job's transcription job (V34); null for every job a client sent.
    // pool: the provider pool the job named (V36); null when it named a provider or took the kind's default.
    // waitingReason: why a queued or retry_wait job waits (V37): a closed gate it can only wait out; null: nothing said.

    /** A job that says nothing of why it waits. */
    public Job(UUID id, String tenantId, String idempotencyKey, String requestSha256, JobStatus status,
               String presetId, int presetVersion, String kind, String aspectClass, String provider,
               UUID uploadId, String sourceSha256, long sourceBytes, String correlationId, long costMicros,
               int maxAttempts, int maxLifetimeSeconds, Instant expiresAt, int attempts, String errorCategory,
               String errorMessage, Instant createdAt, Instant updatedAt, Instant finalizedAt, Instant nextAttemptAt,
               String adapterRevision, String result, UUID webhookEndpointId, UUID parentJobId, String pool) {
        this(id, tenantId, idempotencyKey, requestSha256, status, presetId, presetVersion, kind, aspectClass, provider, uploadId,
                sourceSha256, sourceBytes, correlationId, costMicros, maxAttempts, maxLifetimeSeconds, expiresAt, attempts, errorCategory,
                errorMessage, createdAt, updatedAt, finalizedAt, nextAttemptAt, adapterRevision, result, webhookEndpointId, parentJobId,
                pool, null);
    }
}
