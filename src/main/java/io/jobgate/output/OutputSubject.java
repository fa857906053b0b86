package io.jobgate.output;

import java.util.UUID;

import io.jobgate.preset.PixelSize;
import io.jobgate.preset.VideoOrder;
import io.jobgate.provider.Provider;

/**
 * Whose output it is and what was asked: the facts the checks, the keys and the manifest need.
 *
 * @param size  the exact pixel size the adapter renders the aspect class at (its size table; for video
 *              at the ordered resolution), null when it declares none (then the class's ratio and
 *              minimum are checked) or for outputs without pixels
 * @param video the ordered duration and the provider's tolerance, null unless it is a video job
 */
public record OutputSubject(UUID jobId, String tenantId, int attempt, String presetId, int presetVersion,
                            String aspectClass, String inputsJson, String sourceSha256, String adapter, String revision,
                            PixelSize size, Video video) {

    /**
     * What a video must last: the ordered whole seconds, within the provider's documented tolerance
     * ({@code duration-tolerance-ms} in its settings; models render in whole frames or fixed chunks).
     */
    public record Video(int durationSeconds, long toleranceMillis) {
    }

    /** The subject of a job's output as its provider renders it (size from the adapter's table). */
    public static OutputSubject of(UUID jobId, String tenantId, int attempt, String presetId, int presetVersion, String kind,
                                   String aspectClass, String inputsJson, String sourceSha256, Provider provider,
                                   String revision) {
        Integer seconds = VideoOrder.durationOf(kind, inputsJson);
        Video video = seconds == null ? null : new Video(seconds,
                Long.parseLong(provider.settings().getOrDefault("duration-tolerance-ms", "500").trim()));
        return new OutputSubject(jobId, tenantId, attempt, presetId, presetVersion, aspectClass, inputsJson, sourceSha256,
                provider.name(), revision, provider.size(aspectClass, VideoOrder.resolutionOf(kind, inputsJson)).orElse(null),
                video);
    }
}
