package io.jobgate.infra;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;

/** A put made in process reads back over HTTP exactly as one made over HTTP; a head or get in process sees what HTTP sees. */
class EmbeddedS3ClientTest {

    static EmbeddedS3Server server;
    static S3Client http;
    static S3Client inProcess;

    @BeforeAll
    static void start() throws Exception {
        server = EmbeddedS3Server.start(Files.createTempDirectory("jobgate-s3-client"), 0);
        http = ObjectStorage.client(server.endpoint(), "us-east-1", server.accessKey(), server.secretKey());
        inProcess = new EmbeddedS3Client(ObjectStorage.client(server.endpoint(), "us-east-1", server.accessKey(),
                server.secretKey()), CompletableFuture.completedFuture(server.store()));
        ObjectStorage.ensureBucket(http, "bkt");
    }

    @AfterAll
    static void stop() throws Exception {
        inProcess.close();
        http.close();
        server.stop();
    }

    @Test
    void putInProcessReadsBackLikeAPutOverHttp() {
        byte[] body = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        String inProcessETag = inProcess.putObject(r -> r.bucket("bkt").key("x/in-process.json").contentType("application/json")
                .contentLength((long) body.length), RequestBody.fromBytes(body)).eTag();
        String httpETag = http.putObject(r -> r.bucket("bkt").key("x/http.json").contentType("application/json")
                .contentLength((long) body.length), RequestBody.fromBytes(body)).eTag();

        assertThat(inProcessETag).isEqualTo(httpETag);
        HeadObjectResponse a = http.headObject(r -> r.bucket("bkt").key("x/in-process.json"));
        HeadObjectResponse b = http.headObject(r -> r.bucket("bkt").key("x/http.json"));
        assertThat(a.contentType()).isEqualTo(b.contentType()).isEqualTo("application/json");
        assertThat(a.contentLength()).isEqualTo(b.contentLength()).isEqualTo(body.length);
        assertThat(a.eTag()).isEqualTo(b.eTag());
        assertThat(http.getObjectAsBytes(r -> r.bucket("bkt").key("x/in-process.json")).asByteArray()).isEqualTo(body);
        // The other calls go over HTTP and see it.
        assertThat(inProcess.listObjectsV2(r -> r.bucket("bkt").prefix("x/")).contents()).hasSize(2);
    }

    @Test
    void aPutWithoutTypeOrLengthTakesTheBodys() {
        inProcess.putObject(r -> r.bucket("bkt").key("y/bytes"), RequestBody.fromBytes(new byte[] {1, 2, 3}));
        HeadObjectResponse head = http.headObject(r -> r.bucket("bkt").key("y/bytes"));
        assertThat(head.contentLength()).isEqualTo(3);
        assertThat(head.contentType()).isEqualTo("application/octet-stream");
    }

    @Test
    void aHeadOrGetInProcessAnswersAsOneOverHttp() {
        byte[] body = "a worker's output".getBytes(StandardCharsets.UTF_8);
        http.putObject(r -> r.bucket("bkt").key("z/over-http").contentType("image/png"), RequestBody.fromBytes(body));

        HeadObjectResponse overHttp = http.headObject(r -> r.bucket("bkt").key("z/over-http"));
        HeadObjectResponse here = inProcess.headObject(r -> r.bucket("bkt").key("z/over-http"));
        assertThat(here.eTag()).isEqualTo(overHttp.eTag());
        assertThat(here.contentLength()).isEqualTo(overHttp.contentLength()).isEqualTo(body.length);
        assertThat(here.contentType()).isEqualTo(overHttp.contentType()).isEqualTo("image/png");
        var got = inProcess.getObjectAsBytes(r -> r.bucket("bkt").key("z/over-http"));
        assertThat(got.asByteArray()).isEqualTo(body);
        assertThat(got.response().eTag()).isEqualTo(overHttp.eTag());
        assertThat(got.response().contentType()).isEqualTo("image/png");

        // A missing object: the same exception, with the same status, as over HTTP.
        for (S3Client client : java.util.List.of(http, inProcess)) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.headObject(r -> r.bucket("bkt").key("z/none")))
                    .isInstanceOf(software.amazon.awssdk.services.s3.model.NoSuchKeyException.class)
                    .extracting(e -> ((software.amazon.awssdk.services.s3.model.S3Exception) e).statusCode()).isEqualTo(404);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> client.getObjectAsBytes(r -> r.bucket("bkt").key("z/none")))
                    .isInstanceOf(software.amazon.awssdk.services.s3.model.NoSuchKeyException.class)
                    .extracting(e -> ((software.amazon.awssdk.services.s3.model.S3Exception) e).statusCode()).isEqualTo(404);
        }
        // A stream handed on (toInputStream) is read after the call returns, as over HTTP.
        try (var stream = inProcess.getObject(r -> r.bucket("bkt").key("z/over-http"))) {
            assertThat(stream.readAllBytes()).isEqualTo(body);
            assertThat(stream.response().contentLength()).isEqualTo(body.length);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        // A ranged get goes over HTTP, which judges the range.
        assertThat(inProcess.getObjectAsBytes(r -> r.bucket("bkt").key("z/over-http").range("bytes=0-0")).asByteArray())
                .isEqualTo(new byte[] {body[0]});
    }
}
