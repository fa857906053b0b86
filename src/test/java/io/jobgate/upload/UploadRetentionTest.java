package io.jobgate.upload;

import java.time.Duration;
import java.util.UUID;

import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Uploads retention removes only what its rule allows: an upload expires once no job used it for the
 * retention period; its source object (shared by digest across tenants) goes only when every upload
 * of those bytes expired and settled; an upload of the same bytes revives it; a job admitted while its
 * upload expired keeps it.
 */
class UploadRetentionTest extends GatewayTestBase {

    @BeanInject
    UploadRetention retention;
    @BeanInject
    S3Client s3;

    String bucket;

    @BeforeAll
    void bucket() {
        bucket = System.getProperty("jobgate.s3.bucket", "jobgate");
    }

    String upload(String key, byte[] bytes) {
        ApiClient.Response r = api.upload(key, "audio/wav", bytes);
        assertThat(r.status()).as(r.text()).isIn(200, 201);
        return r.json().path("upload_id").asText();
    }

    ApiClient.Response transcribe(String key, String upload) {
        return api.postJob(key, "ur-" + UUID.randomUUID(),
                "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload + "\"}");
    }

    boolean objectExists(String upload) {
        String key = (String) Db.single("SELECT object_key FROM uploads WHERE upload_id = ?::uuid", upload).get("object_key");
        try {
            s3.headObject(b -> b.bucket(bucket).key(key));
            return true;
        } catch (NoSuchKeyException gone) {
            return false;
        }
    }

    void age(String upload, String createdAgo) {
        Db.update("UPDATE uploads SET created_at = now() - ?::interval WHERE upload_id = ?::uuid", createdAgo, upload);
    }

    void settle(String upload) {
        Db.update("UPDATE uploads SET expired_at = now() - interval '20 minutes' WHERE upload_id = ?::uuid", upload);
    }

    boolean expired(String upload) {
        return Db.count("SELECT count(*) FROM uploads WHERE upload_id = ?::uuid AND expired_at IS NOT NULL", upload) == 1;
    }

    /** This class runs no workers: a job ends by its cancel. */
    void end(UUID job) {
        assertThat(api.post(ACME, "/v1/jobs/" + job + "/cancel").status()).isEqualTo(200);
        Jobs.awaitFinal(job);
    }

    void expireAll() {
        while (retention.expire() > 0) {
            // drained in batches
        }
    }

    @Test
    void anUnusedUploadExpiresAndItsBytesGoOnlyWhenEveryUploadOfThemExpiredAndSettled() {
        byte[] shared = Samples.wav(1234);
        String acme = upload(ACME, shared);
        String globex = upload(GLOBEX, shared);
        String used = upload(ACME, Samples.wav(1235));
        ApiClient.Response job = transcribe(ACME, used);
        assertThat(job.status()).as(job.text()).isEqualTo(202);
        UUID jobId = UUID.fromString(job.json().path("job_id").asText());
        end(jobId);

        // A week and a day pass for the uploads; the job that used one ended just now.
        for (String u : new String[] {acme, globex, used}) {
            age(u, "8 days");
        }
        expireAll();
        assertThat(expired(acme)).isTrue();
        assertThat(expired(globex)).isTrue();
        assertThat(expired(used)).as("its last job ended less than the retention period ago").isFalse();

        ApiClient.Response refused = transcribe(ACME, acme);
        assertThat(refused.status()).as(refused.text()).isEqualTo(422);
        assertThat(refused.code()).isEqualTo("upload_expired");

        assertThat(retention.purge()).as("nothing settled yet: an admission may still be committing").isZero();
        assertThat(objectExists(acme)).isTrue();

        // Globex sends the same bytes again: its upload lives again, so the shared object stays.
        assertThat(upload(GLOBEX, shared)).isEqualTo(globex);
        assertThat(expired(globex)).isFalse();
        settle(acme);
        assertThat(retention.purge()).isZero();
        assertThat(objectExists(acme)).isTrue();

        // Globex's upload expires too, and settles: now the bytes go.
        age(globex, "8 days");
        expireAll();
        settle(globex);
        assertThat(retention.purge()).isEqualTo(1);
        assertThat(objectExists(acme)).isFalse();
        assertThat(Db.count("SELECT count(*) FROM uploads WHERE upload_id IN (?::uuid, ?::uuid) AND purged_at IS NOT NULL",
                acme, globex)).isEqualTo(2);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND source_sha256 IS NOT NULL", jobId))
                .as("a job keeps its source's digest").isEqualTo(1);

        // The same bytes again: the same upload, live, its object stored again, and a job runs on it.
        assertThat(upload(ACME, shared)).isEqualTo(acme);
        assertThat(expired(acme)).isFalse();
        assertThat(objectExists(acme)).isTrue();
        ApiClient.Response again = transcribe(ACME, acme);
        assertThat(again.status()).as(again.text()).isEqualTo(202);
    }

    @Test
    void aJobAdmittedWhileItsUploadExpiredKeepsTheUploadAndItsBytes() {
        String upload = upload(ACME, Samples.wav(1236));
        // An admission that read the upload just before it expired commits its job just after.
        ApiClient.Response job = transcribe(ACME, upload);
        assertThat(job.status()).as(job.text()).isEqualTo(202);
        end(UUID.fromString(job.json().path("job_id").asText()));
        settle(upload);

        assertThat(retention.purge()).isZero();
        assertThat(expired(upload)).isFalse();
        assertThat(objectExists(upload)).isTrue();
        assertThat(transcribe(ACME, upload).status()).isEqualTo(202);
    }
}
