package io.jobgate.worker;

import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.common.Json;
import io.jobgate.common.Digests;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static com.github.tomakehurst.wiremock.core.WireMockConfiguration.options;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped OpenAI adapter (routes/providers/openai.camel.yaml: Images and audio transcription)
 * through the real worker, against WireMock stubs shaped by the public API reference: request
 * bodies, sizes, base64 reply, multipart upload, verbose JSON with billed seconds, error bodies and
 * rate-limit headers. The base URL and key come in as the environment would set them.
 */
class OpenAiAdapterTest extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer openai;

    @BeanInject
    S3Client s3;
    @BeanInject
    io.jobgate.provider.ProviderCatalog providers;

    @Override
    protected Map<String, String> settings() throws Exception {
        openai = fakeProvider(new io.jobgate.support.GptImageRules());
        // Requests no test stubs for itself meet gpt-image-1's documented rules (sizes, formats).
        io.jobgate.support.GptImageRules.install(openai);
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.provider.openai.base-url", openai.baseUrl() + "/v1",
                "jobgate.provider.openai.api-key", "sk-test-123");
    }

    UUID submit(String supplier, String aspect) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "%s", "provider": "openai",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-9", "currency": "USD",
                            "line_items": [{"description": "Paper \\"A4\\"", "quantity": 2, "unit_price": 3.5}]}}"""
                .formatted(aspect, supplier));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts, result::text AS result FROM jobs WHERE job_id = ?", id);
    }

    @Test
    void generatesWithTheDocumentedRequestAndStoresTheBase64Png() throws Exception {
        String tag = Jobs.tag();
        byte[] png = Samples.png(1536, 1024);
        openai.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200)
                .withHeader("Content-Type", "application/json").withHeader("x-request-id", "req_abc123")
                .withBody("{\"created\": 1713833628, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(png)
                        + "\"}], \"output_format\": \"png\", \"size\": \"1536x1024\", \"quality\": \"medium\", "
                        + "\"usage\": {\"total_tokens\": 100, \"input_tokens\": 50, \"output_tokens\": 50, "
                        + "\"input_tokens_details\": {\"text_tokens\": 50, \"image_tokens\": 0}}}")));
        UUID id = submit(tag, "landscape");
        Jobs.awaitFinal(id);

        assertThat(job(id).get("status")).isEqualTo("succeeded");
        LoggedRequest call = openai.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag))).get(0);
        assertThat(call.getHeader("Authorization")).isEqualTo("Bearer sk-test-123");
        assertThat(call.getHeader("Content-Type")).startsWith("application/json");
        JsonNode body = Json.MAPPER.readTree(call.getBodyAsString());
        assertThat(body.path("model").asText()).isEqualTo("gpt-image-1");
        assertThat(body.path("size").asText()).isEqualTo("1536x1024");
        assertThat(body.path("n").asInt()).isEqualTo(1);
        assertThat(body.path("output_format").asText()).isEqualTo("png");
        assertThat(body.has("response_format")).as("GPT image models refuse response_format").isFalse();
        assertThat(body.path("prompt").asText()).contains("<input name=\"supplier_name\">" + tag + "</input>")
                .contains("Paper \"A4\"");

        JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
        assertThat(result.path("media_type").asText()).isEqualTo("image/png");
        assertThat(result.path("width").asInt()).isEqualTo(1536);
        assertThat(result.path("height").asInt()).isEqualTo(1024);
        assertThat(result.path("sha256").asText()).isEqualTo(Digests.sha256Hex(png));
        byte[] stored = s3.getObjectAsBytes(b -> b.bucket("jobgate").key(result.path("output_key").asText())).asByteArray();
        assertThat(stored).isEqualTo(png);
        assertThat(Db.single("SELECT provider_request_id, adapter_revision FROM attempts WHERE job_id = ?", id))
                .containsEntry("provider_request_id", "req_abc123").hasEntrySatisfying("adapter_revision", v -> assertThat((String) v).matches("openai-images-2@[0-9a-f]{10}"));
        // Derived from the loaded route file (its digest) and the effective settings, as the catalog says now.
        io.jobgate.provider.Provider loaded = providers.find("openai").orElseThrow();
        assertThat(loaded.adapter().digest()).isEqualTo(Digests.sha256Hex(java.nio.file.Files.readString(
                java.nio.file.Path.of("routes/providers/openai.camel.yaml"))));
        assertThat(loaded.adapter().settingKeys()).contains("image-model", "image-quality", "base-url"); // api-key too: secrets are left out of the hash
        assertThat(Db.single("SELECT adapter_revision FROM attempts WHERE job_id = ?", id).get("adapter_revision"))
                .isEqualTo(loaded.revision("image"));
    }

    @Test
    void anExhaustedQuotaIsAnAccountProblemNotARetry() {
        String tag = Jobs.tag();
        openai.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(429)
                .withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": \"You exceeded your current quota, please check your plan and billing details.\", "
                        + "\"type\": \"insufficient_quota\", \"param\": null, \"code\": \"insufficient_quota\"}}")));
        UUID id = submit(tag, "square");
        Jobs.awaitFinal(id);

        assertThat(job(id)).containsEntry("status", "failed").containsEntry("error_category", "auth").containsEntry("attempts", 1);
        assertThat(openai.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)))).hasSize(1);
    }

    @Test
    void aRateLimitWithRetryAfterIsRetriedAfterIt() {
        String tag = Jobs.tag();
        openai.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag)
                .whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED).willSetStateTo("ok")
                .willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")
                        .withHeader("x-ratelimit-remaining-requests", "0").withHeader("x-ratelimit-reset-requests", "1s")
                        .withBody("{\"error\": {\"message\": \"Rate limit reached for requests\", \"type\": \"requests\", "
                                + "\"param\": null, \"code\": \"rate_limit_exceeded\"}}")));
        openai.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                .willReturn(aResponse().withStatus(200).withBody("{\"created\": 1, \"data\": [{\"b64_json\": \""
                        + Base64.getEncoder().encodeToString(Samples.png(1024, 1024)) + "\"}]}")));
        UUID id = submit(tag, "square");
        Jobs.awaitFinal(id);

        assertThat(job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        var calls = openai.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)));
        java.time.Instant due = ((java.sql.Timestamp) io.jobgate.support.Db.single(
                "SELECT next_attempt_at FROM attempts WHERE job_id = ? AND attempt = 1", id).get("next_attempt_at")).toInstant();
        assertThat(due).as("Retry-After: 1 from the 429").isAfterOrEqualTo(calls.get(0).getLoggedDate().toInstant().plusSeconds(1));
        assertThat(calls.get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(due.truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
    }

    @Test
    void aBadKeyAndAnInvalidRequestFailWithoutRetry() {
        String badKey = Jobs.tag();
        String invalid = Jobs.tag();
        openai.stubFor(post(PATH).withRequestBody(containing(badKey)).willReturn(aResponse().withStatus(401)
                .withBody("{\"error\": {\"message\": \"Incorrect API key provided\", \"type\": \"invalid_request_error\", "
                        + "\"param\": null, \"code\": \"invalid_api_key\"}}")));
        openai.stubFor(post(PATH).withRequestBody(containing(invalid)).willReturn(aResponse().withStatus(400)
                .withBody("{\"error\": {\"message\": \"Invalid value for 'size'\", \"type\": \"invalid_request_error\", "
                        + "\"param\": \"size\", \"code\": \"invalid_value\"}}")));
        UUID unauthorized = submit(badKey, "square");
        UUID rejected = submit(invalid, "portrait");
        Jobs.awaitFinal(unauthorized);
        Jobs.awaitFinal(rejected);

        assertThat(job(unauthorized)).containsEntry("error_category", "auth").containsEntry("attempts", 1);
        assertThat(job(rejected)).containsEntry("error_category", "terminal_request").containsEntry("attempts", 1);
        assertThat((String) Db.single("SELECT response_excerpt FROM attempts WHERE job_id = ?", rejected).get("response_excerpt"))
                .contains("Invalid value for 'size'");
    }

    @Test
    void aSafetyRefusalIsDeclined() {
        String tag = Jobs.tag();
        openai.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(400)
                .withBody("{\"error\": {\"message\": \"Your request was rejected by the safety system.\", "
                        + "\"type\": \"image_generation_user_error\", \"param\": null, \"code\": \"moderation_blocked\"}}")));
        UUID id = submit(tag, "square");
        Jobs.awaitFinal(id);

        assertThat(job(id)).containsEntry("status", "failed").containsEntry("error_category", "declined");
        assertThat((String) job(id).get("error_message")).contains("safety system");
    }

    @Test
    void transcribesTheUploadedAudioAsAMultipartUploadAndRecordsTheBilledSeconds() throws Exception {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(2500));
        assertThat(upload.status()).isEqualTo(201);
        String transcript = "{\"task\": \"transcribe\", \"language\": \"english\", \"duration\": 2.5, "
                + "\"text\": \"Hello, thanks for calling.\", \"segments\": [{\"id\": 0, \"seek\": 0, \"start\": 0.0, "
                + "\"end\": 2.5, \"text\": \"Hello, thanks for calling.\"}], \"usage\": {\"type\": \"duration\", \"seconds\": 3}}";
        openai.stubFor(post("/v1/audio/transcriptions")
                .withMultipartRequestBody(com.github.tomakehurst.wiremock.client.WireMock.aMultipart().withName("model")
                        .withBody(com.github.tomakehurst.wiremock.client.WireMock.equalTo("whisper-1")))
                .withMultipartRequestBody(com.github.tomakehurst.wiremock.client.WireMock.aMultipart().withName("response_format")
                        .withBody(com.github.tomakehurst.wiremock.client.WireMock.equalTo("verbose_json")))
                .withMultipartRequestBody(com.github.tomakehurst.wiremock.client.WireMock.aMultipart().withName("file")
                        .withHeader("Content-Disposition", containing("filename=\"source.wav\"")))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withHeader("x-request-id", "req_audio_1").withBody(transcript)));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitFinal(id);

        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded");
        JsonNode output = Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + id + "/output"));
        assertThat(output.path("text").asText()).isEqualTo("Hello, thanks for calling.");
        var call = openai.findAll(postRequestedFor(urlEqualTo("/v1/audio/transcriptions"))
                .withRequestBody(com.github.tomakehurst.wiremock.client.WireMock.notContaining("Kubernetes"))).get(0);
        assertThat(call.getHeader("Authorization")).isEqualTo("Bearer sk-test-123");
        assertThat(call.getHeader("Content-Type")).startsWith("multipart/form-data;").contains("boundary=").doesNotContain("ISO-8859-1");
        assertThat(call.getBody()).as("the audio bytes travel in the upload").hasSizeGreaterThan(Samples.wav(2500).length);
        Map<String, Object> attempt = Db.single("SELECT billed_units, billed_unit, provider_request_id FROM attempts WHERE job_id = ?", id);
        assertThat(((java.math.BigDecimal) attempt.get("billed_units")).intValue()).isEqualTo(3);
        assertThat(attempt).containsEntry("billed_unit", "audio_seconds").containsEntry("provider_request_id", "req_audio_1");
        assertThat(Db.single("SELECT units, unit FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id))
                .containsEntry("unit", "audio_minutes");
    }

    UUID submit(String preset, String supplier, String aspect) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "%s", "aspect_class": "%s", "provider": "openai",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-9", "currency": "USD",
                            "line_items": [{"description": "Paper", "quantity": 2, "unit_price": 3.5}]}}"""
                .formatted(preset, aspect, supplier));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** gpt-image-1 renders exactly its three sizes, and each preset's media type (invoice-scan: JPEG). */
    @Test
    void everyClassOfBothInvoicePresetsSucceedsAtGptImage1sExactSizes() throws Exception {
        Map<String, int[]> sizes = Map.of("square", new int[] {1024, 1024}, "landscape", new int[] {1536, 1024},
                "portrait", new int[] {1024, 1536});
        Map<String, String> types = Map.of("invoice-clean", "image/png", "invoice-scan", "image/jpeg");
        Map<UUID, String> jobs = new java.util.LinkedHashMap<>();
        for (String preset : types.keySet()) {
            for (String aspect : sizes.keySet()) {
                jobs.put(submit(preset, Jobs.tag(), aspect), preset + " " + aspect);
            }
        }
        for (Map.Entry<UUID, String> e : jobs.entrySet()) {
            UUID id = e.getKey();
            String preset = e.getValue().split(" ")[0];
            int[] size = sizes.get(e.getValue().split(" ")[1]);
            Jobs.awaitFinal(id);
            assertThat(job(id)).as(e.getValue() + ": %s", job(id)).containsEntry("status", "succeeded");
            JsonNode result = Json.MAPPER.readTree((String) job(id).get("result"));
            assertThat(result.path("media_type").asText()).as(e.getValue()).isEqualTo(types.get(preset));
            assertThat(new int[] {result.path("width").asInt(), result.path("height").asInt()}).as(e.getValue()).isEqualTo(size);
            JsonNode manifest = Json.MAPPER.readTree(s3.getObjectAsBytes(b -> b.bucket("jobgate")
                    .key(result.path("output_key").asText().replaceFirst("output\\.[a-z]+$", "manifest.json"))).asByteArray());
            assertThat(manifest.path("output").path("width").asInt()).isEqualTo(size[0]);
            assertThat(manifest.path("output").path("height").asInt()).isEqualTo(size[1]);
            assertThat(manifest.path("adapter").path("revision").asText()).matches("openai-images-2@[0-9a-f]{10}");
        }
    }

    static final java.util.concurrent.atomic.AtomicInteger UPLOADS = new java.util.concurrent.atomic.AtomicInteger();

    ApiClient.Response transcribe(String glossaryTerm) {
        // Bytes of their own per job (the same bytes again would be the same upload).
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1000 + UPLOADS.incrementAndGet() * 10));
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        return api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"de\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + glossaryTerm
                + "\"}, {\"term\": \"Kubernetes\"}, {\"term\": \"Acme GmbH\"}]}}");
    }

    /** whisper-1 gets the job's language and the glossary as its vocabulary hint, never the instruction template. */
    @Test
    void transcriptionSendsTheLanguageAndAVocabularyHintNotTheTemplate() throws Exception {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody("{\"task\": \"transcribe\", \"language\": \"german\", \"duration\": 1.5, \"text\": \"Hallo.\", "
                                + "\"segments\": [], \"usage\": {\"type\": \"duration\", \"seconds\": 2}}")));
        ApiClient.Response r = transcribe(tag);
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitFinal(id);
        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded");

        LoggedRequest call = openai.findAll(postRequestedFor(urlEqualTo("/v1/audio/transcriptions")).withRequestBody(containing(tag))).get(0);
        Map<String, String> fields = new java.util.HashMap<>();
        call.getParts().forEach(part -> {
            if (!part.getName().equals("file")) {
                fields.put(part.getName(), part.getBody().asString());
            }
        });
        assertThat(fields).containsEntry("language", "de").containsEntry("prompt", tag + ", Kubernetes, Acme GmbH");
        assertThat(fields.get("prompt")).hasSizeLessThanOrEqualTo(224).doesNotContain("<input").doesNotContain("Transcribe");
        assertThat(Db.single("SELECT adapter_revision FROM attempts WHERE job_id = ?", id))
                .hasEntrySatisfying("adapter_revision", v -> assertThat((String) v).matches("openai-transcription-2@[0-9a-f]{10}"));
        assertThat(api.get(ACME, "/v1/jobs/" + id).json().path("adapter_revision").asText()).matches("openai-transcription-2@[0-9a-f]{10}");
    }

    /** The same error table as images: a used-up credit is billing, failed at once, never retried as a rate limit. */
    @Test
    void anExhaustedQuotaOnTranscriptionFailsAtOnceWithTheBillingReason() {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag)).willReturn(aResponse().withStatus(429)
                .withHeader("Content-Type", "application/json").withHeader("Retry-After", "1")
                .withBody("{\"error\": {\"message\": \"You exceeded your current quota, please check your plan and billing details.\", "
                        + "\"type\": \"insufficient_quota\", \"param\": null, \"code\": \"insufficient_quota\"}}")));
        ApiClient.Response r = transcribe(tag);
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitFinal(id);

        assertThat(job(id)).containsEntry("status", "failed").containsEntry("error_category", "auth").containsEntry("attempts", 1);
        assertThat((String) job(id).get("error_message")).contains("insufficient_quota").contains("billing");
        assertThat(openai.findAll(postRequestedFor(urlEqualTo("/v1/audio/transcriptions")).withRequestBody(containing(tag)))).hasSize(1);
    }

    /** A plain rate limit on transcription stays a rate limit (retried after Retry-After), a bad key is auth. */
    @Test
    void transcriptionRateLimitsAndBadKeysAreClassifiedLikeImages() {
        String limited = Jobs.tag();
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(limited)).inScenario(limited)
                .whenScenarioStateIs(com.github.tomakehurst.wiremock.stubbing.Scenario.STARTED).willSetStateTo("ok")
                .willReturn(aResponse().withStatus(429).withHeader("Retry-After", "1")
                        .withBody("{\"error\": {\"message\": \"Rate limit reached for requests\", \"type\": \"requests\", "
                                + "\"param\": null, \"code\": \"rate_limit_exceeded\"}}")));
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(limited)).inScenario(limited).whenScenarioStateIs("ok")
                .willReturn(aResponse().withStatus(200).withBody("{\"text\": \"ok\", \"usage\": {\"type\": \"duration\", \"seconds\": 2}}")));
        String badKey = Jobs.tag();
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(badKey)).willReturn(aResponse().withStatus(401)
                .withBody("{\"error\": {\"message\": \"Incorrect API key provided\", \"type\": \"invalid_request_error\", "
                        + "\"param\": null, \"code\": \"invalid_api_key\"}}")));
        UUID retried = UUID.fromString(transcribe(limited).json().path("job_id").asText());
        UUID refused = UUID.fromString(transcribe(badKey).json().path("job_id").asText());
        Jobs.awaitFinal(retried);
        Jobs.awaitFinal(refused);

        assertThat(job(retried)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        assertThat(Db.single("SELECT error_category FROM attempts WHERE job_id = ? AND attempt = 1", retried))
                .containsEntry("error_category", "rate_limited");
        assertThat(job(refused)).containsEntry("status", "failed").containsEntry("error_category", "auth").containsEntry("attempts", 1);
    }

    /**
     * The shipped settings as this class boots them leave azure-openai unconfigured (enabled = false): its
     * route is not started, so a job naming it is refused at admission instead of queued for a call that
     * cannot be made (AzureOpenAiAdapterTest enables it).
     */
    @Test
    void azureOpenAiTakesNoJobsUntilItIsConfigured() {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1000 + UPLOADS.incrementAndGet() * 10));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"azure-openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}}");

        assertThat(r.status()).as(r.text()).isEqualTo(422);
        assertThat(r.code()).isEqualTo("provider_not_running");
        assertThat(r.text()).contains("provider-azure-openai");
        assertThat(providers.find("azure-openai")).as("its settings are read: only its route waits").isPresent();
    }
}
