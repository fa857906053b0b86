package io.jobgate.infra;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CompletableFuture;

import org.gaul.s3proxy.blobstore.BlobStore;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ServiceClientConfiguration;
import software.amazon.awssdk.services.s3.model.AbortMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.AbortMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CopyObjectRequest;
import software.amazon.awssdk.services.s3.model.CopyObjectResponse;
import software.amazon.awssdk.services.s3.model.CreateBucketRequest;
import software.amazon.awssdk.services.s3.model.CreateBucketResponse;
import software.amazon.awssdk.services.s3.model.CreateMultipartUploadRequest;
import software.amazon.awssdk.services.s3.model.CreateMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.DeleteObjectRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectResponse;
import software.amazon.awssdk.services.s3.model.DeleteObjectsRequest;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadBucketRequest;
import software.amazon.awssdk.services.s3.model.HeadBucketResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectRequest;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListBucketsRequest;
import software.amazon.awssdk.services.s3.model.ListBucketsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsRequest;
import software.amazon.awssdk.services.s3.model.ListObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.UploadPartRequest;
import software.amazon.awssdk.services.s3.model.UploadPartResponse;

/**
 * The client of the embedded S3 server: a plain put goes straight into the server's object store, in
 * process (as the embedded broker is reached over {@code vm://}); every other call, and a put with a
 * condition the store does not judge itself, goes over HTTP like to any S3. The same store answers
 * both, so a put made here reads back over HTTP as one made there. Why: a drained image job makes two
 * puts (its output and manifest), and the SDK's request pipeline (marshalling, signing, the HTTP
 * client) with the server's (Jetty, the signature check, header parsing) cost a gateway that runs
 * both ends ~40 % of its CPU per job; the store's own work (a file, its attributes, a rename) stays.
 * Offers the operations the gateway and camel-aws2-s3's producer use; others are refused.
 */
final class EmbeddedS3Client implements S3Client {

    private final S3Client http;
    private final CompletableFuture<BlobStore> store;

    /** @param store the embedded server's store, once it runs (a put made earlier waits for it) */
    EmbeddedS3Client(S3Client http, CompletableFuture<BlobStore> store) {
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
    public CopyObjectResponse copyObject(CopyObjectRequest request) {
        return http.copyObject(request);
    }

    @Override
    public DeleteObjectResponse deleteObject(DeleteObjectRequest request) {
        return http.deleteObject(request);
    }

    @Override
    public DeleteObjectsResponse deleteObjects(DeleteObjectsRequest request) {
        return http.deleteObjects(request);
    }

    @Override
    public <T> T getObject(GetObjectRequest request, ResponseTransformer<GetObjectResponse, T> transformer) {
        return http.getObject(request, transformer);
    }

    @Override
    public ResponseInputStream<GetObjectResponse> getObject(GetObjectRequest request) {
        return http.getObject(request);
    }

    @Override
    public HeadObjectResponse headObject(HeadObjectRequest request) {
        return http.headObject(request);
    }

    @Override
    public HeadBucketResponse headBucket(HeadBucketRequest request) {
        return http.headBucket(request);
    }

    @Override
    public CreateBucketResponse createBucket(CreateBucketRequest request) {
        return http.createBucket(request);
    }

    @Override
    public ListBucketsResponse listBuckets(ListBucketsRequest request) {
        return http.listBuckets(request);
    }

    @Override
    public ListObjectsResponse listObjects(ListObjectsRequest request) {
        return http.listObjects(request);
    }

    @Override
    public ListObjectsV2Response listObjectsV2(ListObjectsV2Request request) {
        return http.listObjectsV2(request);
    }

    @Override
    public CreateMultipartUploadResponse createMultipartUpload(CreateMultipartUploadRequest request) {
        return http.createMultipartUpload(request);
    }

    @Override
    public UploadPartResponse uploadPart(UploadPartRequest request, RequestBody body) {
        return http.uploadPart(request, body);
    }

    @Override
    public CompleteMultipartUploadResponse completeMultipartUpload(CompleteMultipartUploadRequest request) {
        return http.completeMultipartUpload(request);
    }

    @Override
    public AbortMultipartUploadResponse abortMultipartUpload(AbortMultipartUploadRequest request) {
        return http.abortMultipartUpload(request);
    }

    @Override
    public S3ServiceClientConfiguration serviceClientConfiguration() {
        return http.serviceClientConfiguration();
    }

    @Override
    public String serviceName() {
        return http.serviceName();
    }

    @Override
    public void close() {
        http.close();
    }
}
