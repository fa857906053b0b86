package io.jobgate.worker;

import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
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
 * The Gemini transcription adapter (routes/providers/gemini.camel.yaml, a drop-in off by default) through the real
 * worker, against a WireMock stand-in of the Gemini API's generateContent (ai.google.dev: audio, troubleshooting):
 * the model's path, the x-goog-api-key header, the audio inline as base64, the transcript in the candidate's parts,
 * usageMetadata's tokens, and Google's error bodies (RetryInfo and QuotaFailure on a 429).
 */
class GeminiAdapterTest extends GatewayTestBase {

    static final String KEY = "gemini-test-key-7d2a";
    static final String PATH = "/v1beta/models/gemini-test:generateContent";
    static final long DEADLINE_MS = 2500;

    WireMockServer google;

    @Override
    protected Map<String, String> settings() throws Exception {
        google = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.provider.gemini.enabled", "true",
                "jobgate.provider.gemini.base-url", google.baseUrl(),
                "jobgate.provider.gemini.api-key", KEY,
                "jobgate.provider.gemini.model", "gemini-test",
                "jobgate.provider.gemini.daily-quota-wait-seconds", "2",
                "jobgate.provider.gemini.call-deadline-ms", Long.toString(DEADLINE_MS));
    }

    static final AtomicInteger UPLOADS = new AtomicInteger();

    /** A transcription job naming gemini; {@code tag} travels in the vocabulary hint (the instruction). */
    UUID transcribe(String tag) {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1300 + UPLOADS.incrementAndGet() * 10));
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"gemini\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"de\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag
                + "\"}, {\"term\": \"Kube \\\"rnetes\\\"\"}]}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    List<LoggedRequest> calls(String tag) {
        return google.findAll(postRequestedFor(urlPathEqualTo(PATH)).withRequestBody(containing(tag)));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts FROM jobs WHERE job_id = ?", id);
    }

    static Map<String, Object> attempt(UUID id, int n) {
        return Db.single("SELECT outcome, error_category, error_message, http_status, retry_after, retry_after_understood, "
                + "next_attempt_at, billed_units, billed_unit, response_excerpt FROM attempts WHERE job_id = ? AND attempt = ?", id, n);
    }

    static String googleError(int code, String status, String message, String details) {
        return "{\"error\": {\"code\": " + code + ", \"message\": \"" + message + "\", \"status\": \"" + status
                + "\", \"details\": [" + details + "]}}";
    }

    static final String ANSWER = "{\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Guten Tag, \\\"danke\\\" \"}, "
            + "{\"text\": \"für Ihren Anruf.\"}], \"role\": \"model\"}, \"finishReason\": \"STOP\", \"index\": 0}], "
            + "\"usageMetadata\": {\"promptTokenCount\": 120, \"candidatesTokenCount\": 14, \"totalTokenCount\": 134, "
            + "\"promptTokensDetails\": [{\"modality\": \"AUDIO\", \"tokenCount\": 80}, {\"modality\": \"TEXT\", \"tokenCount\": 40}]}, "
            + "\"modelVersion\": \"gemini-test\", \"responseId\": \"gem-resp-1\"}";

    @Test
    void transcribesTheAudioSentInlineWithItsKeyAndBillsTheTokens() throws Exception {
        String tag = Jobs.tag();
        google.stubFor(post(urlPathEqualTo(PATH)).withHeader("x-goog-api-key", equalTo(KEY)).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(ANSWER)));
        UUID id;
        List<String> lines;
        try (LogCapture log = new LogCapture()) {
            id = transcribe(tag);
            Jobs.awaitFinal(id);
            lines = log.lines();
        }

        assertThat(job(id)).as("%s", job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        JsonNode output = Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + id + "/output"));
        assertThat(output.path("text").asText()).as("the parts' text joined").isEqualTo("Guten Tag, \"danke\" für Ihren Anruf.");

        LoggedRequest call = calls(tag).get(0);
        assertThat(call.getUrl()).isEqualTo(PATH);
        assertThat(call.getHeader("x-goog-api-key")).isEqualTo(KEY);
        assertThat(call.containsHeader("Authorization")).isFalse();
        assertThat(call.getHeader("Content-Type")).startsWith("application/json");
        JsonNode parts = Json.MAPPER.readTree(call.getBodyAsString()).path("contents").path(0).path("parts");
        assertThat(parts).hasSize(2);
        String instruction = parts.path(0).path("text").asText();
        assertThat(instruction).startsWith("Transcribe this audio verbatim.").contains("language is de")
                .contains(tag + ", Kube \"rnetes\"").doesNotContain("speaker turns");
        JsonNode inline = parts.path(1).path("inline_data");
        assertThat(inline.path("mime_type").asText()).isEqualTo("audio/wav");
        byte[] audio = Base64.getDecoder().decode(inline.path("data").asText());
        assertThat(audio).startsWith("RIFF".getBytes());
        String sha256 = (String) Db.single("SELECT source_sha256 FROM jobs WHERE job_id = ?", id).get("source_sha256");
        assertThat(io.jobgate.common.Digests.sha256Hex(audio)).as("the uploaded audio, as stored by digest").isEqualTo(sha256);

        Map<String, Object> attempt = Db.single("SELECT billed_units, billed_unit, provider_request_id, adapter_revision "
                + "FROM attempts WHERE job_id = ?", id);
        assertThat((java.math.BigDecimal) attempt.get("billed_units")).isEqualByComparingTo("134");
        assertThat(attempt).containsEntry("billed_unit", "tokens").containsEntry("provider_request_id", "gem-resp-1");
        assertThat((String) attempt.get("adapter_revision")).matches("gemini-transcription-1@[0-9a-f]{10}");
        assertThat(lines).as("the key is never logged").noneMatch(l -> l.contains(KEY));
    }

    static final String RETRY_INFO = "{\"@type\": \"type.googleapis.com/google.rpc.RetryInfo\", \"retryDelay\": \"1s\"}";

    static String quotaFailure(String quotaId) {
        return "{\"@type\": \"type.googleapis.com/google.rpc.QuotaFailure\", \"violations\": [{\"quotaMetric\": "
                + "\"generativelanguage.googleapis.com/generate_content_free_tier_requests\", \"quotaId\": \"" + quotaId
                + "\", \"quotaDimensions\": {\"location\": \"global\", \"model\": \"gemini-test\"}, \"quotaValue\": \"10\"}]}";
    }

    /** A 429 waits its RetryInfo.retryDelay; a spent daily quota (PerDay quotaId) waits daily-quota-wait-seconds. */
    @Test
    void aRateLimitIsRetriedNoSoonerThanItsRetryDelay() {
        Map<String, String> bodies = Map.of(
                "minute", googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.",
                        quotaFailure("GenerateRequestsPerMinutePerProjectPerModel-FreeTier") + ", " + RETRY_INFO),
                "day", googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.",
                        quotaFailure("GenerateRequestsPerDayPerProjectPerModel-FreeTier") + ", " + RETRY_INFO));
        Map<String, String> expected = Map.of("minute", "1", "day", "2");
        for (String name : List.of("minute", "day")) {
            String tag = Jobs.tag();
            google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag)
                    .whenScenarioStateIs(Scenario.STARTED).willSetStateTo("ok")
                    .willReturn(aResponse().withStatus(429).withHeader("Content-Type", "application/json").withBody(bodies.get(name))));
            google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(ANSWER)));
            UUID id = transcribe(tag);
            Jobs.awaitFinal(id);

            assertThat(job(id)).as(name + ": %s", job(id)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            Map<String, Object> first = attempt(id, 1);
            assertThat(first).as(name).containsEntry("error_category", "rate_limited").containsEntry("http_status", 429)
                    .containsEntry("retry_after", expected.get(name)).containsEntry("retry_after_understood", true);
            assertThat((String) first.get("error_message")).as(name).contains(name.equals("day") ? "daily quota" : "rate limit");
            List<LoggedRequest> calls = calls(tag);
            assertThat(calls).hasSize(2);
            Instant sent = calls.get(0).getLoggedDate().toInstant();
            Instant due = ((java.sql.Timestamp) first.get("next_attempt_at")).toInstant();
            assertThat(due).as(name).isAfterOrEqualTo(sent.plusSeconds(Long.parseLong(expected.get(name))).minusMillis(50));
            assertThat(calls.get(1).getLoggedDate().toInstant()).isAfterOrEqualTo(due.truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
        }
    }

    /** 400 INVALID_ARGUMENT and 404 NOT_FOUND end the job at once; 403 and an invalid key are auth. */
    @Test
    void clientErrorsAreTerminalAndNeverRetried() {
        Map<String, Object[]> cases = new java.util.LinkedHashMap<>();
        cases.put("400", new Object[] {400, googleError(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.", ""),
                "terminal_request"});
        cases.put("404", new Object[] {404, googleError(404, "NOT_FOUND", "models/gemini-test is not found for API version v1beta.", ""),
                "terminal_request"});
        cases.put("403", new Object[] {403, googleError(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers.", ""), "auth"});
        cases.put("key", new Object[] {400, googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                "{\"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\", \"reason\": \"API_KEY_INVALID\", \"domain\": \"googleapis.com\"}"),
                "auth"});
        Map<String, UUID> jobs = new java.util.LinkedHashMap<>();
        Map<String, String> tags = new java.util.HashMap<>();
        cases.forEach((name, c) -> {
            String tag = Jobs.tag();
            tags.put(name, tag);
            google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).willReturn(aResponse().withStatus((Integer) c[0])
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
        assertThat((String) job(jobs.get("400")).get("error_message")).contains("INVALID_ARGUMENT");
        assertThat((String) attempt(jobs.get("400"), 1).get("response_excerpt")).contains("payload size exceeds");
    }

    /** 503 UNAVAILABLE (and 500) are transient: retried after the backoff, the job succeeds on its next attempt. */
    @Test
    void serverErrorsAreRetried() {
        Map<String, Integer> statuses = Map.of("UNAVAILABLE", 503, "INTERNAL", 500);
        Map<String, UUID> jobs = new java.util.HashMap<>();
        Map<String, String> tags = new java.util.HashMap<>();
        statuses.forEach((name, status) -> {
            String tag = Jobs.tag();
            tags.put(name, tag);
            google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag)
                    .whenScenarioStateIs(Scenario.STARTED).willSetStateTo("ok")
                    .willReturn(aResponse().withStatus(status).withHeader("Content-Type", "application/json")
                            .withBody(googleError(status, name, "The model is overloaded. Please try again later.", ""))));
            google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(ANSWER)));
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

    /** A reply lost after the request went out is ambiguous: submission_unknown, never resent (no idempotency key). */
    @Test
    void aLostReplyIsSubmissionUnknownAndNotResent() {
        String reset = Jobs.tag();
        google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(reset))
                .willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER)));
        String slow = Jobs.tag();
        google.stubFor(post(urlPathEqualTo(PATH)).withRequestBody(containing(slow))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json").withBody(ANSWER)
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
