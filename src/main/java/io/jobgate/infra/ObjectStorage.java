package io.jobgate.infra;

import java.net.URI;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/** The S3 client (path-style to one endpoint) shared by camel-aws2-s3 and the gateway's beans. */
public final class ObjectStorage {

    private ObjectStorage() {
    }

    /**
     * The S3 API ready to use: the embedded server if it runs here (null for an external endpoint),
     * the client, the bucket ensured.
     */
    public record Started(EmbeddedS3Server server, S3Client client) {
        public void stop() throws Exception {
            client.close();
            if (server != null) {
                server.stop();
            }
        }
    }

    /** The client, usable at once, its objects' time-limited URLs, and what stands behind it starting in the background. */
    public record Starting(S3Client client, ObjectUrls urls, BackgroundStart<Started> started) {
    }

    /**
     * Starts the embedded S3 server unless {@code jobgate.s3.endpoint} is set, and ensures the
     * bucket, on a thread of its own (settings are read here, on the calling thread). The client is
     * built here, before the server listens: its endpoint is the server's once it does (a request
     * made earlier waits for it), so the beans holding it are wired meanwhile.
     */
    public static Starting startInBackground(Settings settings, Path objectsDir, int embeddedPort) {
        String endpoint = settings.optional("jobgate.s3.endpoint").orElse(null);
        String region = settings.required("jobgate.s3.region");
        String bucket = settings.required("jobgate.s3.bucket");
        String accessKey = settings.optional("jobgate.s3.access-key").orElse(endpoint == null ? EmbeddedS3Server.newAccessKey() : null);
        String secretKey = settings.optional("jobgate.s3.secret-key").orElse(endpoint == null ? EmbeddedS3Server.newSecretKey() : null);
        if (endpoint != null && (accessKey == null || secretKey == null)) {
            throw new IllegalStateException("jobgate.s3.access-key and jobgate.s3.secret-key are required with jobgate.s3.endpoint");
        }
        CompletableFuture<URI> serverEndpoint = endpoint != null ? CompletableFuture.completedFuture(URI.create(endpoint))
                : new CompletableFuture<>();
        // The embedded server's puts go into its store in process (EmbeddedS3Client); the rest over HTTP.
        CompletableFuture<org.gaul.s3proxy.blobstore.BlobStore> store = new CompletableFuture<>();
        S3Client http = client(serverEndpoint, endpoint == null || plainHttp(endpoint), region, accessKey, secretKey);
        S3Client client = endpoint != null ? http : new EmbeddedS3Client(http, store);
        BackgroundStart<Started> started = BackgroundStart.of("s3", () -> {
            EmbeddedS3Server server = null;
            try {
                if (endpoint == null) {
                    server = EmbeddedS3Server.start(objectsDir, embeddedPort, accessKey, secretKey);
                    store.complete(server.store());
                    serverEndpoint.complete(URI.create(server.endpoint()));
                }
                // Also the SDK's first request, a good part of its start-up cost: made here, beside
                // the wiring, it leaves camel-aws2-s3's own bucket check at route start a quick one.
                ensureBucket(client, bucket);
                return new Started(server, client);
            } catch (Exception | Error e) {
                serverEndpoint.completeExceptionally(e); // a request made meanwhile fails instead of waiting
                store.completeExceptionally(e);
                client.close();
                if (server != null) {
                    server.stop();
                }
                throw e;
            }
        });
        // Time-limited URLs name the endpoint callers outside reach, where that is another.
        CompletableFuture<URI> publicEndpoint = settings.optional("jobgate.s3.public-endpoint")
                .map(url -> CompletableFuture.completedFuture(URI.create(url))).orElse(serverEndpoint);
        return new Starting(client, new ObjectUrls(publicEndpoint, region, accessKey, secretKey), started);
    }

    /**
     * Path-style requests to {@code endpoint}, which is all the gateway asks of the S3 API. Two of the
     * SDK's defaults cost most of a small put's CPU and buy nothing here, so they are off: the
     * endpoint rules engine (run on every request to compute what this fixed endpoint already says)
     * and the flexible checksums (a CRC trailer and aws-chunked encoding on every put; the signature
     * already covers the payload's SHA-256 over HTTP, TLS covers it over HTTPS, and the gateway
     * records and checks each output's own digest).
     */
    public static S3Client client(String endpoint, String region, String accessKey, String secretKey) {
        return client(CompletableFuture.completedFuture(URI.create(endpoint)), plainHttp(endpoint), region, accessKey, secretKey);
    }

    /**
     * @param plainHttp the endpoint is {@code http://} (the embedded server's always is): the client is
     *                  then built without TLS, whose default context (the JDK's trust store parsed, ~550
     *                  classes) was a third of the client's build, on the start's critical path.
     */
    private static S3Client client(CompletableFuture<URI> endpoint, boolean plainHttp, String region, String accessKey, String secretKey) {
        var http = software.amazon.awssdk.http.apache.ApacheHttpClient.builder();
        if (plainHttp) {
            // Only the https scheme uses this factory; with an http endpoint no request does.
            http.socketFactory(org.apache.http.conn.socket.PlainConnectionSocketFactory.getSocketFactory());
        }
        return S3Client.builder()
                .httpClientBuilder(http)
                .endpointProvider(pathStyle(endpoint))
                .region(Region.of(region))
                .forcePathStyle(true)
                .requestChecksumCalculation(software.amazon.awssdk.core.checksums.RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(software.amazon.awssdk.core.checksums.ResponseChecksumValidation.WHEN_REQUIRED)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                .build();
    }

    static boolean plainHttp(String endpoint) {
        return URI.create(endpoint).getScheme().equalsIgnoreCase("http");
    }

    /** {@code base/bucket} for every request that names a bucket, {@code base} otherwise. */
    static software.amazon.awssdk.services.s3.endpoints.S3EndpointProvider pathStyle(CompletableFuture<URI> base) {
        return params -> base.thenApply(uri -> {
            String root = uri.toString().replaceAll("/+$", "");
            return software.amazon.awssdk.endpoints.Endpoint.builder()
                    .url(URI.create(params.bucket() == null ? root : root + "/" + params.bucket())).build();
        });
    }

    public static void ensureBucket(S3Client s3, String bucket) {
        try {
            s3.headBucket(b -> b.bucket(bucket));
        } catch (NoSuchBucketException e) {
            createBucket(s3, bucket);
        } catch (S3Exception e) {
            if (e.statusCode() != 404) {
                throw e;
            }
            createBucket(s3, bucket);
        }
    }

    /** Instances starting side by side race to create it: the one that loses finds it made, which is all it wanted. */
    private static void createBucket(S3Client s3, String bucket) {
        try {
            s3.createBucket(b -> b.bucket(bucket));
        } catch (software.amazon.awssdk.services.s3.model.BucketAlreadyOwnedByYouException e) {
            // created by another instance a moment ago
        }
    }
}
