package io.jobgate.summary;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.ResponseDefinitionBuilder;
import com.github.tomakehurst.wiremock.http.Fault;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.Test;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.containing;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlMatching;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The Amazon Bedrock Converse summary adapter (routes/providers/amazon-bedrock.camel.yaml, a drop-in off by default)
 * through the real gateway, against a WireMock stand-in of the documented API (API_runtime_Converse; the error codes
 * of the Bedrock user guide): POST /model/{modelId}/converse with the model id's ':' encoded, SigV4 for the service
 * bedrock — every request's signature recomputed here with the test's secret —, system and user content blocks,
 * inferenceConfig.maxTokens, the answer's content blocks and usage, stopReason, and errors as x-amzn-ErrorType with
 * {"message"}. The transcript comes from OpenAI's transcription stand-in on the same server.
 */
class BedrockSummaryAdapterTest extends GatewayTestBase {

    static final String KEY_ID = "AKIDJOBGATEBEDROCK01";
    static final String SECRET = "jobgate/bedrock+Secret/0123456789abcdefABCDEF";
    static final String REGION = "eu-central-1";
    static final String PATH = "/model/amazon.nova-lite-v1%3A0/converse";

    WireMockServer aws;

    @Override
    protected Map<String, String> settings() throws Exception {
        aws = fakeProvider();
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.backoff-base-ms", "100"),
                Map.entry("jobgate.summaries.period-ms", "100"),
                Map.entry("jobgate.provider.openai.base-url", aws.baseUrl() + "/v1"),
                Map.entry("jobgate.provider.openai.api-key", "sk-test-123"),
                Map.entry("jobgate.provider.amazon-bedrock.enabled", "true"),
                Map.entry("jobgate.provider.amazon-bedrock.base-url", aws.baseUrl()),
                Map.entry("jobgate.provider.amazon-bedrock.aws-region", REGION),
                Map.entry("jobgate.provider.amazon-bedrock.aws-access-key-id", KEY_ID),
                Map.entry("jobgate.provider.amazon-bedrock.aws-secret-access-key", SECRET),
                Map.entry("jobgate.provider.amazon-bedrock.call-deadline-ms", "3000"));
    }

    static String answer(String text, String stopReason, int in, int out) {
        return "{\"output\": {\"message\": {\"role\": \"assistant\", \"content\": [{\"text\": " + Json.write(text) + "}]}}, "
                + "\"stopReason\": \"" + stopReason + "\", \"usage\": {\"inputTokens\": " + in + ", \"outputTokens\": " + out
                + ", \"totalTokens\": " + (in + out) + "}, \"metrics\": {\"latencyMs\": 412}}";
    }

    static ResponseDefinitionBuilder ok(String body) {
        return aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                .withHeader("x-amzn-RequestId", "bedrock-req-" + body.length()).withBody(body);
    }

    static ResponseDefinitionBuilder error(int status, String type, String message) {
        return aResponse().withStatus(status).withHeader("Content-Type", "application/json")
                .withHeader("x-amzn-RequestId", UUID.randomUUID().toString())
                .withHeader("x-amzn-ErrorType", type + ":http://internal.amazon.com/coral/com.amazon.bedrock/")
                .withBody("{\"message\": " + Json.write(message) + "}");
    }

    /** A call job whose summary goes to Bedrock; {@code tag} is in the transcript the stand-in answers. */
    UUID call(String tag) {
        aws.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio"))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody("{\"text\": " + Json.write("Kunde " + tag + " bittet um ein Angebot bis Freitag.")
                                + ", \"usage\": {\"type\": \"duration\", \"seconds\": 4}}")));
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(2600 + Math.abs(tag.hashCode() % 700)));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"de\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag + "-audio\"}]},"
                + " \"summary\": {\"preset_id\": \"call-summary\", \"provider\": \"amazon-bedrock\"}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** The summary job of a call, once ordered. */
    UUID summaryOf(UUID call) {
        await().atMost(Duration.ofSeconds(30)).until(() -> Db.count("SELECT count(*) FROM jobs WHERE parent_job_id = ?", call) == 1);
        return (UUID) Db.single("SELECT job_id FROM jobs WHERE parent_job_id = ?", call).get("job_id");
    }

    List<LoggedRequest> calls(String tag) {
        return aws.findAll(postRequestedFor(urlMatching("/model/.*")).withRequestBody(containing(tag)));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, error_category, error_message, attempts FROM jobs WHERE job_id = ?", id);
    }

    @Test
    void summarisesWithASignedConverseCallAndBillsTheTokens() throws Exception {
        String tag = Jobs.tag();
        aws.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(ok(answer("Angebot bis Freitag.", "end_turn", 210, 9))));
        UUID call = call(tag);
        UUID summary = summaryOf(call);
        Jobs.awaitFinal(summary);

        assertThat(job(summary)).as("%s", job(summary)).containsEntry("status", "succeeded").containsEntry("attempts", 1);
        assertThat(Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + summary + "/output")).path("text").asText())
                .isEqualTo("Angebot bis Freitag.");
        LoggedRequest converse = calls(tag).get(0);
        assertThat(converse.getUrl()).as("the model id's ':' encoded, as the AWS SDKs send it").isEqualTo(PATH);
        assertThat(signatureProblem(converse)).isNull();
        JsonNode body = Json.MAPPER.readTree(converse.getBodyAsString());
        assertThat(body.path("system").path(0).path("text").asText()).startsWith("You summarise a recorded sales call");
        assertThat(body.path("messages").path(0).path("role").asText()).isEqualTo("user");
        assertThat(body.path("messages").path(0).path("content").path(0).path("text").asText())
                .isEqualTo("Kunde " + tag + " bittet um ein Angebot bis Freitag.");
        assertThat(body.path("inferenceConfig").path("maxTokens").asInt()).isEqualTo(1024);

        Map<String, Object> attempt = Db.single("SELECT billed_units, billed_unit, provider_request_id, adapter_revision FROM attempts WHERE job_id = ?", summary);
        assertThat((BigDecimal) attempt.get("billed_units")).isEqualByComparingTo("219");
        assertThat(attempt).containsEntry("billed_unit", "tokens");
        assertThat((String) attempt.get("provider_request_id")).startsWith("bedrock-req-");
        assertThat((String) attempt.get("adapter_revision")).startsWith("amazon-bedrock-converse-1@");
        // Priced at Nova Lite's list: input tokens at 60 micros a thousand, the answer's cap at 240.
        Map<String, Object> debit = Db.single("SELECT -amount_micros AS micros, units FROM ledger WHERE job_id = ? AND entry_type = 'debit'", summary);
        long inputTokens = ((BigDecimal) debit.get("units")).longValue() - 1024;
        assertThat(((Number) debit.get("micros")).longValue()).isEqualTo((inputTokens * 60 + 1024 * 240 + 999) / 1000);
    }

    /**
     * ThrottlingException (429) is a rate limit: Bedrock sends no Retry-After, so the retry waits the worker's backoff
     * (and the provider's gate closes until then); a 503 is transient. Both are retried and succeed.
     */
    @Test
    void throttlingAndUnavailabilityAreRetried() {
        for (String[] c : new String[][] {{"429", "ThrottlingException", "Too many requests, please wait before trying again."},
                {"503", "ServiceUnavailableException", "Bedrock is unable to process your request."}}) {
            String tag = Jobs.tag();
            aws.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                    .willSetStateTo("ok").willReturn(error(Integer.parseInt(c[0]), c[1], c[2])));
            aws.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(ok(answer("Kurz.", "end_turn", 100, 2))));
            UUID summary = summaryOf(call(tag));
            Jobs.awaitFinal(summary);

            assertThat(job(summary)).as(c[1]).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            Map<String, Object> first = Db.single("SELECT error_category, error_message, http_status, next_attempt_at FROM attempts "
                    + "WHERE job_id = ? AND attempt = 1", summary);
            assertThat(first).as(c[1]).containsEntry("error_category", c[0].equals("429") ? "rate_limited" : "transient")
                    .containsEntry("http_status", Integer.parseInt(c[0]));
            assertThat((String) first.get("error_message")).contains(c[1]);
            List<LoggedRequest> sent = calls(tag);
            assertThat(sent).hasSize(2);
            Instant due = ((java.sql.Timestamp) first.get("next_attempt_at")).toInstant();
            assertThat(due).as("a backoff, not at once").isAfter(sent.get(0).getLoggedDate().toInstant());
            assertThat(sent.get(1).getLoggedDate().toInstant()).as("not before its backoff")
                    .isAfterOrEqualTo(due.truncatedTo(java.time.temporal.ChronoUnit.MILLIS));
        }
    }

    /** A ValidationException is the request's fault: never retried, the summary refunded, the transcript kept. */
    @Test
    void aValidationErrorFailsTheSummaryAloneAndRefundsIt() throws Exception {
        String tag = Jobs.tag();
        aws.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(error(400, "ValidationException", "Input is too long for requested model.")));
        UUID call = call(tag);
        UUID summary = summaryOf(call);
        Jobs.awaitFinal(summary);

        assertThat(job(summary)).containsEntry("status", "failed").containsEntry("error_category", "terminal_request");
        assertThat((String) job(summary).get("error_message")).contains("ValidationException").contains("too long");
        assertThat(calls(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", summary)).isEqualTo(1);
        assertThat(job(call)).containsEntry("status", "succeeded");
        assertThat(Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + call + "/output")).path("text").asText()).contains(tag);
        JsonNode view = api.get(ACME, "/v1/jobs/" + call).json();
        assertThat(view.path("summary").path("status").asText()).isEqualTo("failed");
        assertThat(view.path("summary").path("error").path("category").asText()).isEqualTo("terminal_request");
    }

    /** A guardrail that intervened answers 200 without a summary: declined, never retried. */
    @Test
    void aGuardrailInterventionIsDeclined() {
        String tag = Jobs.tag();
        aws.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(ok(answer("Sorry, the model cannot answer this question.", "guardrail_intervened", 150, 10))));
        UUID summary = summaryOf(call(tag));
        Jobs.awaitFinal(summary);
        assertThat(job(summary)).containsEntry("status", "failed").containsEntry("error_category", "declined");
        assertThat(calls(tag)).hasSize(1);
    }

    /** The request was sent, its reply lost: submission_unknown (Converse has no idempotency key), never resent. */
    @Test
    void aLostReplyIsNeverResentBlindly() {
        String tag = Jobs.tag();
        aws.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER)));
        UUID summary = summaryOf(call(tag));
        Jobs.awaitStatus(summary, "submission_unknown");
        assertThat(calls(tag)).hasSize(1);
        assertThat(Db.single("SELECT error_category FROM attempts WHERE job_id = ? AND attempt = 1", summary))
                .containsEntry("error_category", "ambiguous");
    }

    static final Pattern AUTHORIZATION = Pattern.compile("AWS4-HMAC-SHA256 Credential=([^/]+)/(\\d{8})/([^/]+)/bedrock/aws4_request, "
            + "SignedHeaders=([a-z0-9-]+(?:;[a-z0-9-]+)*), Signature=([0-9a-f]{64})");

    /** Why Bedrock would refuse this request's signature (SigV4, recomputed with the test's secret), or null. */
    static String signatureProblem(LoggedRequest request) throws Exception {
        String authorization = request.getHeader("Authorization");
        Matcher m = AUTHORIZATION.matcher(authorization == null ? "" : authorization);
        if (!m.matches()) {
            return "Authorization " + authorization;
        }
        String date = request.getHeader("X-Amz-Date");
        if (!m.group(1).equals(KEY_ID) || !m.group(3).equals(REGION) || date == null || !date.startsWith(m.group(2))) {
            return "credential scope " + m.group(1) + "/" + m.group(2) + "/" + m.group(3) + " at " + date;
        }
        List<String> signed = List.of(m.group(4).split(";"));
        if (!signed.containsAll(List.of("host", "x-amz-date", "content-type"))) {
            return "SignedHeaders " + m.group(4);
        }
        // SigV4 for services other than S3: the path as sent, each segment encoded once more (%3A becomes %253A).
        String canonicalPath = request.getUrl().replace("%", "%25");
        StringBuilder canonical = new StringBuilder("POST\n" + canonicalPath + "\n\n");
        for (String header : signed) {
            canonical.append(header).append(':').append(request.getHeader(header).trim()).append('\n');
        }
        canonical.append('\n').append(m.group(4)).append('\n').append(hex(sha256(request.getBody())));
        String toSign = "AWS4-HMAC-SHA256\n" + date + "\n" + m.group(2) + "/" + REGION + "/bedrock/aws4_request\n"
                + hex(sha256(canonical.toString().getBytes(StandardCharsets.UTF_8)));
        byte[] key = hmac(("AWS4" + SECRET).getBytes(StandardCharsets.UTF_8), m.group(2));
        key = hmac(hmac(hmac(key, REGION), "bedrock"), "aws4_request");
        String expected = hex(hmac(key, toSign));
        return expected.equals(m.group(5)) ? null : "signature does not match (canonical request:\n" + canonical + ")";
    }

    static byte[] sha256(byte[] bytes) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(bytes);
    }

    static byte[] hmac(byte[] key, String data) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    }

    static String hex(byte[] bytes) {
        return HexFormat.of().formatHex(bytes);
    }
}
