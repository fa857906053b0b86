package io.jobgate.preset;

import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.ApiProblem;

/**
 * What a video job orders: whole seconds from the preset's allowed set, a resolution class and the
 * number of outputs. Read from the preset's two required inputs ({@code duration_seconds},
 * {@code resolution}); a value outside the set is refused with a code of its own, never rounded.
 * These and the provider's price table are the job's whole price: nothing else the client sends is.
 *
 * @param resolution {@code 720p} or {@code 1080p}: the frame's short side in pixels
 */
public record VideoOrder(int durationSeconds, String resolution, int outputs) {

    public static final String KIND = "video";
    public static final String DURATION_FIELD = "duration_seconds";
    public static final String RESOLUTION_FIELD = "resolution";
    /** Every resolution class there is; a preset allows some of them, an adapter's size and price tables cover them. */
    public static final List<String> RESOLUTIONS = List.of("720p", "1080p");

    /** The frame's short side of a resolution class (720 for {@code 720p}). */
    public static int shortSide(String resolution) {
        return Integer.parseInt(resolution.substring(0, resolution.length() - 1));
    }

    /** Seconds of video the job makes, all outputs together: what it is metered as ({@code video_seconds}). */
    public long videoSeconds() {
        return Math.multiplyExact((long) durationSeconds, outputs);
    }

    /** The order of a video preset's request, checked; null for other kinds. */
    public static VideoOrder of(Preset preset, JsonNode inputs) {
        if (!KIND.equals(preset.kind())) {
            return null;
        }
        InputField durationField = preset.inputs().get(DURATION_FIELD);
        InputField resolutionField = preset.inputs().get(RESOLUTION_FIELD);
        JsonNode duration = inputs == null ? null : inputs.get(DURATION_FIELD);
        if (duration == null || !duration.isIntegralNumber() || !durationField.values().contains(duration.asText())) {
            throw ApiProblem.of(422, "invalid_duration", (duration == null || duration.isNull() ? "'inputs.duration_seconds' is required"
                            : "Preset '" + preset.id() + "' v" + preset.version() + " makes no clip of " + duration + " seconds")
                            + "; allowed: " + String.join(", ", durationField.values()) + " (whole seconds).")
                    .with("field", "inputs." + DURATION_FIELD)
                    .with("allowed", durationField.values().stream().map(Integer::valueOf).toList());
        }
        JsonNode resolution = inputs.get(RESOLUTION_FIELD);
        if (resolution == null || !resolution.isTextual() || !resolutionField.values().contains(resolution.asText())) {
            throw ApiProblem.of(422, "invalid_resolution", (resolution == null || resolution.isNull()
                            ? "'inputs.resolution' is required"
                            : "Preset '" + preset.id() + "' v" + preset.version() + " has no resolution " + resolution)
                            + "; allowed: " + String.join(", ", resolutionField.values()) + ".")
                    .with("field", "inputs." + RESOLUTION_FIELD).with("allowed", resolutionField.values());
        }
        return new VideoOrder(duration.asInt(), resolution.asText(), preset.outputs());
    }

    /** The stored order of a job (its inputs as admitted), or null for other kinds. */
    public static VideoOrder stored(Preset preset, String inputsJson) {
        if (!KIND.equals(preset.kind())) {
            return null;
        }
        return of(preset, io.jobgate.common.Json.parseObject(inputsJson.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    /**
     * The resolution class a stored job ordered (its inputs as admitted), or null when it is not a
     * video job: the key into its adapter's size table ({@code size.<class>.<resolution>}).
     */
    public static String resolutionOf(String kind, String inputsJson) {
        if (!KIND.equals(kind) || inputsJson == null) {
            return null;
        }
        JsonNode value = io.jobgate.common.Json.parseObject(inputsJson.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .path(RESOLUTION_FIELD);
        return value.isTextual() ? value.asText() : null;
    }

    /** The whole seconds a stored video job ordered, or null when it is not a video job. */
    public static Integer durationOf(String kind, String inputsJson) {
        if (!KIND.equals(kind) || inputsJson == null) {
            return null;
        }
        JsonNode value = io.jobgate.common.Json.parseObject(inputsJson.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                .path(DURATION_FIELD);
        return value.isIntegralNumber() ? value.asInt() : null;
    }

    /** A video preset's declaration of its order, checked when the catalog loads. */
    static void verifyDeclared(Preset preset, String where) {
        InputField duration = preset.inputs().get(DURATION_FIELD);
        InputField resolution = preset.inputs().get(RESOLUTION_FIELD);
        if (duration == null || duration.type() != InputField.Type.INTEGER || !duration.required() || duration.values().isEmpty()) {
            throw new IllegalStateException(where + ": a video preset declares duration_seconds: {type: integer, values: [...], required: true}");
        }
        if (resolution == null || resolution.type() != InputField.Type.ENUM || !resolution.required()
                || !RESOLUTIONS.containsAll(resolution.values())) {
            throw new IllegalStateException(where + ": a video preset declares resolution: {type: enum, values: "
                    + RESOLUTIONS + " or some of them, required: true}");
        }
        if (preset.aspectClasses().isEmpty()) {
            throw new IllegalStateException(where + ": a video preset declares at least one aspect class");
        }
        for (String seconds : duration.values()) {
            if (Integer.parseInt(seconds) <= 0) {
                throw new IllegalStateException(where + ": duration_seconds values are positive whole seconds");
            }
        }
    }
}
