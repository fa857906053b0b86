package io.jobgate.output;

import java.util.UUID;

/** Whose output it is and what was asked: the facts the checks, the keys and the manifest need. */
public record OutputSubject(UUID jobId, String tenantId, int attempt, String presetId, int presetVersion,
                            String aspectClass, String inputsJson, String sourceSha256, String adapter, String revision) {
}
