package io.jobgate.ops;


import org.apache.camel.health.HealthCheckResultBuilder;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Readiness of the object store: the bucket answers a HEAD. Without it uploads and outputs cannot be
 * stored; a readiness check only (restarting this process would not fix the store).
 */
public final class ObjectStorageHealthCheck extends BackgroundHealthCheck {

    private final S3Client s3;
    private final String bucket;

    public ObjectStorageHealthCheck(S3Client s3, String bucket) {
        super("jobgate", "object-store");
        this.s3 = s3;
        this.bucket = bucket;
    }

    @Override
    public boolean isLiveness() {
        return false;
    }

    @Override
    protected void probe(HealthCheckResultBuilder builder) {
        try {
            s3.headBucket(b -> b.bucket(bucket));
            builder.detail("bucket", bucket).up();
        } catch (Exception e) {
            builder.detail("bucket", bucket).message("bucket " + bucket + " does not answer: " + e.getMessage()).error(e).down();
        }
    }
}
