package io.jobgate.reconcile;

import java.time.Instant;
import java.util.UUID;

import io.jobgate.job.JobStatus;

/**
 * A job waiting on a provider ({@code provider_pending} or {@code submission_unknown}), as reconciliation sees it.
 *
 * @param providerState the adapter's own record of its task ({@code JobgateProviderState}), or null
 */
public record WaitingJob(UUID jobId, JobStatus status, String provider, String providerTask, String providerRequestId,
                         int attempts, int maxAttempts, Instant expiresAt, int checks, String presetId, int presetVersion,
                         String kind, String tenantId, String aspectClass, String inputsJson, String sourceSha256,
                         String adapterRevision, String providerState) {
}
