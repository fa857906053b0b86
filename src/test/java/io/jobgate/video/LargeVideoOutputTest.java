package io.jobgate.video;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.jobgate.common.Json;
import io.jobgate.output.Mp4Probe;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Jobs;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A ~200 MB video output goes from the provider through quarantine (S3 multipart upload) to its
 * readable key with the JVM heap capped at 256 MB: it is never held whole in memory. Runs in its own
 * surefire execution ({@code large-output}, {@code -Xmx256m}); skipped in a JVM with a bigger heap.
 * The provider is a fake fal queue (JDK HTTP server) whose clip is a real MP4 with a 200 MB
 * {@code free} box before its {@code moov}: still a valid file, generated as it is sent.
 */
class LargeVideoOutputTest extends GatewayTestBase {

    static final long PADDING = 200L * 1024 * 1024;
    static final long MAX_HEAP = 300L * 1024 * 1024;

    HttpServer fal;
    byte[] head;
    byte[] moov;

    @BeanInject
    S3Client s3;

    @Override
    protected Map<String, String> settings() throws Exception {
        Assumptions.assumeTrue(Runtime.getRuntime().maxMemory() <= MAX_HEAP,
                "runs in the large-output execution with -Xmx256m");
        splitClip(Mp4ProbeTest.clip(1280, 720, 4));
        fal = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        fal.createContext("/", this::serve);
        fal.start();
        String base = "http://127.0.0.1:" + fal.getAddress().getPort();
        return GatewayTestSupport.with(GatewayTestSupport.RECONCILING, Map.of(
                "jobgate.provider.fal.base-url", base,
                "jobgate.provider.fal.api-key", "fal-test-key",
                "jobgate.provider.fal.call-deadline-ms", "60000"));
    }

    @AfterAll
    void stop() {
        if (fal != null) {
            fal.stop(0);
        }
    }

    /** The clip up to its moov (ftyp, mdat), and its moov: the padding goes between them. */
    void splitClip(byte[] clip) {
        int at = 0;
        while (at < clip.length) {
            long size = ((long) (clip[at] & 0xFF) << 24) | ((clip[at + 1] & 0xFF) << 16) | ((clip[at + 2] & 0xFF) << 8) | (clip[at + 3] & 0xFF);
            String type = new String(clip, at + 4, 4, StandardCharsets.ISO_8859_1);
            if (size == 1) { // a 64-bit size follows the type (jcodec writes mdat so)
                size = java.nio.ByteBuffer.wrap(clip, at + 8, 8).getLong();
            }
            if (type.equals("moov")) {
                head = java.util.Arrays.copyOfRange(clip, 0, at);
                moov = java.util.Arrays.copyOfRange(clip, at, (int) (at + size));
                return;
            }
            at += (int) size;
        }
        throw new IllegalStateException("the clip has no moov box");
    }

    long clipLength() {
        return head.length + 8 + PADDING + moov.length;
    }

    void serve(HttpExchange http) throws IOException {
        try (http) {
            String path = http.getRequestURI().getPath();
            http.getResponseHeaders().add("Content-Type", "application/json");
            String base = "http://127.0.0.1:" + fal.getAddress().getPort();
            if (http.getRequestMethod().equals("POST")) {
                reply(http, "{\"request_id\": \"big-1\", \"status\": \"IN_QUEUE\"}");
            } else if (path.endsWith("/status")) {
                reply(http, "{\"status\": \"COMPLETED\", \"metrics\": {\"inference_time\": 12.0}}");
            } else if (path.startsWith("/fal-ai/veo3/requests/")) {
                reply(http, "{\"video\": {\"url\": \"" + base + "/files/big-1.mp4\"}}");
            } else if (path.equals("/files/big-1.mp4")) {
                http.getResponseHeaders().set("Content-Type", "video/mp4");
                http.sendResponseHeaders(200, clipLength());
                OutputStream out = http.getResponseBody();
                out.write(head);
                out.write(new byte[] {(byte) (((PADDING + 8) >>> 24) & 0xFF), (byte) (((PADDING + 8) >>> 16) & 0xFF),
                    (byte) (((PADDING + 8) >>> 8) & 0xFF), (byte) ((PADDING + 8) & 0xFF), 'f', 'r', 'e', 'e'});
                byte[] zeros = new byte[1 << 20];
                for (long sent = 0; sent < PADDING; sent += zeros.length) {
                    out.write(zeros, 0, (int) Math.min(zeros.length, PADDING - sent));
                }
                out.write(moov);
            } else {
                http.sendResponseHeaders(404, -1);
            }
        }
    }

    static void reply(HttpExchange http, String json) throws IOException {
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        http.sendResponseHeaders(200, bytes.length);
        http.getResponseBody().write(bytes);
    }

    @Test
    void aTwoHundredMegabyteClipStreamsThroughQuarantineWithTheHeapCappedAt256Megabytes() throws Exception {
        ApiClient.Response r = api.postJob(ACME, "big-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clip", "aspect_class": "landscape", "provider": "fal",
                 "inputs": {"duration_seconds": 4, "resolution": "720p", "supplier_name": "Big Clips Ltd",
                            "invoice_id": "B-1", "currency": "EUR", "total": 1}}""");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitFinal(id);
        Map<String, Object> row = Db.single("SELECT status, error_message, result::text AS result FROM jobs WHERE job_id = ?", id);
        assertThat(row).as("%s", row).containsEntry("status", "succeeded");
        JsonNode result = Json.MAPPER.readTree((String) row.get("result"));
        assertThat(result.path("bytes").asLong()).isEqualTo(clipLength());
        assertThat(result.path("duration_ms").asLong()).isEqualTo(4000);
        assertThat(result.path("width").asInt()).isEqualTo(1280);
        assertThat(s3.headObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.mp4")).contentLength())
                .isEqualTo(clipLength());
        List<String> quarantined = s3.listObjectsV2(b -> b.bucket("jobgate").prefix("quarantine/" + id + "/")).contents()
                .stream().map(o -> o.key()).toList();
        assertThat(quarantined).isEmpty();
        // The promoted object reads back as the same MP4 (read as a stream, as the gateway did).
        try (var in = s3.getObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.mp4"))) {
            Mp4Probe.Scan scan = Mp4Probe.copy(in, OutputStream.nullOutputStream(), Long.MAX_VALUE);
            assertThat(scan.facts().durationMillis()).isEqualTo(4000);
            assertThat(scan.bytes()).isEqualTo(clipLength());
        }
        assertThat(Runtime.getRuntime().maxMemory()).isLessThanOrEqualTo(MAX_HEAP);
        // 200 MB on a shared disk: gone once checked (Artemis blocks producers above 95% disk use).
        s3.deleteObject(b -> b.bucket("jobgate").key("outputs/acme/" + id + "/output.mp4"));
    }
}
