package io.jobgate.summary;

import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.client.MappingBuilder;
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
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The two chat-completion summary adapters (docs/summaries.md, "Providers") through the real gateway and worker:
 * OpenAI's {@code openai-summary} (routes/providers/openai.camel.yaml) and Azure OpenAI's {@code azure-openai-summary}
 * (routes/providers/azure-openai.camel.yaml), each against a WireMock stand-in shaped like its public API
 * (OpenAI's chat/completions with a Bearer key, model and max_completion_tokens; Azure's deployment path with
 * api-version, the api-key header, max_tokens and no model). Every call's transcript comes from the OpenAI
 * transcription stand-in; the call job names its summary's provider in {@code summary.provider}. Each test runs
 * both adapters side by side, each job recognised by a tag that travels in its transcript.
 */
class ChatSummaryAdaptersTest extends GatewayTestBase {

    static final String OPENAI = "openai";
    static final String AZURE = "azure-openai";
    static final List<String> ADAPTERS = List.of(OPENAI, AZURE);

    static final String OPENAI_KEY = "sk-test-summaries-7c2e";
    static final String AZURE_KEY = "azure-chat-key-91ab";
    static final String DEPLOYMENT = "gpt-41-mini-calls";
    static final String OPENAI_PATH = "/v1/chat/completions";
    static final String AZURE_PATH = "/openai/deployments/" + DEPLOYMENT + "/chat/completions";

    WireMockServer openai;
    WireMockServer azure;

