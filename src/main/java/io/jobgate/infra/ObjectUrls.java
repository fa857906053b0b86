package io.jobgate.infra;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * Time-limited URLs of single objects (S3 presigned, signature V4, path style): who holds one may read, or write, that
 * one key until it expires, and nothing else, without the gateway's credentials and without the gateway on the way.
 * External workers read their source and write their output with them (docs/workers.md).
 *
 * <p>They name {@code jobgate.s3.public-endpoint} when set (where callers outside reach the S3 API; the signature
 * covers the host, so it must be the one they connect to), else the gateway's own endpoint. Signing is local (an
 * HMAC), no request; the presigner is built at its first use, once the embedded server's port is known.
 */
public final class ObjectUrls {

    private final CompletableFuture<URI> endpoint;
    private final String region;
    private final String accessKey;
    private final String secretKey;
    private volatile S3Presigner presigner;

    ObjectUrls(CompletableFuture<URI> endpoint, String region, String accessKey, String secretKey) {
        this.endpoint = endpoint;
        this.region = region;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
    }

    /** A URL that reads {@code key} of {@code bucket} for {@code valid}. */
    public URI get(String bucket, String key, Duration valid) {
        return URI.create(presigner().presignGetObject(r -> r.signatureDuration(valid)
                .getObjectRequest(GetObjectRequest.builder().bucket(bucket).key(key).build())).url().toString());
    }

    /** A URL that writes {@code key} of {@code bucket} (any media type: the caller's Content-Type is stored) for {@code valid}. */
    public URI put(String bucket, String key, Duration valid) {
        return URI.create(presigner().presignPutObject(r -> r.signatureDuration(valid)
                .putObjectRequest(PutObjectRequest.builder().bucket(bucket).key(key).build())).url().toString());
    }

    private S3Presigner presigner() {
        S3Presigner p = presigner;
        if (p == null) {
            synchronized (this) {
                if (presigner == null) {
                    presigner = S3Presigner.builder().endpointOverride(endpoint.join()).region(Region.of(region))
                            .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                            .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                            .build();
                }
                p = presigner;
            }
        }
        return p;
    }
}
