package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.Map;

import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

import io.jobgate.common.Digests;
import io.jobgate.job.JobIds;
import io.jobgate.tenant.Tenant;
import io.jobgate.upload.AudioDuration;
import io.jobgate.upload.MediaTypes;
import io.jobgate.upload.Upload;
import io.jobgate.upload.UploadStore;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * HTTP glue of the uploads resource. {@link #inspect} checks the bytes (cap, real type by magic
 * bytes) and names the immutable object key by digest; {@link #record} writes the upload row and
 * stores the object under the row's lock (so uploads retention cannot remove it in between), then
 * answers.
 */
public final class UploadsApi {

    /** Exchange property carrying the checked upload between the route's steps. */
    static final String UPLOAD = "jobgate.upload";
    /** Object key prefix of sources; the digest makes the key immutable and deduplicates bytes. */
    public static final String SOURCE_PREFIX = "sources/sha256/";

    private final UploadStore store;
    private final Clock clock;
    private final long maxBytes;
    private final S3Client s3;
    private final String bucket;

    public UploadsApi(UploadStore store, Clock clock, long maxBytes, S3Client s3, String bucket) {
        this.store = store;
        this.clock = clock;
        this.maxBytes = maxBytes;
        this.s3 = s3;
        this.bucket = bucket;
    }

    public void inspect(Exchange exchange) {
        Tenant tenant = TenantAuth.tenant(exchange);
        Message in = exchange.getIn();
        Long declaredLength = in.getHeader("Content-Length", Long.class);
        if (declaredLength != null && declaredLength > maxBytes) {
            throw tooLarge();
        }
        String declared = MediaTypes.normalize(in.getHeader(Exchange.CONTENT_TYPE, String.class));
        if (!MediaTypes.SUPPORTED.contains(declared)) {
            throw ApiProblem.of(415, "unsupported_media_type", "Content-Type '" + declared + "' is not accepted; send one of "
                    + String.join(", ", MediaTypes.SUPPORTED) + ".").with("supported", MediaTypes.SUPPORTED);
        }
        byte[] bytes = in.getBody(byte[].class);
        if (bytes == null || bytes.length == 0) {
            throw ApiProblem.of(400, "empty_upload", "The upload has no bytes.");
        }
        if (bytes.length > maxBytes) {
            throw tooLarge();
        }
        String actual = MediaTypes.sniff(bytes).orElse("unknown");
        if (!actual.equals(declared)) {
            throw ApiProblem.of(415, "media_type_mismatch", "The bytes are " + actual + ", not the declared " + declared + ".")
                    .with("declared", declared).with("detected", actual);
        }
        String sha256 = Digests.sha256Hex(bytes);
        Upload upload = new Upload(JobIds.next(clock), tenant.id(), sha256, bytes.length, declared, SOURCE_PREFIX + sha256,
                AudioDuration.millis(declared, bytes), clock.instant(), false);
        exchange.setProperty(UPLOAD, upload);
        Message out = exchange.getMessage();
        out.removeHeaders("*");
        out.setBody(bytes);
    }

    public void record(Exchange exchange) {
        Upload checked = exchange.getProperty(UPLOAD, Upload.class);
        byte[] bytes = exchange.getMessage().getBody(byte[].class);
        // The bytes are stored under the record's lock (see UploadStore#save): never removed by
        // retention between the two. The same key and bytes again are a harmless overwrite.
        UploadStore.Stored stored = store.save(checked, () -> s3.putObject(b -> b.bucket(bucket).key(checked.objectKey())
                .contentType(checked.mediaType()).contentLength((long) bytes.length), RequestBody.fromBytes(bytes)));
        Upload u = stored.upload();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("upload_id", u.id().toString());
        body.put("sha256", u.sha256());
        body.put("bytes", u.bytes());
        body.put("media_type", u.mediaType());
        body.put("duration_ms", u.durationMillis());
        body.put("created_at", u.createdAt().toString());
        HttpReply.json(exchange, stored.created() ? 201 : 200, body, Map.of());
    }

    private ApiProblem tooLarge() {
        return ApiProblem.of(413, "upload_too_large", "An upload is at most " + maxBytes + " bytes.")
                .with("max_bytes", maxBytes);
    }
}