    @Override
    protected Map<String, String> settings() throws Exception {
        openai = fakeProvider();
        azure = fakeProvider();
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.backoff-base-ms", "100"),
                Map.entry("jobgate.summaries.period-ms", "100"),
                Map.entry("jobgate.provider.openai.base-url", openai.baseUrl() + "/v1"),
                Map.entry("jobgate.provider.openai.api-key", OPENAI_KEY),
                Map.entry("jobgate.provider.azure-openai.enabled", "true"),
                Map.entry("jobgate.provider.azure-openai.base-url", azure.baseUrl()),
                Map.entry("jobgate.provider.azure-openai.api-key", AZURE_KEY),
                Map.entry("jobgate.provider.azure-openai.chat-deployment", DEPLOYMENT));
    }

    // ---- the stand-ins ----------------------------------------------------------------------------------------

    WireMockServer server(String adapter) {
        return adapter.equals(OPENAI) ? openai : azure;
    }

    static String path(String adapter) {
        return adapter.equals(OPENAI) ? OPENAI_PATH : AZURE_PATH;
    }

    /** A stub of the adapter's chat completions for the call tagged {@code tag} (the tag is in its transcript). */
    static MappingBuilder chat(String adapter, String tag) {
        return post(urlPathEqualTo(path(adapter))).withRequestBody(containing(tag));
    }

    /** The chat requests the adapter's stand-in received for the call tagged {@code tag}. */
    List<LoggedRequest> calls(String adapter, String tag) {
        return server(adapter).findAll(postRequestedFor(urlPathEqualTo(path(adapter))).withRequestBody(containing(tag)));
    }

    static String transcriptText(String tag) {
        return "Customer " + tag + " asks for a \"discount\" on 40 seats; we agree to call back on Friday.";
    }

    /** OpenAI's chat.completion object (API reference, "The chat completion object"). */
    static String openaiCompletion(String content, String refusal, int prompt, int completion) {
        return "{\"id\": \"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\", \"object\": \"chat.completion\", \"created\": 1741569952, "
                + "\"model\": \"gpt-4.1-mini-2025-04-14\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", "
                + "\"content\": " + (content == null ? "null" : Json.write(content)) + ", \"refusal\": "
                + (refusal == null ? "null" : Json.write(refusal)) + ", \"annotations\": []}, \"logprobs\": null, "
                + "\"finish_reason\": \"stop\"}], \"usage\": {\"prompt_tokens\": " + prompt + ", \"completion_tokens\": " + completion
                + ", \"total_tokens\": " + (prompt + completion) + ", \"prompt_tokens_details\": {\"cached_tokens\": 0}, "
                + "\"completion_tokens_details\": {\"reasoning_tokens\": 0}}, \"service_tier\": \"default\", "
                + "\"system_fingerprint\": \"fp_6f2eabb9a5\"}";
    }

    /** Azure OpenAI's chat completion (inference 2024-10-21), with its prompt and completion filter results. */
    static String azureCompletion(String content, String finish, int prompt, int completion) {
        String filtered = "content_filter".equals(finish) ? "true, \"severity\": \"high\"" : "false, \"severity\": \"safe\"";
        return "{\"id\": \"chatcmpl-AzJ2kq1b7mXc0Yf3\", \"object\": \"chat.completion\", \"created\": 1741569952, "
                + "\"model\": \"gpt-4.1-mini-2025-04-14\", \"prompt_filter_results\": [{\"prompt_index\": 0, "
                + "\"content_filter_results\": {\"hate\": {\"filtered\": false, \"severity\": \"safe\"}}}], "
                + "\"choices\": [{\"index\": 0, \"finish_reason\": \"" + finish + "\", \"logprobs\": null, "
                + "\"message\": {\"role\": \"assistant\", \"content\": " + (content == null ? "null" : Json.write(content))
                + ", \"refusal\": null}, \"content_filter_results\": {\"hate\": {\"filtered\": " + filtered + "}}}], "
                + "\"usage\": {\"prompt_tokens\": " + prompt + ", \"completion_tokens\": " + completion + ", \"total_tokens\": "
                + (prompt + completion) + "}, \"system_fingerprint\": \"fp_ee1d74bde0\"}";
    }

    /** A successful chat completion of the adapter's API answering {@code text}, with its request id headers. */
    static ResponseDefinitionBuilder ok(String adapter, String text, int prompt, int completion) {
        ResponseDefinitionBuilder reply = aResponse().withStatus(200).withHeader("Content-Type", "application/json");
        return adapter.equals(OPENAI)
                ? reply.withHeader("x-request-id", "req_openai_" + prompt).withBody(openaiCompletion(text, null, prompt, completion))
                : reply.withHeader("apim-request-id", "apim-" + prompt).withHeader("x-request-id", "azreq-" + prompt)
                        .withBody(azureCompletion(text, "stop", prompt, completion));
    }

    /** An error in the shape both APIs share: {"error": {"message", "type", "param", "code"}}. */
    static ResponseDefinitionBuilder error(int status, String type, String code, String message) {
        return aResponse().withStatus(status).withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": " + Json.write(message) + ", \"type\": " + (type == null ? "null" : Json.write(type))
                        + ", \"param\": null, \"code\": " + (code == null ? "null" : Json.write(code)) + "}}");
    }

    static final AtomicInteger UPLOADS = new AtomicInteger();

    /** A call job (transcribed by OpenAI) whose summary goes to {@code adapter}; {@code tag} is in its transcript. */
    UUID call(String tag, String adapter) {
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio"))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody("{\"task\": \"transcribe\", \"language\": \"english\", \"duration\": 65.0, \"text\": "
                                + Json.write(transcriptText(tag)) + ", \"segments\": [], \"usage\": {\"type\": \"duration\", \"seconds\": 65}}")));
        // Bytes of their own per call (the same bytes again would be the same upload).
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(3100 + UPLOADS.incrementAndGet() * 10));
        assertThat(upload.status()).as(upload.text()).isIn(200, 201); // 200: the same bytes were uploaded before (by digest)
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag + "-audio\"}]},"
                + " \"summary\": {\"preset_id\": \"call-summary\", \"provider\": \"" + adapter + "\", \"inputs\": {\"focus\": \"next_steps\"}}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    /** The summary job of a call, once ordered. */
    static UUID summaryOf(UUID call) {
        await().atMost(Duration.ofSeconds(30)).until(() -> Db.count("SELECT count(*) FROM jobs WHERE parent_job_id = ?", call) == 1);
        return (UUID) Db.single("SELECT job_id FROM jobs WHERE parent_job_id = ?", call).get("job_id");
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, kind, provider, error_category, error_message, attempts FROM jobs WHERE job_id = ?", id);
    }

    static Map<String, Object> attempt(UUID id, int n) {
        return Db.single("SELECT outcome, error_category, error_message, http_status, retry_after, retry_after_understood, "
                + "ended_at, next_attempt_at, billed_units, billed_unit, provider_request_id, adapter_revision FROM attempts "
                + "WHERE job_id = ? AND attempt = ?", id, n);
    }

    static long ledger(UUID job, String entryType) {
        return Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = ?", job, entryType);
    }

    static long micros(UUID job, String entryType) {
        return ((Number) Db.single("SELECT amount_micros FROM ledger WHERE job_id = ? AND entry_type = ?", job, entryType)
                .get("amount_micros")).longValue();
    }

    JsonNode output(UUID job) throws Exception {
        return Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + job + "/output"));
    }

    // ---- 1. the happy path --------------------------------------------------------------------------------------

    /**
     * Each adapter sends its API's request — OpenAI: Bearer key, model, max_completion_tokens; Azure: the chat
     * deployment's path with api-version, api-key and no Authorization, max_tokens and no model — with the preset's
     * instruction as the system message and the transcript as the user's; the answer is the summary job's output
     * as {"text": ...}, and usage.total_tokens the attempt's billed tokens.
     */
    @Test
    void eachAdapterSendsItsApisChatRequestAndBillsTheTotalTokens() throws Exception {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> calls = new LinkedHashMap<>();
        Map<String, Integer> prompts = Map.of(OPENAI, 181, AZURE, 183);
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            server(adapter).stubFor(chat(adapter, tag)
                    .willReturn(ok(adapter, "Summary by " + adapter + ": a discount on 40 seats. Next: call on Friday.", prompts.get(adapter), 14)));
            calls.put(adapter, call(tag, adapter));
        }

        for (String adapter : ADAPTERS) {
            String tag = tags.get(adapter);
            UUID call = calls.get(adapter);
            UUID summary = summaryOf(call);
            Jobs.awaitFinal(summary);

            assertThat(job(summary)).as(adapter + ": %s", job(summary)).containsEntry("status", "succeeded")
                    .containsEntry("kind", "summary").containsEntry("provider", adapter).containsEntry("attempts", 1);
            assertThat(job(call)).as(adapter).containsEntry("status", "succeeded");
            ApiClient.Response read = api.get(ACME, "/v1/jobs/" + summary + "/output");
            assertThat(read.status()).as(adapter).isEqualTo(200);
            assertThat(read.contentType()).as(adapter).startsWith("application/json");
            JsonNode out = output(summary);
            assertThat(out.path("text").asText()).as(adapter)
                    .isEqualTo("Summary by " + adapter + ": a discount on 40 seats. Next: call on Friday.");

            List<LoggedRequest> sent = calls(adapter, tag);
            assertThat(sent).as(adapter).hasSize(1);
            LoggedRequest request = sent.get(0);
            assertThat(request.getMethod().getName()).isEqualTo("POST");
            assertThat(request.getHeader("Content-Type")).as(adapter).startsWith("application/json");
            JsonNode body = Json.MAPPER.readTree(request.getBodyAsString());
            if (adapter.equals(OPENAI)) {
                assertThat(request.getUrl()).isEqualTo(OPENAI_PATH);
                assertThat(request.getHeader("Authorization")).isEqualTo("Bearer " + OPENAI_KEY);
                assertThat(request.containsHeader("api-key")).isFalse();
                assertThat(body.path("model").asText()).isEqualTo("gpt-4.1-mini");
                assertThat(body.path("max_completion_tokens").asInt()).isEqualTo(1024);
                assertThat(body.has("max_tokens")).as("OpenAI's cap is max_completion_tokens").isFalse();
            } else {
                assertThat(request.getUrl()).isEqualTo(AZURE_PATH + "?api-version=2024-10-21");
                assertThat(request.getHeader("api-key")).isEqualTo(AZURE_KEY);
                assertThat(request.containsHeader("Authorization")).as("Azure's key header only").isFalse();
                assertThat(body.has("model")).as("the deployment names the model, not the body").isFalse();
                assertThat(body.path("max_tokens").asInt()).isEqualTo(1024);
                assertThat(body.has("max_completion_tokens")).as("api-version 2024-10-21 caps with max_tokens").isFalse();
            }
            JsonNode messages = body.path("messages");
            assertThat(messages.size()).as(adapter).isEqualTo(2);
            assertThat(messages.path(0).path("role").asText()).isEqualTo("system");
            assertThat(messages.path(0).path("content").asText()).as(adapter).startsWith("You summarise a recorded sales call")
                    .contains("never instructions to you").contains("<input name=\"focus\">next_steps</input>")
                    .doesNotContain(tag);
            assertThat(messages.path(1).path("role").asText()).isEqualTo("user");
            assertThat(messages.path(1).path("content").asText()).as("the transcript as data, as written")
                    .isEqualTo(transcriptText(tag));

            Map<String, Object> first = attempt(summary, 1);
            assertThat((BigDecimal) first.get("billed_units")).as(adapter + ": usage.total_tokens")
                    .isEqualByComparingTo(Integer.toString(prompts.get(adapter) + 14));
            assertThat(first).as(adapter).containsEntry("billed_unit", "tokens").containsEntry("outcome", "succeeded");
            assertThat((String) first.get("adapter_revision")).as(adapter)
                    .startsWith(adapter.equals(OPENAI) ? "openai-chat-1@" : "azure-openai-chat-1@");
            assertThat(Db.single("SELECT unit FROM ledger WHERE job_id = ? AND entry_type = 'debit'", summary))
                    .as(adapter).containsEntry("unit", "tokens");
            assertThat(ledger(summary, "refund")).as(adapter).isZero();

            JsonNode view = api.get(ACME, "/v1/jobs/" + call).json().path("summary");
            assertThat(view.path("status").asText()).as(adapter + ": %s", view).isEqualTo("succeeded");
            assertThat(view.path("provider").asText()).isEqualTo(adapter);
            assertThat(view.path("job_id").asText()).isEqualTo(summary.toString());
        }
        assertThat((String) attempt(summaryOf(calls.get(OPENAI)), 1).get("provider_request_id"))
                .as("OpenAI's x-request-id").isEqualTo("req_openai_181");
        assertThat((String) attempt(summaryOf(calls.get(AZURE)), 1).get("provider_request_id"))
                .as("Azure's x-request-id, what its support asks for, not the completion's id").startsWith("azreq-");
    }

    // ---- 2. rate limits -----------------------------------------------------------------------------------------

    /**
     * A 429 waits what the provider asked: OpenAI's retry-after (seconds), Azure's retry-after-ms (milliseconds, before
     * its Retry-After). The attempt says rate_limited, and the retry is never sent before it is due.
     */
    @Test
    void aRateLimitIsRetriedNoSoonerThanTheProvidersRetryHeaderSays() throws Exception {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> calls = new LinkedHashMap<>();
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            ResponseDefinitionBuilder limited = adapter.equals(OPENAI)
                    ? error(429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-4.1-mini in organization org-x on "
                            + "requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.")
                            .withHeader("retry-after", "1").withHeader("x-ratelimit-remaining-requests", "0")
                            .withHeader("x-ratelimit-reset-requests", "1s")
                    : error(429, null, "429", "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version "
                            + "2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 2 seconds.")
                            .withHeader("retry-after-ms", "1500").withHeader("retry-after", "3")
                            .withHeader("x-ratelimit-remaining-requests", "0");
            server(adapter).stubFor(chat(adapter, tag).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                    .willSetStateTo("ok").willReturn(limited));
            server(adapter).stubFor(chat(adapter, tag).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(ok(adapter, "After the wait.", 120, 4)));
            calls.put(adapter, call(tag, adapter));
        }

        for (String adapter : ADAPTERS) {
            UUID summary = summaryOf(calls.get(adapter));
            Jobs.awaitFinal(summary);
            assertThat(job(summary)).as(adapter + ": %s", job(summary)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            assertThat(output(summary).path("text").asText()).isEqualTo("After the wait.");

            Map<String, Object> first = attempt(summary, 1);
            assertThat(first).as(adapter).containsEntry("error_category", "rate_limited").containsEntry("http_status", 429)
                    .containsEntry("retry_after", adapter.equals(OPENAI) ? "1" : "1500ms")
                    .containsEntry("retry_after_understood", true);
            List<LoggedRequest> sent = calls(adapter, tags.get(adapter));
            assertThat(sent).as(adapter).hasSize(2);
            Instant firstSent = sent.get(0).getLoggedDate().toInstant();
            Instant due = ((Timestamp) first.get("next_attempt_at")).toInstant();
            if (adapter.equals(OPENAI)) {
                assertThat(due).as("retry-after: 1").isAfterOrEqualTo(firstSent.plusSeconds(1));
            } else {
                // Set from the moment the 429 was read, between the sending and the attempt's close (recorded after).
                Instant closed = ((Timestamp) first.get("ended_at")).toInstant();
                assertThat(due).as("retry-after-ms: 1500").isAfterOrEqualTo(firstSent.plusMillis(1500))
                        .as("the milliseconds, not retry-after's 3 s").isBeforeOrEqualTo(closed.plusMillis(1500));
            }
            assertThat(sent.get(1).getLoggedDate().toInstant()).as(adapter + ": not before it is due")
                    .isAfterOrEqualTo(due.truncatedTo(ChronoUnit.MILLIS));
        }
    }

    // ---- 3. a client error ---------------------------------------------------------------------------------------

    /** A 4xx is the request's fault: one call, the summary fails and its debit is refunded; the transcript stays paid and readable. */
    @Test
    void aClientErrorFailsTheSummaryAloneWithoutRetryAndRefundsIt() throws Exception {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> calls = new LinkedHashMap<>();
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            server(adapter).stubFor(chat(adapter, tag).willReturn(adapter.equals(OPENAI)
                    ? error(400, "invalid_request_error", "string_above_max_length", "Invalid 'messages[1].content': string too "
                            + "long. Expected a string with maximum length 1048576, but got a string with length 2097152 instead.")
                    : error(400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is "
                            + "128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.")));
            calls.put(adapter, call(tag, adapter));
        }

        for (String adapter : ADAPTERS) {
            UUID call = calls.get(adapter);
            UUID summary = summaryOf(call);
            Jobs.awaitFinal(summary);

            assertThat(job(summary)).as(adapter + ": %s", job(summary)).containsEntry("status", "failed")
                    .containsEntry("error_category", "terminal_request").containsEntry("attempts", 1);
            assertThat(attempt(summary, 1)).as(adapter).containsEntry("http_status", 400);
            assertThat(calls(adapter, tags.get(adapter))).as(adapter + ": a 4xx is never retried").hasSize(1);
            assertThat(ledger(summary, "refund")).as(adapter + ": refunded once").isEqualTo(1);
            assertThat(micros(summary, "refund")).as(adapter + ": the summary's whole price back").isEqualTo(-micros(summary, "debit"));

            assertThat(job(call)).as(adapter + ": the transcript's job").containsEntry("status", "succeeded");
            assertThat(ledger(call, "refund")).as(adapter + ": the transcript stays paid").isZero();
            assertThat(output(call).path("text").asText()).as(adapter).isEqualTo(transcriptText(tags.get(adapter)));
            JsonNode view = api.get(ACME, "/v1/jobs/" + call).json();
            assertThat(view.path("status").asText()).isEqualTo("succeeded");
            assertThat(view.path("summary").path("status").asText()).as(adapter + ": %s", view.path("summary")).isEqualTo("failed");
            assertThat(view.path("summary").path("error").path("category").asText()).isEqualTo("terminal_request");
        }
    }

    // ---- 4. a server error ---------------------------------------------------------------------------------------

    /** A 5xx is transient: retried after the backoff, the summary succeeds on its second attempt. */
    @Test
    void aServerErrorIsRetriedAndTheSummarySucceeds() throws Exception {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> calls = new LinkedHashMap<>();
        Map<String, Integer> statuses = Map.of(OPENAI, 500, AZURE, 503);
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            server(adapter).stubFor(chat(adapter, tag).inScenario(tag).whenScenarioStateIs(Scenario.STARTED).willSetStateTo("ok")
                    .willReturn(error(statuses.get(adapter), "server_error", null,
                            "The server had an error while processing your request. Sorry about that!")));
            server(adapter).stubFor(chat(adapter, tag).inScenario(tag).whenScenarioStateIs("ok")
                    .willReturn(ok(adapter, "Second time lucky.", 110, 4)));
            calls.put(adapter, call(tag, adapter));
        }

        for (String adapter : ADAPTERS) {
            UUID summary = summaryOf(calls.get(adapter));
            Jobs.awaitFinal(summary);
            assertThat(job(summary)).as(adapter + ": %s", job(summary)).containsEntry("status", "succeeded").containsEntry("attempts", 2);
            assertThat(attempt(summary, 1)).as(adapter).containsEntry("error_category", "transient")
                    .containsEntry("http_status", statuses.get(adapter)).containsEntry("outcome", "retry_wait");
            assertThat(attempt(summary, 2)).as(adapter).containsEntry("outcome", "succeeded").containsEntry("billed_unit", "tokens");
            assertThat(calls(adapter, tags.get(adapter))).as(adapter).hasSize(2);
            assertThat(output(summary).path("text").asText()).isEqualTo("Second time lucky.");
            assertThat(ledger(summary, "refund")).as(adapter).isZero();
        }
    }

    // ---- 5. a lost reply -----------------------------------------------------------------------------------------

    /** The request went out and its reply was lost: submission_unknown (neither API takes an idempotency key), never resent. */
    @Test
    void aLostReplyIsSubmissionUnknownAndNeverResent() {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> summaries = new LinkedHashMap<>();
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            server(adapter).stubFor(chat(adapter, tag).willReturn(aResponse().withFault(Fault.CONNECTION_RESET_BY_PEER)));
            summaries.put(adapter, summaryOf(call(tag, adapter)));
        }

        for (String adapter : ADAPTERS) {
            UUID summary = summaries.get(adapter);
            Jobs.awaitStatus(summary, "submission_unknown");
            assertThat(attempt(summary, 1)).as(adapter).containsEntry("outcome", "submission_unknown")
                    .containsEntry("error_category", "ambiguous");
            assertThat(job(summary)).as(adapter).containsEntry("attempts", 1);
        }
        // Longer than several backoffs (100 ms): still one request each, still submission_unknown.
        await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(5)).until(() -> ADAPTERS.stream().allMatch(adapter ->
                calls(adapter, tags.get(adapter)).size() == 1 && "submission_unknown".equals(Jobs.status(summaries.get(adapter)))));
    }

    // ---- 6. a refusal or content filter ---------------------------------------------------------------------------

    /**
     * No summary because the model refused (OpenAI's 200 with message.refusal) or Azure's filter withheld it (a 200 with
     * finish_reason content_filter; a 400 content_filter on the prompt): declined, never retried, refunded.
     */
    @Test
    void aRefusalOrContentFilterIsDeclined() throws Exception {
        Map<String, String> tags = new LinkedHashMap<>();
        Map<String, UUID> calls = new LinkedHashMap<>();
        for (String adapter : ADAPTERS) {
            String tag = Jobs.tag();
            tags.put(adapter, tag);
            server(adapter).stubFor(chat(adapter, tag).willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                    .withBody(adapter.equals(OPENAI)
                            ? openaiCompletion(null, "I'm sorry, but I can't help with that request.", 150, 11)
                            : azureCompletion(null, "content_filter", 150, 0))));
            calls.put(adapter, call(tag, adapter));
        }

        for (String adapter : ADAPTERS) {
            UUID call = calls.get(adapter);
            UUID summary = summaryOf(call);
            Jobs.awaitFinal(summary);
            assertThat(job(summary)).as(adapter + ": %s", job(summary)).containsEntry("status", "failed")
                    .containsEntry("error_category", "declined").containsEntry("attempts", 1);
            assertThat(calls(adapter, tags.get(adapter))).as(adapter + ": never retried").hasSize(1);
            assertThat(ledger(summary, "refund")).as(adapter).isEqualTo(1);
            assertThat(job(call)).as(adapter).containsEntry("status", "succeeded");
            assertThat(api.get(ACME, "/v1/jobs/" + call).json().path("summary").path("error").path("category").asText())
                    .as(adapter).isEqualTo("declined");
        }
        assertThat((String) job(summaryOf(calls.get(AZURE))).get("error_message")).contains("content filter");

        // Azure's filter on the prompt: a 400 whose error.code says content_filter (innererror as Azure sends it).
        String tag = Jobs.tag();
        azure.stubFor(chat(AZURE, tag).willReturn(aResponse().withStatus(400).withHeader("Content-Type", "application/json")
                .withBody("{\"error\": {\"message\": \"The response was filtered due to the prompt triggering Azure OpenAI's content "
                        + "management policy. Please modify your prompt and retry.\", \"type\": null, \"param\": \"prompt\", "
                        + "\"code\": \"content_filter\", \"status\": 400, \"innererror\": {\"code\": \"ResponsibleAIPolicyViolation\", "
                        + "\"content_filter_result\": {\"hate\": {\"filtered\": false, \"severity\": \"safe\"}, "
                        + "\"violence\": {\"filtered\": true, \"severity\": \"medium\"}}}}}")));
        UUID call = call(tag, AZURE);
        UUID summary = summaryOf(call);
        Jobs.awaitFinal(summary);
        assertThat(job(summary)).as("a filtered prompt: %s", job(summary)).containsEntry("status", "failed")
                .containsEntry("error_category", "declined").containsEntry("attempts", 1);
        assertThat(calls(AZURE, tag)).hasSize(1);
        assertThat(job(call)).containsEntry("status", "succeeded");
    }
}
