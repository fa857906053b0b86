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
     * ({@code duration-tolerance-ms} in its settings; models render in whole frames or fixed chunks);
     * and the largest clip it may send ({@code max-video-output-bytes}).
     */
    public record Video(int durationSeconds, long toleranceMillis, long maxBytes) {
        /** Default tolerance: half a second. */
        public static final long TOLERANCE_MILLIS = 500;
        /** Default cap: 4 GiB, streamed, never in memory. */
        public static final long MAX_BYTES = 4L << 30;

        public Video(int durationSeconds, long toleranceMillis) {
            this(durationSeconds, toleranceMillis, MAX_BYTES);
        }
    }

    /** The subject of a job's output as its provider renders it (size from the adapter's table). */
    public static OutputSubject of(UUID jobId, String tenantId, int attempt, String presetId, int presetVersion, String kind,
                                   String aspectClass, String inputsJson, String sourceSha256, Provider provider,
                                   String revision) {
        Integer seconds = VideoOrder.durationOf(kind, inputsJson);
        Video video = seconds == null ? null : new Video(seconds,
                setting(provider, "duration-tolerance-ms", Video.TOLERANCE_MILLIS), setting(provider, "max-video-output-bytes", Video.MAX_BYTES));
        return new OutputSubject(jobId, tenantId, attempt, presetId, presetVersion, aspectClass, inputsJson, sourceSha256,
                provider.name(), revision, provider.size(aspectClass, VideoOrder.resolutionOf(kind, inputsJson)).orElse(null),
                video);
    }

    private static long setting(Provider provider, String key, long fallback) {
        String value = provider.settings().get(key);
        return value == null || value.isBlank() ? fallback : Long.parseLong(value.trim());
    }
}
