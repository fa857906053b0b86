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

import io.jobgate.api.Json;
import io.jobgate.infra.Digests;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;

/**
 * Takes a successful adapter's output (URL to fetch, base64 bytes or text) and writes it under the
 * attempt's quarantine key, so nothing a provider returned is readable before it was checked.
 */
public final class OutputStore {

    private final S3Client s3;
    private final String bucket;
    private final long maxBytes;
    private final HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL)
            .connectTimeout(Duration.ofSeconds(10)).build();

    public OutputStore(S3Client s3, String bucket, long maxBytes) {
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

    /** @return the result record stored with the job (JSON) */
    public String quarantine(UUID jobId, int attempt, AdapterResult result, String expectedMediaType, Duration deadline)
            throws OutputUnavailable {
        byte[] bytes;
        String mediaType = result.outputMediaType() != null ? result.outputMediaType() : expectedMediaType;
        if (result.outputText() != null) {
            bytes = result.outputText().getBytes(StandardCharsets.UTF_8);
            mediaType = result.outputMediaType() != null ? result.outputMediaType() : "text/plain; charset=utf-8";
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
        String key = "quarantine/" + jobId + "/" + attempt + "/output";
        s3.putObject(PutObjectRequest.builder().bucket(bucket).key(key).contentType(mediaType).build(),
                RequestBody.fromBytes(bytes));
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("quarantine_key", key);
        record.put("media_type", mediaType);
        record.put("bytes", bytes.length);
        record.put("sha256", Digests.sha256Hex(bytes));
        record.put("attempt", attempt);
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
