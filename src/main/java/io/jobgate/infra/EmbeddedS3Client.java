package io.jobgate.infra;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CompletableFuture;

import org.gaul.s3proxy.blobstore.BlobStore;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.http.AbortableInputStream;
import software.amazon.awssdk.services.s3.DelegatingS3Client;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;

/**
 * The client of the embedded S3 server: a plain put, head or get goes straight to the server's object store, in
 * process (as the embedded broker is reached over {@code vm://}); every other call, and one with a condition or a
 * range the store does not judge itself, goes over HTTP like to any S3 (the SDK's {@link DelegatingS3Client} forwards
 * them). The same store answers both, so an object put here reads back over HTTP as one put there, and the other way.
 * Why: a drained image job makes two puts (its output and manifest), and the SDK's request pipeline (marshalling,
 * signing, the HTTP client) with the server's (Jetty, the signature check, header parsing) cost a gateway that runs
 * both ends ~40 % of its CPU per job; an external worker's output is found and read once more (docs/workers.md). The
 * store's own work (a file, its attributes, a rename) stays.
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

    @Override
    public HeadObjectResponse headObject(HeadObjectRequest request) {
        if (!plain(request.ifMatch(), request.ifNoneMatch(), request.ifModifiedSince(), request.ifUnmodifiedSince(), request.range(),
                request.versionId(), request.partNumber(), request.sseCustomerKey(), request.checksumModeAsString())) {
            return http.headObject(request);
        }
        HeadObjectResponse found = store.join().blobMetadataIfPresent(request);
        if (found == null) {
            // As the SDK reports a 404 on a head (which has no body to name the error).
            throw (NoSuchKeyException) NoSuchKeyException.builder().statusCode(404)
                    .message("no object " + request.key() + " in " + request.bucket()).build();
        }
        return quotedETag(found);
    }

    @Override
    public <T> T getObject(GetObjectRequest request, ResponseTransformer<GetObjectResponse, T> transformer) {
        if (!plain(request.ifMatch(), request.ifNoneMatch(), request.ifModifiedSince(), request.ifUnmodifiedSince(), request.range(),
                request.versionId(), request.partNumber(), request.sseCustomerKey(), request.checksumModeAsString(),
                request.responseContentType(), request.responseContentDisposition(), request.responseCacheControl(),
                request.responseContentEncoding(), request.responseContentLanguage(), request.responseExpires())) {
            return http.getObject(request, transformer);
        }
        ResponseInputStream<GetObjectResponse> in = store.join().getBlob(request);
        // As the SDK does: the stream is closed once transformed, unless the transformer hands it on (toInputStream:
        // its reader closes it).
        boolean handedOn = transformer.needsConnectionLeftOpen();
        try {
            GetObjectResponse response = in.response();
            if (response.eTag() != null && !response.eTag().startsWith("\"")) {
                response = response.toBuilder().eTag('"' + response.eTag() + '"').build();
            }
            return transformer.transform(response, AbortableInputStream.create(in));
        } catch (RuntimeException e) {
            handedOn = false;
            throw e;
        } catch (Exception e) {
            handedOn = false;
            throw SdkClientException.create("get of " + request.key() + " failed", e);
        } finally {
            if (!handedOn) {
                try {
                    in.close();
                } catch (IOException e) {
                    // read to its end or failed: nothing more to release
                }
            }
        }
    }

    /** Whether a call names none of these (conditions, ranges, versions, keys of the caller's): the store answers it itself. */
    private static boolean plain(Object... options) {
        for (Object option : options) {
            if (option != null) {
                return false;
            }
        }
        return true;
    }

    private static HeadObjectResponse quotedETag(HeadObjectResponse found) {
        return found.eTag() == null || found.eTag().startsWith("\"") ? found : found.toBuilder().eTag('"' + found.eTag() + '"').build();
    }
}
