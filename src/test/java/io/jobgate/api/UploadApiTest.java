package io.jobgate.api;

import java.util.Map;

import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Samples;
import io.jobgate.infra.EmbeddedS3Server;
import io.jobgate.infra.ObjectStorage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static io.jobgate.api.AdmissionApiTest.assertProblem;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Uploads over real HTTP into a real S3 API server, checked by magic bytes. The server here is an
 * S3Proxy the test starts itself and names in {@code jobgate.s3.endpoint}: the gateway treats it as
 * an external S3 (or MinIO), and the test reads the objects back with its own S3 client.
 */
class UploadApiTest extends GatewayTestBase {

    static final int CAP = 64 * 1024;


    EmbeddedS3Server externalS3;
    S3Client s3;

    @Override
    protected Map<String, String> settings() throws Exception {
        externalS3 = EmbeddedS3Server.start(java.nio.file.Files.createTempDirectory("jobgate-external-s3"), 0);
        s3 = ObjectStorage.client(externalS3.endpoint(), "us-east-1", externalS3.accessKey(), externalS3.secretKey());
        return Map.of("jobgate.uploads.max-bytes", Integer.toString(CAP),
                "jobgate.s3.endpoint", externalS3.endpoint(), "jobgate.s3.access-key", externalS3.accessKey(),
                "jobgate.s3.secret-key", externalS3.secretKey());
    }

    @AfterAll
    void stopS3() throws Exception {
        s3.close();
        externalS3.stop();
    }

    S3Client s3() {
        return s3;
    }

    @Test
    void storesTheBytesUnderTheirDigestAndAnswersWithTheRecord() {
        byte[] png = Samples.png(40, 30);
        Response r = api.upload(ACME, "image/png", png);

        assertThat(r.status()).isEqualTo(201);
        String sha = Digests.sha256Hex(png);
        assertThat(r.json().path("sha256").asText()).isEqualTo(sha);
        assertThat(r.json().path("bytes").asLong()).isEqualTo(png.length);
        assertThat(r.json().path("media_type").asText()).isEqualTo("image/png");
        ResponseBytes<GetObjectResponse> stored = s3().getObjectAsBytes(b -> b.bucket("jobgate").key("sources/sha256/" + sha));
        assertThat(stored.asByteArray()).isEqualTo(png);
        assertThat(stored.response().contentType()).isEqualTo("image/png");
        assertThat(Db.count("SELECT count(*) FROM uploads WHERE tenant_id = 'acme' AND sha256 = ?", sha)).isEqualTo(1);

        Response again = api.upload(ACME, "image/png", png);
        assertThat(again.status()).isEqualTo(200);
        assertThat(again.json().path("upload_id").asText()).isEqualTo(r.json().path("upload_id").asText());
        // An image has no duration, whether the record is new or read back.
        assertThat(r.json().path("duration_ms").isNull()).as(r.text()).isTrue();
        assertThat(again.json().path("duration_ms").isNull()).as(again.text()).isTrue();
    }

    @Test
    void recognisesEachSupportedTypeByItsMagicBytes() {
        assertThat(api.upload(ACME, "image/jpeg", Samples.jpeg(20, 20)).status()).isEqualTo(201);
        assertThat(api.upload(ACME, "image/jpg", Samples.jpeg(21, 20)).json().path("media_type").asText())
                .isEqualTo("image/jpeg");
        assertThat(api.upload(ACME, "application/pdf", Samples.pdf()).status()).isEqualTo(201);
        Response wav = api.upload(ACME, "audio/x-wav", Samples.wav(2500));
        assertThat(wav.status()).isEqualTo(201);
        assertThat(wav.json().path("media_type").asText()).isEqualTo("audio/wav");
        assertThat(wav.json().path("duration_ms").asLong()).isEqualTo(2500);
        assertThat(api.upload(ACME, "audio/x-wav", Samples.wav(2500)).json().path("duration_ms").asLong()).isEqualTo(2500);
        Response mp3 = api.upload(ACME, "audio/mpeg", Samples.mp3(100));
        assertThat(mp3.status()).isEqualTo(201);
        assertThat(mp3.json().path("duration_ms").asLong()).isBetween(2500L, 2700L);
    }

    @Test
    void bytesThatAreNotWhatTheyClaimAreRefusedAndNotStored() {
        byte[] png = Samples.png(10, 11);
        Response r = api.upload(ACME, "audio/wav", png);

        assertProblem(r, 415, "media_type_mismatch");
        assertThat(r.json().path("detected").asText()).isEqualTo("image/png");
        String sha = Digests.sha256Hex(png);
        assertThat(Db.count("SELECT count(*) FROM uploads WHERE sha256 = ?", sha)).isZero();
        assertThatThrownBy(() -> s3().headObject(b -> b.bucket("jobgate").key("sources/sha256/" + sha)))
                .isInstanceOf(NoSuchKeyException.class);

        byte[] text = "just some text, not an image".getBytes();
        assertProblem(api.upload(ACME, "image/png", text), 415, "media_type_mismatch");
    }

    @Test
    void unsupportedDeclaredTypesEmptyAndOversizedUploadsAreRefused() {
        assertProblem(api.upload(ACME, "text/plain", "hello".getBytes()), 415, "unsupported_media_type");
        assertProblem(api.upload(ACME, "image/png", new byte[0]), 400, "empty_upload");
        byte[] big = new byte[CAP + 1];
        System.arraycopy(Samples.png(2, 2), 0, big, 0, 8);
        Response tooLarge = api.upload(ACME, "image/png", big);
        assertProblem(tooLarge, 413, "upload_too_large");
        assertThat(tooLarge.json().path("max_bytes").asLong()).isEqualTo(CAP);
        assertProblem(api.upload(null, "image/png", Samples.png(3, 3)), 401, "unauthorized");
    }
}
