package io.jobgate.infra;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.blobstore.BlobStore;
import org.gaul.s3proxy.nio2blob.FilesystemNio2BlobStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * S3Proxy on the filesystem, in process and on loopback. The gateway reaches it through the AWS
 * SDK like any S3 or MinIO endpoint; the credentials are made per start since only we use it.
 */
public final class EmbeddedS3Server {

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedS3Server.class);

    private final S3Proxy proxy;
    private final BlobStore store;
    private final String accessKey;
    private final String secretKey;

    private EmbeddedS3Server(S3Proxy proxy, BlobStore store, String accessKey, String secretKey) {
        this.proxy = proxy;
        this.store = store;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
    }

    public static EmbeddedS3Server start(Path baseDir, int port) throws Exception {
        return start(baseDir, port, newAccessKey(), newSecretKey());
    }

    /** With credentials made beforehand, so a client can be built before the server listens. */
    public static EmbeddedS3Server start(Path baseDir, int port, String accessKey, String secretKey) throws Exception {
        Files.createDirectories(baseDir);
        BlobStore store = new FilesystemNio2BlobStore(baseDir.toString());
        S3Proxy proxy = S3Proxy.builder()
                .blobStore(store)
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, accessKey, secretKey)
                .build();
        long started = System.nanoTime();
        proxy.start(); // returns once Jetty listens
        LOG.info("Embedded S3 API (S3Proxy) on 127.0.0.1:{} with objects in {} ({} ms)", proxy.getPort(), baseDir,
                (System.nanoTime() - started) / 1_000_000);
        return new EmbeddedS3Server(proxy, store, accessKey, secretKey);
    }

    public static String newAccessKey() {
        return "jobgate-" + UUID.randomUUID().toString().substring(0, 8);
    }

    public static String newSecretKey() {
        return UUID.randomUUID().toString();
    }

    public String endpoint() {
        return "http://127.0.0.1:" + proxy.getPort();
    }

    /** The objects behind the server, for the gateway's own client to put into in process ({@link EmbeddedS3Client}). */
    BlobStore store() {
        return store;
    }

    public String accessKey() {
        return accessKey;
    }

    public String secretKey() {
        return secretKey;
    }

    public void stop() throws Exception {
        proxy.stop();
    }
}
