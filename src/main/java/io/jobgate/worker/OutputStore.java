package io.jobgate.worker;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.function.BooleanSupplier;

import io.jobgate.api.Json;
import io.jobgate.infra.Digests;
import io.jobgate.output.Manifest;
import io.jobgate.output.OutputCheck;
import io.jobgate.output.OutputSubject;
import io.jobgate.preset.Preset;
import io.jobgate.preset.PresetCatalog;
import io.jobgate.upload.MediaTypes;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.MetadataDirective;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * A successful adapter's output (URL to fetch, base64 bytes or text) on its way to being readable:
 * quarantined, checked, promoted with its evaluation manifest. Nothing a provider returned is
 * readable before it was checked.
 */
public final class OutputStore {

    private final S3Client s3;
    private final String bucket;
    private final long maxBytes;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .connectTimeout(Duration.ofSeconds(10)).build();

    private final PresetCatalog presets;

    public OutputStore(S3Client s3, String bucket, long maxBytes, PresetCatalog presets) {
        this.presets = presets;
        this.s3 = s3;
        this.bucket = bucket;
        this.maxBytes = maxBytes;
    }

    /** An output that could not be fetched or is too big: the attempt fails with this category. */
    public static final class OutputUnavailable extends Exception {
        private final ErrorCategory category;

        OutputUnavailable(ErrorCategory category, String message) {
            super(message);
            this.category = category;
        }

        public ErrorCategory category() {
            return category;
        }
    }

    /**
     * The output's signal (a worker whose lease was lost, evidence for a job that ended meanwhile)
     * may no longer finish the job: nothing was promoted, the quarantine object is gone.
     */
    public static final class Superseded extends Exception {
        Superseded(String message) {
            super(message);
        }
    }

    private volatile java.util.function.Consumer<String> faults = step -> { };

    /** Test hook: a crash injected between the steps of storing an output. */
    public void injectFaults(java.util.function.Consumer<String> point) {
        this.faults = point;
    }

    /**
     * Quarantine, check, promote. The output is written under
     * {@code quarantine/<job>/<attempt>/output-<store id>} (its own key per call: a webhook and the
     * poller may store the same task's output at once), checked (media type by magic bytes, pixel
     * size of the aspect class, byte cap), then, only while {@code stillOurs} holds, copied to
     * {@code outputs/<tenant>/<job>/output.<ext>} with its manifest beside it, and the quarantine
     * object deleted. A refused output stays in quarantine, never readable.
     *
     * @param stillOurs asked right before promotion: may this signal still finish the job? (A stale
     *                  worker must not overwrite the output of the attempt that replaced it.)
     * @return the result record stored with the job (JSON)
     */
    public String store(OutputSubject job, AdapterResult result, Duration deadline, BooleanSupplier stillOurs)
            throws OutputUnavailable, Superseded {
        Preset preset = presets.resolve(job.presetId(), job.presetVersion());
        Preset.AspectSize size = PresetCatalog.aspect(preset, job.aspectClass());
        byte[] bytes;
        if (result.outputText() != null) {
            bytes = result.outputText().getBytes(StandardCharsets.UTF_8);
        } else if (result.outputBase64() != null) {
            try {
                bytes = Base64.getMimeDecoder().decode(result.outputBase64());
            } catch (IllegalArgumentException e) {
                throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output is not valid base64");
            }
        } else {
            bytes = fetch(result.outputUrl(), deadline);
        }
        if (bytes.length > maxBytes) {
            throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, "output of " + bytes.length + " bytes exceeds " + maxBytes);
        }
        String quarantineKey = "quarantine/" + job.jobId() + "/" + job.attempt() + "/output-"
                + UUID.randomUUID().toString().substring(0, 8);
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(quarantineKey).contentType("application/octet-stream")
                .build(), RequestBody.fromBytes(bytes));
        faults.accept("quarantined");
        OutputCheck.Checked checked;
        try {
            checked = OutputCheck.check(bytes, preset, size);
        } catch (OutputCheck.Refused refused) {
            throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, refused.getMessage() + " (kept at " + quarantineKey + ")");
        }
        if (!stillOurs.getAsBoolean()) {
            s3.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(quarantineKey).build());
            throw new Superseded("job " + job.jobId() + " moved on before its output was promoted");
        }
        String sha256 = Digests.sha256Hex(bytes);
        String prefix = "outputs/" + job.tenantId() + "/" + job.jobId() + "/";
        String outputKey = prefix + "output" + MediaTypes.extension(checked.mediaType());
        String manifestKey = prefix + "manifest.json";
        s3.copyObject(CopyObjectRequest.builder().sourceBucket(bucket).sourceKey(quarantineKey).destinationBucket(bucket)
                .destinationKey(outputKey).contentType(checked.mediaType()).metadataDirective(MetadataDirective.REPLACE).build());
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(manifestKey).contentType("application/json").build(),
                RequestBody.fromString(Json.write(Manifest.of(job, checked, sha256, outputKey))));
        faults.accept("promoted");
        s3.deleteObject(DeleteObjectRequest.builder().bucket(bucket).key(quarantineKey).build());
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("output_key", outputKey);
        record.put("manifest_key", manifestKey);
        record.put("media_type", checked.mediaType());
        record.put("width", checked.width());
        record.put("height", checked.height());
        record.put("bytes", bytes.length);
        record.put("sha256", sha256);
        record.put("adapter", job.adapter());
        record.put("adapter_revision", job.revision());
        record.put("attempt", job.attempt());
        return Json.write(record);
    }

    private byte[] fetch(String url, Duration deadline) throws OutputUnavailable {
        try {
            HttpResponse<InputStream> reply = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(deadline).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = reply.body()) {
                if (reply.statusCode() / 100 != 2) {
                    throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download answered HTTP " + reply.statusCode());
                }
                byte[] bytes = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + 1));
                if (bytes.length > maxBytes) {
                    throw new OutputUnavailable(ErrorCategory.INVALID_OUTPUT, "output exceeds " + maxBytes + " bytes");
                }
                return bytes;
            }
        } catch (IllegalArgumentException e) {
            throw new OutputUnavailable(ErrorCategory.UNPARSEABLE_RESPONSE, "output URL is not a URL");
        } catch (IOException e) {
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download failed: " + e.getClass().getSimpleName());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new OutputUnavailable(ErrorCategory.TRANSIENT, "output download interrupted");
        }
    }
}
