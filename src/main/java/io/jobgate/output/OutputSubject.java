package io.jobgate.output;

import java.util.UUID;

import io.jobgate.preset.PixelSize;

/**
 * Whose output it is and what was asked: the facts the checks, the keys and the manifest need.
 *
 * @param size the exact pixel size the adapter renders the aspect class at (its size table), null
 *             when it declares none (then the class's ratio and minimum are checked) or for non-images
 */
public record OutputSubject(UUID jobId, String tenantId, int attempt, String presetId, int presetVersion,
                            String aspectClass, String inputsJson, String sourceSha256, String adapter, String revision,
                            PixelSize size) {
}
