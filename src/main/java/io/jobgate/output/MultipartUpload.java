package io.jobgate.output;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedMultipartUpload;
import software.amazon.awssdk.services.s3.model.CompletedPart;

/**
 * An S3 object written as a stream: parts of {@link #PART_BYTES} are uploaded as they fill (S3
 * multipart upload), so at most one part is in memory whatever the object's size. {@link #close()}
 * completes the upload; {@link #abort()} discards the parts of one that failed.
 */
final class MultipartUpload extends OutputStream {

    /** 8 MiB: above S3's 5 MiB minimum part size, small beside the heap. */
    static final int PART_BYTES = 8 * 1024 * 1024;

    private final S3Client s3;
    private final String bucket;
    private final String key;
    private final String uploadId;
    private final byte[] part = new byte[PART_BYTES];
    private final List<CompletedPart> done = new ArrayList<>();
    private int filled;
    private boolean closed;

    MultipartUpload(S3Client s3, String bucket, String key, String contentType) {
        this.s3 = s3;
        this.bucket = bucket;
        this.key = key;
        this.uploadId = s3.createMultipartUpload(b -> b.bucket(bucket).key(key).contentType(contentType)).uploadId();
    }

    @Override
    public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        while (len > 0) {
            int n = Math.min(len, part.length - filled);
            System.arraycopy(b, off, part, filled, n);
            filled += n;
            off += n;
            len -= n;
            if (filled == part.length) {
                flushPart();
            }
        }
    }

    private void flushPart() {
        int number = done.size() + 1;
        String etag = s3.uploadPart(b -> b.bucket(bucket).key(key).uploadId(uploadId).partNumber(number)
                .contentLength((long) filled), RequestBody.fromInputStream(new java.io.ByteArrayInputStream(part, 0, filled), filled)).eTag();
        done.add(CompletedPart.builder().partNumber(number).eTag(etag).build());
        filled = 0;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (filled > 0 || done.isEmpty()) {
            flushPart(); // the last part may be short (or empty, for an empty object)
        }
        s3.completeMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(uploadId)
                .multipartUpload(CompletedMultipartUpload.builder().parts(done).build()));
    }

    /** Discards the parts uploaded so far (a failed download or an output over the cap). */
    void abort() {
        if (!closed) {
            closed = true;
            s3.abortMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(uploadId));
        }
    }
}
