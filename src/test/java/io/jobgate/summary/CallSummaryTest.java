package io.jobgate.summary;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
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
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A call job with a summary (issue 39, docs/summaries.md), through the real gateway: the transcript by OpenAI's
 * transcription and the summary by OpenAI's chat completions, both WireMock stand-ins of the public API. The
 * summary runs as a job of its own under the transcription job: its own attempts, price (tokens in and out),
 * debit, refund and usage lines; a failed summary never costs the transcript.
 */
class CallSummaryTest extends GatewayTestBase {

    WireMockServer openai;

    @Override
    protected Map<String, String> settings() throws Exception {
        openai = fakeProvider();
        return Map.of(
                "jobgate.worker.enabled", "true",
                "jobgate.worker.backoff-base-ms", "100",
                "jobgate.summaries.period-ms", "100",
                "jobgate.provider.openai.base-url", openai.baseUrl() + "/v1",
                "jobgate.provider.openai.api-key", "sk-test-123",
                "jobgate.pools.dirs", "src/test/resources/summaries/pools",
                // The pool's fallback member dearer than OpenAI, so a summary in the pool pays the simulator's price.
                "jobgate.provider.simulator.price.output-ktokens-micros", "3200",
                "jobgate.tenants.files", "config/tenants.yaml,src/test/resources/test-tenants.yaml,src/test/resources/summaries/tenants.yaml");
    }

    static String transcript(String text) {
        return "{\"task\": \"transcribe\", \"language\": \"english\", \"duration\": 65.0, \"text\": " + Json.write(text)
                + ", \"segments\": [], \"usage\": {\"type\": \"duration\", \"seconds\": 65}}";
    }

    static String completion(String text, int prompt, int completion) {
        return "{\"id\": \"chatcmpl-" + prompt + "\", \"object\": \"chat.completion\", \"created\": 1741569952, "
                + "\"model\": \"gpt-4.1-mini-2025-04-14\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", "
                + "\"content\": " + Json.write(text) + ", \"refusal\": null, \"annotations\": []}, \"logprobs\": null, "
                + "\"finish_reason\": \"stop\"}], \"usage\": {\"prompt_tokens\": " + prompt + ", \"completion_tokens\": "
                + completion + ", \"total_tokens\": " + (prompt + completion) + "}, \"service_tier\": \"default\"}";
    }

