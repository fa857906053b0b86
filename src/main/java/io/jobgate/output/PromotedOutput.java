package io.jobgate.output;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import io.jobgate.common.Json;

/**
 * What a promoted output is, as the job's result records it and as the output object itself carries it
 * (S3 user metadata, written by the same put or copy that makes it readable). The object's own record is
 * for one moment: a worker killed after the output became readable and before its manifest was written
 * left an output that says which attempt it answers and what the checks found, so the sweeper can
 * succeed the job with it (and write the manifest) instead of throwing away an answer the provider billed.
 *
 * @param checked what the checks found (media type, pixel size, a video's duration)
 * @param bytes   the object's length
 */
public record PromotedOutput(String outputKey, String manifestKey, OutputCheck.Checked checked, long bytes, String sha256,
                             String adapter, String revision, int attempt) {

    /** User metadata names (S3 lower-cases them; the prefix x-amz-meta- is the protocol's, not part of the name). */
    static final String ATTEMPT = "jobgate-attempt";
    static final String MEDIA_TYPE = "jobgate-media-type";
    static final String WIDTH = "jobgate-width";
    static final String HEIGHT = "jobgate-height";
    static final String DURATION_MS = "jobgate-duration-ms";
    static final String SHA256 = "jobgate-sha256";

    /** The job's result: what the worker records, what the API's output read and the ledger go by. */
    public String resultJson() {
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("output_key", outputKey);
        record.put("manifest_key", manifestKey);
        record.put("media_type", checked.mediaType());
        record.put("width", checked.width()); // none for JSON or text
        record.put("height", checked.height());
        if (checked.durationMillis() != null) {
            record.put("duration_ms", checked.durationMillis());
        }
        record.put("bytes", bytes);
        record.put("sha256", sha256);
        record.put("adapter", adapter);
        record.put("adapter_revision", revision);
        record.put("attempt", attempt);
        return Json.write(record);
    }

    /**
     * The record as the output object's user metadata (the media type the checks found, whatever the object's
     * Content-Type): ASCII only and far below S3's 2 KB. The adapter and its revision are left out: a revision's
     * label is free text from the settings, and the job's row names both for the attempt that holds it.
     */
    public Map<String, String> metadata() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put(ATTEMPT, Integer.toString(attempt));
        m.put(MEDIA_TYPE, checked.mediaType());
        m.put(SHA256, sha256);
        if (checked.width() != null) {
            m.put(WIDTH, checked.width().toString());
            m.put(HEIGHT, checked.height().toString());
        }
        if (checked.durationMillis() != null) {
            m.put(DURATION_MS, checked.durationMillis().toString());
        }
        return m;
    }

    /**
     * The record an output object carries, read back ({@code length} from its head; {@code adapter} and
     * {@code revision} from the job's row); empty for an object without one (written before this release, or not
     * by a promotion). Names are matched in any case: some S3 servers return them capitalised.
     */
    public static Optional<PromotedOutput> fromMetadata(String outputKey, String manifestKey, long length, Map<String, String> metadata,
                                                        String adapter, String revision) {
        Map<String, String> m = new java.util.TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        m.putAll(metadata);
        String attempt = m.get(ATTEMPT);
        String sha256 = m.get(SHA256);
        String mediaType = m.get(MEDIA_TYPE);
        if (attempt == null || sha256 == null || mediaType == null || adapter == null || revision == null) {
            return Optional.empty();
        }
        try {
            OutputCheck.Checked checked = new OutputCheck.Checked(mediaType, integer(m.get(WIDTH)), integer(m.get(HEIGHT)),
                    m.containsKey(DURATION_MS) ? Long.valueOf(m.get(DURATION_MS)) : null);
            return Optional.of(new PromotedOutput(outputKey, manifestKey, checked, length, sha256, adapter, revision,
                    Integer.parseInt(attempt)));
        } catch (NumberFormatException e) {
            return Optional.empty(); // not a record this release wrote
        }
    }

    private static Integer integer(String value) {
        return value == null ? null : Integer.valueOf(value);
    }
}
