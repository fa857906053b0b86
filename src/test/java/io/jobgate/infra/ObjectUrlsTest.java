package io.jobgate.infra;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The gateway's presigned URLs are the SDK presigner's, signature for signature (same instant, same inputs), and the
 * S3 API server takes them: a GET URL reads its key, a PUT URL writes it, and neither opens another key or outlives
 * its time.
 */
class ObjectUrlsTest {

    static EmbeddedS3Server server;
    static S3Client http;

    @BeforeAll
    static void start() throws Exception {
        server = EmbeddedS3Server.start(Files.createTempDirectory("jobgate-object-urls"), 0);
        http = ObjectStorage.client(server.endpoint(), "us-east-1", server.accessKey(), server.secretKey());
        ObjectStorage.ensureBucket(http, "bkt");
    }

    @AfterAll
    static void stop() throws Exception {
        http.close();
        server.stop();
    }

    @Test
    void eachUrlIsTheSdkPresignersAtTheSameInstant() {
        URI endpoint = URI.create("http://127.0.0.1:9000");
        try (S3Presigner sdk = S3Presigner.builder().endpointOverride(endpoint).region(Region.of("eu-central-1"))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("AKID", "secret/key+1")))
                .build()) {
            for (String key : new String[] {"worker-outputs/3f2a/1", "uploads/a b+c/é~ü.wav", "x/y=z&w"}) {
                URI theirsGet = URI.create(sdk.presignGetObject(r -> r.signatureDuration(Duration.ofSeconds(90))
                        .getObjectRequest(g -> g.bucket("jobgate").key(key))).url().toString());
                assertThat(ours(endpoint, theirsGet, "GET", key, Duration.ofSeconds(90))).isEqualTo(theirsGet);
                URI theirsPut = URI.create(sdk.presignPutObject(r -> r.signatureDuration(Duration.ofMinutes(10))
                        .putObjectRequest(p -> p.bucket("jobgate").key(key))).url().toString());
                assertThat(ours(endpoint, theirsPut, "PUT", key, Duration.ofMinutes(10))).isEqualTo(theirsPut);
            }
        }
    }

    /** Ours, made at the instant the SDK's URL was signed, with its query in the SDK's order. */
    private static URI ours(URI endpoint, URI theirs, String method, String key, Duration valid) {
        Instant signedAt = java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC)
                .parse(query(theirs).get("X-Amz-Date"), Instant::from);
        ObjectUrls urls = new ObjectUrls(CompletableFuture.completedFuture(endpoint), "eu-central-1", "AKID", "secret/key+1",
                Clock.fixed(signedAt, ZoneOffset.UTC));
        URI made = method.equals("GET") ? urls.get("jobgate", key, valid) : urls.put("jobgate", key, valid);
        assertThat(made.getRawPath()).isEqualTo(theirs.getRawPath());
        assertThat(query(made)).isEqualTo(query(theirs));
        return theirs; // equal in all that is signed and sent; the order of query parameters is free
    }

    private static Map<String, String> query(URI uri) {
        Map<String, String> query = new LinkedHashMap<>();
        for (String pair : uri.getRawQuery().split("&")) {
            String[] kv = pair.split("=", 2);
            query.put(kv[0], kv[1]);
        }
        return new java.util.TreeMap<>(query);
    }

    @Test
    void theServerTakesThemForTheirKeyOnlyAndWhileTheyLast() throws Exception {
        ObjectUrls urls = new ObjectUrls(CompletableFuture.completedFuture(URI.create(server.endpoint())), "us-east-1", server.accessKey(),
                server.secretKey());
        HttpClient client = HttpClient.newHttpClient();
        byte[] body = "an output".getBytes(StandardCharsets.UTF_8);

        URI put = urls.put("bkt", "worker-outputs/t/1", Duration.ofMinutes(1));
        assertThat(client.send(HttpRequest.newBuilder(put).header("Content-Type", "image/png").PUT(HttpRequest.BodyPublishers.ofByteArray(body))
                .build(), HttpResponse.BodyHandlers.discarding()).statusCode()).isEqualTo(200);
        assertThat(http.getObjectAsBytes(r -> r.bucket("bkt").key("worker-outputs/t/1")).asByteArray()).isEqualTo(body);

        http.putObject(r -> r.bucket("bkt").key("uploads/a b.wav"), RequestBody.fromBytes(body));
        URI get = urls.get("bkt", "uploads/a b.wav", Duration.ofMinutes(1));
        HttpResponse<byte[]> read = client.send(HttpRequest.newBuilder(get).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(read.body()).isEqualTo(body);

        // Another key under the same signature: refused.
        URI other = URI.create(get.toString().replace("uploads/a%20b.wav", "uploads/other.wav"));
        assertThat(client.send(HttpRequest.newBuilder(other).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode()).isEqualTo(403);
        // Signed an hour ago for a minute: expired.
        ObjectUrls past = new ObjectUrls(CompletableFuture.completedFuture(URI.create(server.endpoint())), "us-east-1", server.accessKey(),
                server.secretKey(), Clock.fixed(Instant.now().minus(Duration.ofHours(1)), ZoneOffset.UTC));
        URI expired = past.get("bkt", "uploads/a b.wav", Duration.ofMinutes(1));
        assertThat(client.send(HttpRequest.newBuilder(expired).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode()).isEqualTo(403);
    }
}