    /** A call job naming OpenAI, with a summary; {@code tag} travels in the transcript the stand-in answers. */
    UUID callWithSummary(String tag, String focus) {
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio"))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(transcript("Customer " + tag + " asks for a \"discount\"; we agree to call back on Friday."))));
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(2000 + Math.abs(tag.hashCode() % 500)));
        assertThat(upload.status()).as(upload.text()).isIn(200, 201); // 200: the same bytes were uploaded before (by digest)
        // The tag goes in the glossary (the vocabulary hint sent beside the audio), so the stub knows its call.
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag + "-audio\"}]},"
                + " \"summary\": {\"preset_id\": \"call-summary\", \"provider\": \"openai\", \"inputs\": {\"focus\": \"" + focus + "\"}}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        assertThat(r.json().path("summary").path("status").asText()).isEqualTo("waiting");
        return UUID.fromString(r.json().path("job_id").asText());
    }

    JsonNode awaitSummaryEnded(UUID call) {
        Jobs.awaitFinal(call);
        await().atMost(Duration.ofSeconds(60)).until(() -> {
            JsonNode view = api.get(ACME, "/v1/jobs/" + call).json();
            return List.of("succeeded", "failed", "cancelled", "skipped", "refused").contains(view.path("summary").path("status").asText());
        });
        return api.get(ACME, "/v1/jobs/" + call).json();
    }

    static Map<String, Object> debit(UUID job) {
        return Db.single("SELECT -amount_micros AS micros, units, unit FROM ledger WHERE job_id = ? AND entry_type = 'debit'", job);
    }

    /**
     * A summary named by no provider is given one when it is ordered, after its transcript: the tenant's rules of where
     * its jobs run hold for it as for the transcript. A tenant on OpenAI only gets its summary on OpenAI, not on the
     * kind's default (the simulator, running here).
     */
    @Test
    void aSummaryWithoutAProviderGoesToOneItsTenantMayUse() {
        String openaiOnly = "test-openaionly-key";
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio"))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(transcript("Customer " + tag + " asks for a refund."))));
        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(completion("A refund is asked for.", 120, 8))));
        ApiClient.Response upload = api.upload(openaiOnly, "audio/wav", Samples.wav(1700));
        assertThat(upload.status()).as(upload.text()).isIn(200, 201);
        ApiClient.Response r = api.postJob(openaiOnly, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"openai\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2, \"glossary\": [{\"term\": \"" + tag + "-audio\"}]},"
                + " \"summary\": {\"preset_id\": \"call-summary\", \"inputs\": {\"focus\": \"next_steps\"}}}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID call = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitFinal(call);
        await().atMost(Duration.ofSeconds(60)).until(() -> !"waiting".equals(
                api.get(openaiOnly, "/v1/jobs/" + call).json().path("summary").path("status").asText()));
        JsonNode summary = api.get(openaiOnly, "/v1/jobs/" + call).json().path("summary");
        assertThat(summary.path("provider").asText()).as(summary.toString()).isEqualTo("openai");
        Jobs.awaitFinal(UUID.fromString(summary.path("job_id").asText()));
        assertThat(api.get(openaiOnly, "/v1/jobs/" + call).json().path("summary").path("status").asText()).isEqualTo("succeeded");
    }

    /**
     * A summary may name a pool of summary providers, as a job names one: placed when it is ordered, priced at the
     * dearest member (of the tokens' prices), its job showing its pool. A pool that is unknown or named beside a
     * provider is refused with the transcription job, and nothing is stored.
     */
    @Test
    void aSummaryNamingAPoolIsPlacedInItWhenOrderedAndPricedAtItsDearestMember() {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(completion("Call back on Friday.", 150, 10))));
        openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio"))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(transcript("Customer " + tag + " asks for a call back."))));
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1800));
        String call = "{\"preset_id\": \"call-transcript\", \"provider\": \"openai\", \"upload_id\": \""
                + upload.json().path("upload_id").asText() + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2, \"glossary\": "
                + "[{\"term\": \"" + tag + "-audio\"}]}, \"summary\": {\"preset_id\": \"call-summary\", %s, \"inputs\": {\"focus\": \"next_steps\"}}}";

        long jobs = Db.count("SELECT count(*) FROM jobs");
        ApiClient.Response unknown = api.postJob(ACME, "k-" + UUID.randomUUID(), call.formatted("\"pool\": \"nosuch\""));
        assertThat(unknown.status()).as(unknown.text()).isEqualTo(422);
        assertThat(unknown.code()).isEqualTo("unknown_pool");
        assertThat(unknown.json().path("field").asText()).isEqualTo("summary.pool");
        ApiClient.Response both = api.postJob(ACME, "k-" + UUID.randomUUID(), call.formatted("\"pool\": \"talks\", \"provider\": \"openai\""));
        assertThat(both.code()).isEqualTo("pool_or_provider");
        assertThat(both.json().path("field").asText()).isEqualTo("summary.pool");
        assertThat(Db.count("SELECT count(*) FROM jobs")).isEqualTo(jobs);

        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), call.formatted("\"pool\": \"talks\""));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        JsonNode view = awaitSummaryEnded(UUID.fromString(r.json().path("job_id").asText()));
        assertThat(view.path("summary").path("status").asText()).as("%s", view.path("summary")).isEqualTo("succeeded");
        UUID summaryJob = UUID.fromString(view.path("summary").path("job_id").asText());
        JsonNode job = api.get(ACME, "/v1/jobs/" + summaryJob).json();
        assertThat(job.path("pool").asText()).isEqualTo("talks");
        assertThat(job.path("provider").asText()).isEqualTo("openai");
        // Its price: the prompt's tokens and the 1,024 it may answer at the dearer member's prices (the simulator's:
        // 400 and 3200 micros a thousand, against OpenAI's 400 and 1600), though OpenAI serves it.
        Map<String, Object> debit = debit(summaryJob);
        long inputTokens = ((Number) debit.get("units")).longValue() - 1024;
        assertThat(((Number) debit.get("micros")).longValue()).as("debited for %s input tokens", inputTokens)
                .isEqualTo(job.path("cost").path("amount_micros").asLong())
                .isEqualTo((inputTokens * 400 + 1024 * 3200 + 999) / 1000);
        assertThat(Db.count("SELECT count(*) FROM attempts WHERE job_id = ? AND adapter = 'openai'", summaryJob)).isEqualTo(1);
    }

    @Test
    void theTranscriptAndItsSummaryAreReadableAndMeteredAsTwoOperations() throws Exception {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withHeader("x-request-id", "req_chat_1").withBody(completion("The customer wants a discount. Next: call on Friday.", 180, 12))));
        UUID call = callWithSummary(tag, "next_steps");
        JsonNode view = awaitSummaryEnded(call);

        assertThat(view.path("status").asText()).isEqualTo("succeeded");
        JsonNode summary = view.path("summary");
        assertThat(summary.path("status").asText()).as("%s", summary).isEqualTo("succeeded");
        UUID summaryJob = UUID.fromString(summary.path("job_id").asText());
        assertThat(summary.path("provider").asText()).isEqualTo("openai");
        assertThat(summary.path("attempts").asInt()).isEqualTo(1);
        assertThat(summary.path("preset").path("id").asText()).isEqualTo("call-summary");
        assertThat(summary.path("links").path("output").asText()).isEqualTo("/v1/jobs/" + summaryJob + "/output");

        // Both readable: the transcript on the call's job, the summary on its own.
        assertThat(Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + call + "/output")).path("text").asText())
                .contains("Customer " + tag);
        assertThat(Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + summaryJob + "/output")).path("text").asText())
                .isEqualTo("The customer wants a discount. Next: call on Friday.");
        // The tenant's listing shows the same summary on the call's row (the page's summaries' jobs read together).
        JsonNode listedCall = null;
        for (JsonNode row : api.get(ACME, "/v1/jobs?limit=100").json().path("jobs")) {
            if (row.path("job_id").asText().equals(call.toString())) {
                listedCall = row;
            }
        }
        assertThat(listedCall).as("the call among the tenant's newest jobs").isNotNull();
        assertThat(listedCall.path("summary").path("job_id").asText()).isEqualTo(summaryJob.toString());
        assertThat(listedCall.path("summary").path("status").asText()).isEqualTo("succeeded");
        JsonNode own = api.get(ACME, "/v1/jobs/" + summaryJob).json();
        assertThat(own.path("kind").asText()).isEqualTo("summary");
        assertThat(own.path("parent_job_id").asText()).isEqualTo(call.toString());

        // The chat call: the preset's instruction as the system message, the transcript as the user's (data).
        LoggedRequest chat = openai.findAll(postRequestedFor(urlEqualTo("/v1/chat/completions")).withRequestBody(containing(tag))).get(0);
        assertThat(chat.getHeader("Authorization")).isEqualTo("Bearer sk-test-123");
        JsonNode body = Json.MAPPER.readTree(chat.getBodyAsString());
        assertThat(body.path("model").asText()).isEqualTo("gpt-4.1-mini");
        assertThat(body.path("max_completion_tokens").asInt()).isEqualTo(1024);
        assertThat(body.path("messages").path(0).path("role").asText()).isEqualTo("system");
        assertThat(body.path("messages").path(0).path("content").asText()).startsWith("You summarise a recorded sales call")
                .contains("<input name=\"focus\">next_steps</input>");
        assertThat(body.path("messages").path(1).path("role").asText()).isEqualTo("user");
        assertThat(body.path("messages").path(1).path("content").asText())
                .isEqualTo("Customer " + tag + " asks for a \"discount\"; we agree to call back on Friday.");

        // Its own attempt and billing: the provider's tokens, its request id, the chat revision.
        Map<String, Object> attempt = Db.single("SELECT billed_units, billed_unit, provider_request_id, adapter_revision "
                + "FROM attempts WHERE job_id = ?", summaryJob);
        assertThat((BigDecimal) attempt.get("billed_units")).isEqualByComparingTo("192");
        assertThat(attempt).containsEntry("billed_unit", "tokens").containsEntry("provider_request_id", "req_chat_1");
        assertThat((String) attempt.get("adapter_revision")).startsWith("openai-chat-1@");

        // Two operations, two debits: the transcript in audio minutes, the summary in tokens at its in/out prices.
        assertThat(debit(call)).containsEntry("unit", "audio_minutes");
        Map<String, Object> summaryDebit = debit(summaryJob);
        assertThat(summaryDebit).containsEntry("unit", "tokens");
        long inputTokens = ((BigDecimal) summaryDebit.get("units")).longValue() - 1024;
        assertThat(inputTokens).as("the prompt's tokens as estimated: transcript and instruction").isPositive();
        assertThat(((Number) summaryDebit.get("micros")).longValue()).isEqualTo((inputTokens * 400 + 1024 * 1600 + 999) / 1000);
        assertThat(summary.path("cost").path("amount_micros").asLong()).isEqualTo(((Number) summaryDebit.get("micros")).longValue());

        JsonNode usage = api.get(ACME, "/v1/usage").json();
        JsonNode transcription = line(usage, "transcription");
        JsonNode summaries = line(usage, "summary");
        assertThat(transcription.path("unit").asText()).isEqualTo("audio_minutes");
        assertThat(summaries.path("unit").asText()).isEqualTo("tokens");
        assertThat(summaries.path("debited_micros").asLong()).isGreaterThanOrEqualTo(((Number) summaryDebit.get("micros")).longValue());
        assertThat(billing(usage, "summary").path("unit").asText()).isEqualTo("tokens");

        // The metrics too: units metered per tenant and operation, each in its own unit.
        String metrics = api.get(null, "/observe/metrics").text();
        assertThat(metered(metrics, "transcription", "audio_minutes")).isPositive();
        assertThat(metered(metrics, "summary", "tokens")).isGreaterThanOrEqualTo(((BigDecimal) summaryDebit.get("units")).doubleValue());
    }

    /** jobgate_metered_units_total of the tenant acme for one operation and unit, 0 when absent. */
    static double metered(String metrics, String operation, String unit) {
        return metrics.lines().filter(l -> l.startsWith("jobgate_metered_units_total{") && l.contains("operation=\"" + operation + "\"")
                        && l.contains("tenant=\"acme\"") && l.contains("unit=\"" + unit + "\""))
                .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
    }

    static JsonNode line(JsonNode usage, String kind) {
        for (JsonNode line : usage.path("lines")) {
            if (line.path("provider").asText().equals("openai") && line.path("kind").asText().equals(kind)) {
                return line;
            }
        }
        throw new AssertionError("no usage line of openai " + kind + ": " + usage);
    }

    static JsonNode billing(JsonNode usage, String kind) {
        for (JsonNode line : usage.path("provider_billing")) {
            if (line.path("provider").asText().equals("openai") && line.path("kind").asText().equals(kind)) {
                return line;
            }
        }
        throw new AssertionError("no provider billing of openai " + kind + ": " + usage);
    }

    @Test
    void aFailedSummaryIsRefundedAloneAndTheTranscriptStaysReadable() throws Exception {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(400).withHeader("Content-Type", "application/json")
                        .withBody("{\"error\": {\"message\": \"This model's maximum context length is 1047576 tokens.\", "
                                + "\"type\": \"invalid_request_error\", \"param\": \"messages\", \"code\": \"context_length_exceeded\"}}")));
        UUID call = callWithSummary(tag, "overview");
        JsonNode view = awaitSummaryEnded(call);

        assertThat(view.path("status").asText()).as("the transcript's job").isEqualTo("succeeded");
        JsonNode summary = view.path("summary");
        assertThat(summary.path("status").asText()).isEqualTo("failed");
        assertThat(summary.path("error").path("category").asText()).isEqualTo("terminal_request");
        assertThat(summary.path("error").path("message").asText()).contains("context window");
        UUID summaryJob = UUID.fromString(summary.path("job_id").asText());
        assertThat(openai.findAll(postRequestedFor(urlEqualTo("/v1/chat/completions")).withRequestBody(containing(tag))))
                .as("a 4xx is never retried").hasSize(1);

        assertThat(Json.MAPPER.readTree(api.getBytes(ACME, "/v1/jobs/" + call + "/output")).path("text").asText()).contains(tag);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", call)).as("the transcript is paid").isZero();
        Map<String, Object> refund = Db.single("SELECT amount_micros, units FROM ledger WHERE job_id = ? AND entry_type = 'refund'", summaryJob);
        assertThat(((Number) refund.get("amount_micros")).longValue()).as("the summary's whole price back")
                .isEqualTo(((Number) debit(summaryJob).get("micros")).longValue());
    }

    @Test
    void aTranscriptThatFailedLeavesNothingToSummariseUntilARedriveBringsOne() {
        String tag = Jobs.tag();
        var failing = openai.stubFor(post("/v1/audio/transcriptions").withRequestBody(containing(tag + "-audio")).atPriority(1)
                .willReturn(aResponse().withStatus(400).withHeader("Content-Type", "application/json")
                        .withBody("{\"error\": {\"message\": \"Invalid file format.\", \"type\": \"invalid_request_error\", "
                                + "\"param\": null, \"code\": null}}")));
        UUID call = callWithSummary(tag, "overview");
        JsonNode view = awaitSummaryEnded(call);

        assertThat(view.path("status").asText()).isEqualTo("failed");
        assertThat(view.path("summary").path("status").asText()).isEqualTo("skipped");
        assertThat(view.path("summary").path("error").path("category").asText()).isEqualTo("transcript_failed");
        assertThat(view.path("summary").path("job_id").isNull()).isTrue();
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE parent_job_id = ?", call)).isZero();

        // An operator redrives the transcription once its cause is fixed: the summary waits again, then runs.
        openai.removeStub(failing); // the stub callWithSummary made answers again

        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withBody(completion("All fine.", 60, 3))));
        ApiClient.Response redriven = api.send(api.request("/v1/admin/jobs/" + call + "/redrive", io.jobgate.support.TestTenants.ADMIN)
                .header("Content-Type", "application/json")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"operator\": \"alice\", \"reason\": \"audio fixed\"}")).build());
        assertThat(redriven.status()).as(redriven.text()).isEqualTo(202);
        JsonNode again = awaitSummaryEnded(call);
        assertThat(again.path("status").asText()).isEqualTo("succeeded");
        assertThat(again.path("summary").path("status").asText()).as("%s", again.path("summary")).isEqualTo("succeeded");
    }

    @Test
    void aWaitingReadOfTheCallAnswersOnceItsSummaryEnded() {
        String tag = Jobs.tag();
        openai.stubFor(post("/v1/chat/completions").withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withHeader("Content-Type", "application/json")
                        .withFixedDelay(1500).withBody(completion("Short.", 90, 2))));
        UUID call = callWithSummary(tag, "overview");
        JsonNode view = api.get(ACME, "/v1/jobs/" + call + "?wait=30").json();
        assertThat(view.path("status").asText()).isEqualTo("succeeded");
        assertThat(view.path("summary").path("status").asText()).as("not just the transcript: the summary too").isEqualTo("succeeded");
    }

    @Test
    void aSummaryIsAskedOnlyOfATranscriptionJobAndOnlyWithASummaryPreset() {
        ApiClient.Response image = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "square",
                 "inputs": {"supplier_name": "A", "invoice_id": "1", "currency": "EUR", "line_items": []},
                 "summary": {"preset_id": "call-summary"}}""");
        assertThat(image.status()).isEqualTo(422);
        assertThat(image.json().path("code").asText()).isEqualTo("invalid_request");
        assertThat(image.json().path("field").asText()).isEqualTo("summary");

        ApiClient.Response direct = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-summary\"}");
        assertThat(direct.status()).isEqualTo(422);
        assertThat(direct.json().path("field").asText()).isEqualTo("preset_id");

        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1700));
        String job = "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload.json().path("upload_id").asText()
                + "\", \"inputs\": {\"language\": \"en\", \"speakers\": 2}, \"summary\": %s}";
        ApiClient.Response notSummary = api.postJob(ACME, "k-" + UUID.randomUUID(), job.formatted("{\"preset_id\": \"call-transcript\"}"));
        assertThat(notSummary.status()).isEqualTo(422);
        assertThat(notSummary.json().path("field").asText()).isEqualTo("summary.preset_id");
        ApiClient.Response badFocus = api.postJob(ACME, "k-" + UUID.randomUUID(),
                job.formatted("{\"preset_id\": \"call-summary\", \"inputs\": {\"focus\": \"gossip\"}}"));
        assertThat(badFocus.status()).isEqualTo(422);
        ApiClient.Response unknownMember = api.postJob(ACME, "k-" + UUID.randomUUID(),
                job.formatted("{\"preset_id\": \"call-summary\", \"model\": \"gpt-5\"}"));
        assertThat(unknownMember.status()).isEqualTo(422);
        assertThat(unknownMember.json().path("field").asText()).isEqualTo("summary.model");
        ApiClient.Response reserved = api.postJob(ACME, "jobgate:summary:" + UUID.randomUUID(), job.formatted("{\"preset_id\": \"call-summary\"}"));
        assertThat(reserved.status()).isEqualTo(400);
        assertThat(reserved.json().path("code").asText()).isEqualTo("invalid_idempotency_key");
    }
}
