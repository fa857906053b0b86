package io.jobgate.infra;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CompletableFuture;

import org.gaul.s3proxy.blobstore.BlobStore;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.DelegatingS3Client;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;

/**
 * The client of the embedded S3 server: a plain put goes straight into the server's object store, in
 * process (as the embedded broker is reached over {@code vm://}); every other call, and a put with a
 * condition the store does not judge itself, goes over HTTP like to any S3 (the SDK's
 * {@link DelegatingS3Client} forwards them). The same store answers both, so a put made here reads
 * back over HTTP as one made there. Why: a drained image job makes two puts (its output and
 * manifest), and the SDK's request pipeline (marshalling, signing, the HTTP client) with the server's
 * (Jetty, the signature check, header parsing) cost a gateway that runs both ends ~40 % of its CPU per
 * job; the store's own work (a file, its attributes, a rename) stays.
 */
final class EmbeddedS3Client extends DelegatingS3Client {

    private final S3Client http;
    private final CompletableFuture<BlobStore> store;

    /** @param store the embedded server's store, once it runs (a put made earlier waits for it) */
    EmbeddedS3Client(S3Client http, CompletableFuture<BlobStore> store) {
        super(http);
        this.http = http;
        this.store = store;
    }

    @Override
    public PutObjectResponse putObject(PutObjectRequest request, RequestBody body) {
        // If-Match and flexible checksums are judged by the server's HTTP layer, not by the store.
        if (request.ifMatch() != null || request.checksumAlgorithm() != null) {
            return http.putObject(request, body);
        }
        PutObjectRequest.Builder put = request.toBuilder();
        if (request.contentLength() == null) {
            body.optionalContentLength().ifPresent(put::contentLength);
        }
        if (request.contentType() == null) {
            put.contentType(body.contentType()); // what the SDK would send as Content-Type
        }
        try (InputStream in = body.contentStreamProvider().newStream()) {
            PutObjectResponse done = store.join().putBlob(put.build(), in);
            // Over HTTP the ETag arrives quoted.
            return done.eTag() == null || done.eTag().startsWith("\"") ? done
                    : done.toBuilder().eTag('"' + done.eTag() + '"').build();
        } catch (IOException e) {
            throw SdkClientException.create("put of " + request.key() + " failed", e);
        }
    }
}
