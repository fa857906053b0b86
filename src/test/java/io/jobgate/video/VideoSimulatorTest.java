package io.jobgate.video;

import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;
import io.jobgate.output.Mp4Probe;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Video jobs end to end offline, through the real worker, poller and outputs route with the bundled
 * simulator: a playable MP4 of the ordered size and duration is promoted (real values on the job and
 * in the manifest); a clip of the wrong duration or frame size stays in quarantine and fails the job
 * (refunded); a lost submit reply is found again and billed once.
 */
class VideoSimulatorTest extends GatewayTestBase {

    @BeanInject
    S3Client s3;

    @Override
    protected Map<String, String> settings() {
        return GatewayTestSupport.SIMULATING;
    }

    UUID submit(int seconds, String resolution, String aspect, String correlationId) {
        var request = api.request("/v1/jobs", ACME).header("Content-Type", "application/json")
                .header("Idempotency-Key", "v-" + UUID.randomUUID());
        if (correlationId != null) {
            request.header("X-Correlation-Id", correlationId);
        }
        String body = """
                {"preset_id": "invoice-clip", "aspect_class": "%s",
                 "inputs": {"duration_seconds": %d, "resolution": "%s", "supplier_name": "Clip GmbH",
                            "invoice_id": "V-7", "currency": "EUR", "total": 1200.5}}""".formatted(aspect, seconds, resolution);
        ApiClient.Response r = api.send(request.POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build());
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, cost_micros, error_category, error_message, result::text AS result "
                + "FROM jobs WHERE job_id = ?", id);
    }

    List<String> keys(String prefix) {
        return s3.listObjectsV2(b -> b.bucket("jobgate").prefix(prefix)).contents().stream().map(o -> o.key()).toList();
    }

    static Mp4Probe.Scan probe(byte[] bytes) throws Exception {
        return Mp4Probe.copy(new ByteArrayInputStream(bytes), OutputStream.nullOutputStream(), Long.MAX_VALUE);
    }

    @Test
    void aVideoJobEndsWithAPlayableMp4OfTheOrderedSizeAndDuration() throws Exception {
        UUID id = submit(4, "720p", "landscape", null);
        UUID portrait = submit(6, "720p", "portrait", null);
        Jobs.awaitFinal(id);
        Jobs.awaitFinal(portrait);
        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded");
        byte[] mp4 = api.getBytes(ACME, "/v1/jobs/" + id + "/output");
        Mp4Probe.Scan scan = probe(mp4);
        assertThat(scan.facts()).isEqualTo(new Mp4Probe.VideoFacts(scan.facts().brand(), 4000, 1280, 720));

        JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
        assertThat(result.path("media_type").asText()).isEqualTo("video/mp4");
        assertThat(result.path("output_key").asText()).isEqualTo("outputs/acme/" + id + "/output.mp4");
        assertThat(result.path("duration_ms").asLong()).isEqualTo(4000);
        assertThat(result.path("width").asInt()).isEqualTo(1280);
        assertThat(result.path("bytes").asLong()).isEqualTo(mp4.length);
        JsonNode manifest = Json.MAPPER.readTree(s3.getObjectAsBytes(b -> b.bucket("jobgate")
                .key("outputs/acme/" + id + "/manifest.json")).asByteArray());
        assertThat(manifest.path("output").path("duration_ms").asLong()).isEqualTo(4000);
        assertThat(manifest.path("output").path("height").asInt()).isEqualTo(720);
        assertThat(s3.headObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.mp4")).contentType())
                .isEqualTo("video/mp4");
        assertThat(keys("quarantine/" + id + "/")).isEmpty();
        JsonNode shown = api.get(ACME, "/v1/jobs/" + id).json().path("output");
        assertThat(shown.path("media_type").asText()).isEqualTo("video/mp4");
        assertThat(shown.path("duration_ms").asLong()).as("the job shows what the container says").isEqualTo(4000);
        assertThat(shown.path("width").asInt()).isEqualTo(1280);
        assertThat(shown.path("height").asInt()).isEqualTo(720);

        assertThat(job(portrait)).containsEntry("status", "succeeded");
        assertThat(probe(api.getBytes(ACME, "/v1/jobs/" + portrait + "/output")).facts())
                .extracting(Mp4Probe.VideoFacts::width, Mp4Probe.VideoFacts::height, Mp4Probe.VideoFacts::durationMillis)
                .containsExactly(720, 1280, 6000L);
    }

    @Test
    void aClipOfTheWrongDurationOrFrameSizeStaysInQuarantineAndFailsTheJob() {
        UUID longer = submit(4, "720p", "landscape", "sim-fault-wrong_duration-" + UUID.randomUUID());
        UUID wider = submit(4, "720p", "landscape", "sim-fault-wrong_size-" + UUID.randomUUID());
        Jobs.awaitFinal(longer);
        Jobs.awaitFinal(wider);
        assertThat(job(longer)).containsEntry("status", "failed").containsEntry("error_category", "invalid_output");
        assertThat((String) job(longer).get("error_message")).contains("output lasts 6000 ms, the order is 4 s");
        assertThat(job(wider)).containsEntry("status", "failed").containsEntry("error_category", "invalid_output");
        assertThat((String) job(wider).get("error_message")).contains("output is 1344x720, the adapter renders the order at 1280x720");
        for (UUID id : List.of(longer, wider)) {
            assertThat(keys("quarantine/" + id + "/")).as("kept for an operator (webhook and poller may each have stored it)").isNotEmpty();
            assertThat(keys("outputs/acme/" + id + "/")).as("never readable").isEmpty();
            assertThat(api.get(ACME, "/v1/jobs/" + id + "/output").status()).isEqualTo(409);
            long cost = (Long) job(id).get("cost_micros");
            assertThat(Db.single("SELECT amount_micros, unit FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id))
                    .containsEntry("amount_micros", cost).containsEntry("unit", "video_seconds");
        }
    }

    @Test
    void aLostSubmitReplyIsFoundAgainAndBilledOnce() {
        UUID id = submit(4, "1080p", "landscape", "sim-fault-lose_reply-" + UUID.randomUUID());
        Jobs.awaitFinal(id);
        assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        assertThat(Db.single("SELECT outcome FROM attempts WHERE job_id = ? AND attempt = 1", id))
                .containsEntry("outcome", "submission_unknown");
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id)).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isZero();
        assertThat(Db.single("SELECT amount_micros FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id))
                .containsEntry("amount_micros", -4 * 40_000L);
    }
}
