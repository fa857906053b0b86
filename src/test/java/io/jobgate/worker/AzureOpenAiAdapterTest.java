package io.jobgate.worker;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.LogCapture;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.equalTo;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped Azure OpenAI transcription adapter (routes/providers/azure-openai.camel.yaml) through the
 * real worker, against a WireMock stand-in of Azure's documented API (azure-rest-api-specs, inference
 * 2024-10-21): a deployment's path with api-version, the api-key header, the multipart upload without
 * model, verbose JSON with the audio's duration, Azure's error bodies, and its 429 headers
 * (retry-after-ms beside Retry-After). Settings come in as the environment would set them.
 */
class AzureOpenAiAdapterTest extends GatewayTestBase {

    static final String KEY = "azure-test-key-5f1c";
    static final String PATH = "/openai/deployments/whisper-eu/audio/transcriptions";
    static final long DEADLINE_MS = 2500;

    WireMockServer azure;

    @Override
    protected Map<String, String> settings() throws Exception {
        azure = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.provider.azure-openai.enabled", "true",
                "jobgate.provider.azure-openai.base-url", azure.baseUrl(),
                "jobgate.provider.azure-openai.api-key", KEY,
                "jobgate.provider.azure-openai.deployment", "whisper-eu",
                "jobgate.provider.azure-openai.call-deadline-ms", Long.toString(DEADLINE_MS));
    }

    static final AtomicInteger UPLOADS = new AtomicInteger();

    /** A transcription job naming azure-openai; {@code tag} travels in the vocabulary hint (the prompt part). */
    UUID transcribe(String tag) {
        // Bytes of their own per job (the same bytes again would be the same upload).
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1200 + UPLOADS.incrementAndGet() * 10));
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"azure-openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"de\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag
                + "\"}, {\"term\": \"Kubernetes\"}]}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    List<LoggedRequest> calls(String tag) {
        return azure.findAll(postRequestedFor(urlPathEqualTo(PATH)).withRequestBody(containing(tag)));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts FROM jobs WHERE job_id = ?", id);
    }

    static Map<String, Object> attempt(UUID id, int n) {
        return Db.single("SELECT outcome, error_category, error_message, http_status, retry_after, retry_after_understood, "
                + "ended_at, next_attempt_at, billed_units, billed_unit, response_excerpt FROM attempts WHERE job_id = ? AND attempt = ?", id, n);
    }

    static String azureError(String code, String message) {
        return "{\"error\": {\"code\": \"" + code + "\", \"message\": \"" + message + "\", \"param\": null, \"type\": null}}";
    }

    static final String VERBOSE = "{\"task\": \"transcribe\", \"language\": \"german\", \"duration\": 2.5, "
            + "\"text\": \"Guten Tag, danke für Ihren Anruf.\", \"segments\": [{\"id\": 0, \"seek\": 0, \"start\": 0.0, "
            + "\"end\": 2.5, \"text\": \"Guten Tag, danke für Ihren Anruf.\", \"tokens\": [50364], \"temperature\": 0.0, "
            + "\"avg_logprob\": -0.2, \"compression_ratio\": 0.9, \"no_speech_prob\": 0.01}]}";

    @Test
    void transcribesTheUploadAtTheDeploymentWithItsKeyAndBillsTheAudiosDuration() throws Exception {
        String tag = Jobs.tag();
        azure.stubFor(post(urlPathEqualTo(PATH)).withQueryParam("api-version", equalTo("2024-10-21"))
                .withHeader("api-key", equalTo(KEY)).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withHeader("x-request-id", "azreq-1").withBody(VERBOSE)));
        UUID id;
        List<String> lines;
        try (LogCapture log = new LogCapture()) {
            id = transcribe(tag);
            Jobs.awaitFinal(id);
            lines = log.lines();
        }

        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        JsonNode output = Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + id + "/output"));
        assertThat(output.path("text").asText()).isEqualTo("Guten Tag, danke für Ihren Anruf.");
        assertThat(output.path("duration").asDouble()).isEqualTo(2.5);

        LoggedRequest call = calls(tag).get(0);
        assertThat(call.getUrl()).isEqualTo(PATH + "?api-version=2024-10-21");
        assertThat(call.getHeader("api-key")).isEqualTo(KEY);
        assertThat(call.containsHeader("Authorization")).as("Azure's key header only").isFalse();
        assertThat(call.getHeader("Content-Type")).startsWith("multipart/form-data;").contains("boundary=");
        Map<String, String> fields = new HashMap<>();
        call.getParts().forEach(part -> {
            if (!part.getName().equals("file")) {
                fields.put(part.getName(), part.getBody().asString());
            }
        });
        assertThat(fields).as("GA 2024-10-21 has no model field: the deployment names it")
                .containsOnlyKeys("response_format", "language", "prompt")
                .containsEntry("response_format", "verbose_json").containsEntry("language", "de")
                .containsEntry("prompt", tag + ", Kubernetes");
        var file = call.getPart("file");
        assertThat(file.getHeader("Content-Disposition").firstValue()).contains("filename=\"source.wav\"");
        assertThat(file.getHeader("Content-Type").firstValue()).isEqualTo("audio/wav");
        assertThat(file.getBody().asBytes()).as("the uploaded audio, as stored by digest").startsWith("RIFF".getBytes());
        String sha256 = (String) Db.single("SELECT source_sha256 FROM jobs WHERE job_id = ?", id).get("source_sha256");
        assertThat(io.jobgate.common.Digests.sha256Hex(file.getBody().asBytes())).isEqualTo(sha256);

        Map<String, Object> attempt = Db.single("SELECT billed_units, billed_unit, provider_request_id, adapter_revision "
                + "FROM attempts WHERE job_id = ?", id);
        assertThat((java.math.BigDecimal) attempt.get("billed_units")).isEqualByComparingTo("2.5");
        assertThat(attempt).containsEntry("billed_unit", "audio_seconds").containsEntry("provider_request_id", "azreq-1");
        assertThat((String) attempt.get("adapter_revision")).matches("azure-openai-transcription-1@[0-9a-f]{10}");
        assertThat(Db.single("SELECT unit FROM ledger WHERE job_id = ? AND entry_type = 'debit'", id))
                .containsEntry("unit", "audio_minutes");
        assertThat(lines).as("the key is never logged").noneMatch(l -> l.contains(KEY));
    }

    /** Azure's 429 carries retry-after-ms beside Retry-After: the milliseconds are the wait, no sooner. */
    @Test
    void aRateLimitIsRetriedNoSoonerThanItsRetryAfterMs() {
        String tag = Jobs.tag();
        azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag)
                .whenScenarioStateIs(Scenario.STARTED).willSetStateTo("ok")
                .willReturn(aResponse().withStatus(429).withHeader("Content-Type", "application/json")
                        .withHeader("retry-after-ms", "1000").withHeader("Retry-After", "3")
                        .withHeader("x-ratelimit-remaining-requests", "0")
                        .withBody(azureError("429", "Requests to the Audio_Transcriptions_Create Operation under Azure OpenAI API "
                                + "version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 pricing tier. "
                                + "Please retry after 1 second."))));
        azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(VERBOSE)));
        UUID id = transcribe(tag);
        Jobs.awaitFinal(id);

        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
        Map<String, Object> first = attempt(id, 1);
        assertThat(first).containsEntry("error_category", "rate_limited").containsEntry("http_status", 429)
                .containsEntry("retry_after", "1000ms").containsEntry("retry_after_understood", true);
        List<LoggedRequest> calls = calls(tag);
        assertThat(calls).hasSize(2);
        Instant sent = calls.get(0).getLoggedDate().toInstant();
        Instant due = ((java.sql.Timestamp) first.get("next_attempt_at")).toInstant();
        // Set from the moment the 429 was read, which lies between the call's sending and the attempt's close
        // (ended_at, recorded after it): 1000 ms from a moment in that span, whatever the machine's speed.
        Instant closed = ((java.sql.Timestamp) first.get("ended_at")).toInstant();
        assertThat(due).as("retry-after-ms: 1000").isAfterOrEqualTo(sent.plusMillis(1000))
                .as("the milliseconds, not Retry-After's 3 s").isBeforeOrEqualTo(closed.plusMillis(1000));
        assertThat(calls.get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(due.truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
    }

    /** 400, 401, 403, 404 and Azure's content filter end the job at once, with one call each. */
    @Test
    void clientErrorsAreTerminalAndNeverRetried() {
        Map<String, Object[]> cases = new java.util.LinkedHashMap<>();
        cases.put("400", new Object[] {400, azureError("invalid_request_error", "Invalid file format. Supported formats: "
                + "['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm']"), "terminal_request"});
        cases.put("401", new Object[] {401, azureError("401", "Access denied due to invalid subscription key or wrong API "
                + "endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint "
                + "for your resource."), "auth"});
        cases.put("403", new Object[] {403, azureError("403", "Public access is disabled. Please configure private endpoint."), "auth"});
        cases.put("404", new Object[] {404, azureError("DeploymentNotFound", "The API deployment for this resource does not "
                + "exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."),
                "terminal_request"});
        cases.put("filter", new Object[] {400, "{\"error\": {\"code\": \"content_filter\", \"message\": \"The response was "
                + "filtered due to the prompt triggering Azure OpenAI's content management policy.\", \"param\": \"prompt\", "
                + "\"status\": 400, \"inner_error\": {\"code\": \"ResponsibleAIPolicyViolation\", \"content_filter_results\": "
                + "{\"hate\": {\"filtered\": true, \"severity\": \"high\"}}}}}", "declined"});
        Map<String, UUID> jobs = new java.util.LinkedHashMap<>();
        Map<String, String> tags = new HashMap<>();
        cases.forEach((name, c) -> {
            String tag = Jobs.tag();
            tags.put(name, tag);
            azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus((Integer) c[0])
                    .withHeader("Content-Type", "application/json").withBody((String) c[1])));
            jobs.put(name, transcribe(tag));
        });
        jobs.values().forEach(Jobs::awaitFinal);

        cases.forEach((name, c) -> {
            UUID id = jobs.get(name);
            assertThat(job(id)).as(name + ": %s", job(id)).containsEntry("status", "failed")
                    .containsEntry("error_category", c[2]).containsEntry("attempts", 1);
            assertThat(calls(tags.get(name))).as(name).hasSize(1);
        });
        assertThat((String) job(jobs.get("404")).get("error_message")).contains("DeploymentNotFound").contains("deployment");
        assertThat((String) job(jobs.get("filter")).get("error_message")).contains("content filter");
        assertThat((String) attempt(jobs.get("400"), 1).get("response_excerpt")).contains("Invalid file format");
    }

    /** 5xx and 408 are transient: retried after the backoff, the job succeeds on its next attempt. */
    @Test
    void serverErrorsAndTimeoutsOfTheServiceAreRetried() {
        Map<String, Integer> statuses = Map.of("503", 503, "500", 500, "408", 408);
        Map<String, UUID> jobs = new HashMap<>();
        Map<String, String> tags = new HashMap<>();
        statuses.forEach((name, status) -> {
            String tag = Jobs.tag();
            tags.put(name, tag);
            azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag)
                    .whenScenarioStateIs(Scenario.STARTED).willSetStateTo("ok")
                    .willReturn(aResponse().withStatus(status).withHeader("Content-Type", "application/json")
                            .withBody(azureError(name, "The server had an error while processing your request. Sorry about that!"))));
            azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(VERBOSE)));
            jobs.put(name, transcribe(tag));
        });
        jobs.values().forEach(Jobs::awaitFinal);

        statuses.forEach((name, status) -> {
            UUID id = jobs.get(name);
            assertThat(job(id)).as(name + ": %s", job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            assertThat(attempt(id, 1)).as(name).containsEntry("error_category", "transient").containsEntry("http_status", status)
                    .containsEntry("outcome", "retry_wait");
            assertThat(calls(tags.get(name))).as(name).hasSize(2);
        });
    }

    /**
     * A reply lost after the request went out — the connection reset, or no answer within the call deadline —
     * is ambiguous, as for openai: submission_unknown, never resent blindly (Azure has no idempotency key).
     */
    @Test
    void aLostReplyIsSubmissionUnknownAndNotResent() {
        String reset = Jobs.tag();
        azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(reset))
                .willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER)));
        String slow = Jobs.tag();
        azure.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(slow))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(VERBOSE)
                        .withFixedDelay((int) DEADLINE_MS + 2000)));
        UUID lost = transcribe(reset);
        UUID late = transcribe(slow);
        Jobs.awaitStatus(lost, "submission_unknown");
        Jobs.awaitStatus(late, "submission_unknown");

        for (UUID id : List.of(lost, late)) {
            assertThat(attempt(id, 1)).containsEntry("outcome", "submission_unknown").containsEntry("error_category", "ambiguous");
            assertThat(job(id)).containsEntry("attempts", 1);
        }
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(4)).until(() -> calls(reset).size() == 1
                && calls(slow).size() == 1 && "submission_unknown".equals(Jobs.status(lost)) && "submission_unknown".equals(Jobs.status(late)));
    }
}
