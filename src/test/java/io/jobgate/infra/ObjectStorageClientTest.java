package io.jobgate.infra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/** The client is built without TLS only for an http endpoint, and works against the S3 server either way it is built. */
class ObjectStorageClientTest {

    @Test
    void onlyAnHttpEndpointSkipsTls() {
        assertTrue(ObjectStorage.plainHttp("http://127.0.0.1:9000"));
        assertTrue(ObjectStorage.plainHttp("HTTP://minio:9000/"));
        assertFalse(ObjectStorage.plainHttp("https://s3.eu-west-1.amazonaws.com"));
    }

    @Test
    void aPlainHttpClientPutsAndReadsBack(@TempDir Path dir) throws Exception {
        String key = EmbeddedS3Server.newAccessKey();
        String secret = EmbeddedS3Server.newSecretKey();
        EmbeddedS3Server server = EmbeddedS3Server.start(Files.createDirectories(dir.resolve("objects")), 0, key, secret);
        try (S3Client s3 = ObjectStorage.client(server.endpoint(), "us-east-1", key, secret)) {
            ObjectStorage.ensureBucket(s3, "plain");
            s3.putObject(b -> b.bucket("plain").key("a.txt"), RequestBody.fromString("hello"));
            assertEquals("hello", s3.getObjectAsBytes(b -> b.bucket("plain").key("a.txt")).asUtf8String());
        } finally {
            server.stop();
        }
    }

    @Test
    void anHttpsEndpointKeepsTls(@TempDir Path dir) throws Exception {
        // The S3 server speaks plain HTTP: over TLS the handshake fails; were https built with plain
        // sockets, the request would go through.
        String key = EmbeddedS3Server.newAccessKey();
        String secret = EmbeddedS3Server.newSecretKey();
        EmbeddedS3Server server = EmbeddedS3Server.start(Files.createDirectories(dir.resolve("objects")), 0, key, secret);
        try (S3Client s3 = ObjectStorage.client(server.endpoint().replace("http://", "https://"), "us-east-1", key, secret)) {
            SdkClientException failed = assertThrows(SdkClientException.class, () -> s3.listBuckets());
            assertTrue(causes(failed).anyMatch(javax.net.ssl.SSLException.class::isInstance), failed::toString);
        } finally {
            server.stop();
        }
    }

    private static java.util.stream.Stream<Throwable> causes(Throwable t) {
        return java.util.stream.Stream.iterate(t, java.util.Objects::nonNull, Throwable::getCause);
    }
}
