package io.jobgate.api;

import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.common.Json;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import io.jobgate.support.Samples;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.ok;
import static com.github.tomakehurst.wiremock.client.WireMock.post;
import static com.github.tomakehurst.wiremock.client.WireMock.postRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlEqualTo;
import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.GLOBEX;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The OpenAPI document against the real answers of a running gateway (the bundled simulator as its
 * provider, tenants' webhooks to a WireMock receiver on loopback): every call of the document is made
 * and each answer's body is validated against the schema the document declares for that operation and
 * status ({@link OpenApiContract}, closed-world); the request bodies sent, the document's own request
 * examples and every webhook payload received are validated too. At the end, every operation must have
 * had its success answers checked, but the few listed in {@link #NOT_REACHED} with the reason.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OpenApiContractTest extends GatewayTestBase {

    /** Success answers this test cannot reach here, with the reason; everything else must be checked. */
    static final Map<String, String> NOT_REACHED = Map.of(
            "post-provider-webhook 200", "needs a provider's signed webhook (ReconciliationTest, FalAdapterTest drive them)",
            "post-admin-canary-stop 200", "needs a canary candidate (CanaryRolloutTest)",
            "post-admin-canary-promote 200", "needs a canary candidate (CanaryRolloutTest)",
            "post-admin-canary-restart 200", "needs a canary candidate (CanaryRolloutTest)");

    WireMockServer receiver;
    OpenApiContract contract;

    @Override
    protected Map<String, String> settings() {
        receiver = fakeProvider(); // the tenants' webhook receiver on loopback
        return GatewayTestSupport.with(GatewayTestSupport.SIMULATING, Map.of(
                "jobgate.tenant-webhooks.allow-http-loopback", "true",
                "jobgate.tenant-webhooks.period-ms", "100",
                "jobgate.tenant-webhooks.timeout-seconds", "2",
                "jobgate.tenant-webhooks.retry-schedule", "1s",
                // Pools of the simulator (sims) and others, for the pools' admin calls.
                "jobgate.pools.dirs", "src/test/resources/pools/rules",
                // Pull member gpubox, for the worker protocol's calls.
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", GatewayTestSupport.ROUTES + ",file:src/test/resources/workers/adapters/*.camel.yaml"));
    }

    OpenApiContract contract() {
        if (contract == null) {
            Response r = api.get(null, "/openapi.json");
            assertThat(r.status()).isEqualTo(200);
            contract = new OpenApiContract(r.json());
        }
        return contract;
    }

    Response get(String key, String path, String template) {
        return contract().check("GET", template, api.get(key, path));
    }

    Response send(String method, String key, String path, String template, String json) {
        HttpRequest.Builder b = api.request(path, key);
        if (json == null) {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(json));
        }
        return contract().check(method, template, api.send(b.build()));
    }

    Response submit(String key, String idempotencyKey, String correlationId, JsonNode request) {
        contract().checkRequest("POST", "/v1/jobs", request);
        HttpRequest.Builder b = api.request("/v1/jobs", key).header("Content-Type", "application/json")
                .header("Idempotency-Key", idempotencyKey);
        if (correlationId != null) {
            b.header("X-Correlation-Id", correlationId);
        }
        return contract().check("POST", "/v1/jobs", api.send(b.POST(HttpRequest.BodyPublishers.ofString(request.toString())).build()));
    }

    /**
     * A refusal exactly as the document states it: the error table of docs/api.md (the document's {@code default}
     * answer is "a problem document with a stable code", docs/api.md, Errors) gives each code its one status. The
     * answer is that status with that code, and the problem document says the same status.
     */
    static Response refused(Response r, int status, String code) {
        assertThat(r.status()).as("status of %s", r.text()).isEqualTo(status);
        assertThat(r.code()).as("code of %s", r.text()).isEqualTo(code);
        assertThat(r.json().path("status").asInt()).as("the problem document's status: %s", r.text()).isEqualTo(status);
        return r;
    }

    /** The document's own example job request of a kind, checked against that kind's schema. */
    JsonNode example(String kind, String schema) {
        JsonNode value = contract().operation("POST", "/v1/jobs").path("requestBody").path("content").path("application/json")
                .path("examples").path(kind).path("value");
        assertThat(value.isObject()).as("the document's %s example", kind).isTrue();
        contract().checkSchema(schema, value);
        return value.deepCopy();
    }

    JsonNode awaitTerminal(String key, String id) {
        JsonNode[] job = new JsonNode[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            job[0] = get(key, "/v1/jobs/" + id + "?wait=5", "/v1/jobs/{jobId}").json();
            return Set.of("succeeded", "failed", "cancelled").contains(job[0].path("status").asText());
        });
        return job[0];
    }

    /** The checked-in document the test client is generated from at build time (pom.xml). */
    static final java.nio.file.Path SNAPSHOT = java.nio.file.Path.of("docs/openapi.json");

    /**
     * The served document is the checked-in one, docs/openapi.json, that the build generates the test client
     * from: they never drift. After a change of the REST DSL or the schemas, copy target/openapi.json over it.
     */
    @Test
    @Order(0)
    void theServedDocumentIsTheCheckedInOne() throws Exception {
        JsonNode served = contract().document;
        java.nio.file.Path written = java.nio.file.Path.of("target/openapi.json");
        java.nio.file.Files.writeString(written, Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(served) + "\n");
        assertThat(new com.fasterxml.jackson.databind.ObjectMapper().readTree(SNAPSHOT.toFile())).as("%s is the served /openapi.json: cp %s %s", SNAPSHOT, written, SNAPSHOT)
                .isEqualTo(served);
    }

    /** The checker fails on what CI must catch: a member missing, one undocumented, a wrong type or format. */
    @Test
    @Order(0)
    void anAnswerThatDoesNotMatchItsSchemaFails() {
        Response real = submit(ACME, "contract-" + UUID.randomUUID(), null, example("image", "ImageJobRequest"));
        contract().checkSchema("Job", real.json());
        for (String broken : List.of("{\"status\": null}", "{\"colour\": \"red\"}", "{\"attempts\": \"1\"}",
                "{\"created_at\": \"yesterday\"}", "{\"status\": \"done\"}", "{\"cost\": {\"amount\": \"1\"}}")) {
            com.fasterxml.jackson.databind.node.ObjectNode job = (com.fasterxml.jackson.databind.node.ObjectNode) real.json();
            job.setAll((com.fasterxml.jackson.databind.node.ObjectNode) Json.parseObject(broken.getBytes()));
            Response altered = new Response(202, real.headers(), job.toString());
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> contract().check("POST", "/v1/jobs", altered))
                    .as(broken).isInstanceOf(AssertionError.class);
        }
        JsonNode noStatus = real.json().deepCopy();
        ((com.fasterxml.jackson.databind.node.ObjectNode) noStatus).remove("status");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> contract().checkSchema("Job", noStatus)).isInstanceOf(AssertionError.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> contract().check("POST", "/v1/jobs",
                new Response(201, real.headers(), real.text()))).as("an undeclared status").isInstanceOf(AssertionError.class);
    }

    @Test
    @Order(1)
    void jobsUploadsAndUsageAnswerAsDeclared() {
        // An image job from the document's example: made, replayed, polled to success, its output read.
        JsonNode image = example("image", "ImageJobRequest");
        String key = "contract-" + UUID.randomUUID();
        Response made = submit(ACME, key, "contract-image", image);
        assertThat(made.status()).as(made.text()).isEqualTo(202);
        assertThat(submit(ACME, key, "contract-image", image).header("Idempotent-Replayed")).isEqualTo("true");
        String id = made.json().path("job_id").asText();
        JsonNode done = awaitTerminal(ACME, id);
        assertThat(done.path("status").asText()).as(done.toString()).isEqualTo("succeeded");
        assertThat(done.path("output").path("media_type").asText()).isEqualTo("image/png");
        Response output = get(ACME, "/v1/jobs/" + id + "/output", "/v1/jobs/{jobId}/output");
        assertThat(output.status()).isEqualTo(200);
        assertThat(output.contentType()).isEqualTo("image/png");
        assertThat(get(ACME, "/v1/jobs/" + id + "/attempts", "/v1/jobs/{jobId}/attempts").status()).isEqualTo(200);

        // An audio upload (made, then the same bytes again) and a transcription job of it.
        byte[] wav = Samples.wav(2000);
        Response upload = contract().check("POST", "/v1/uploads", api.upload(ACME, "audio/wav", wav));
        assertThat(upload.status()).as(upload.text()).isEqualTo(201);
        assertThat(contract().check("POST", "/v1/uploads", api.upload(ACME, "audio/wav", wav)).status()).isEqualTo(200);
        JsonNode transcription = example("transcription", "TranscriptionJobRequest");
        ((com.fasterxml.jackson.databind.node.ObjectNode) transcription).put("upload_id", upload.json().path("upload_id").asText());
        Response heard = submit(ACME, "contract-" + UUID.randomUUID(), null, transcription);
        assertThat(heard.status()).as(heard.text()).isEqualTo(202);
        JsonNode transcript = awaitTerminal(ACME, heard.json().path("job_id").asText());
        assertThat(transcript.path("status").asText()).as(transcript.toString()).isEqualTo("succeeded");

        // A transcription with a summary of its transcript (its own job, shown as the summary member).
        JsonNode summarised = example("transcription-with-summary", "TranscriptionJobRequest");
        ((com.fasterxml.jackson.databind.node.ObjectNode) summarised).put("upload_id", upload.json().path("upload_id").asText());
        Response asked = submit(ACME, "contract-" + UUID.randomUUID(), null, summarised);
        assertThat(asked.status()).as(asked.text()).isEqualTo(202);
        assertThat(asked.json().path("summary").path("status").asText()).isEqualTo("waiting");
        String callId = asked.json().path("job_id").asText();
        JsonNode[] call = new JsonNode[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> {
            call[0] = get(ACME, "/v1/jobs/" + callId + "?wait=5", "/v1/jobs/{jobId}").json();
            return "succeeded".equals(call[0].path("summary").path("status").asText());
        });
        String summaryId = call[0].path("summary").path("job_id").asText();
        assertThat(get(ACME, "/v1/jobs/" + summaryId, "/v1/jobs/{jobId}").json().path("parent_job_id").asText()).isEqualTo(callId);
        assertThat(Json.parseObject(api.getBytes(ACME, "/v1/jobs/" + summaryId + "/output")).path("text").asText()).isNotBlank();

        // A video job from the example: its answer, whatever the simulator makes of it.
        Response clip = submit(ACME, "contract-" + UUID.randomUUID(), null, example("video", "VideoJobRequest"));
        assertThat(clip.status()).as(clip.text()).isEqualTo(202);
        awaitTerminal(ACME, clip.json().path("job_id").asText());

        // A slow job cancelled while the provider works on it; then cancelled again.
        Response slow = submit(ACME, "contract-" + UUID.randomUUID(), "sim-fault-slow-" + UUID.randomUUID(), image);
        String slowId = slow.json().path("job_id").asText();
        assertThat(send("POST", ACME, "/v1/jobs/" + slowId + "/cancel", "/v1/jobs/{jobId}/cancel", null).status()).isEqualTo(200);
        assertThat(send("POST", ACME, "/v1/jobs/" + slowId + "/cancel", "/v1/jobs/{jobId}/cancel", null).status()).isEqualTo(200);
        // Its output is not ready, and a succeeded job is not cancellable: problem documents.
        refused(get(ACME, "/v1/jobs/" + slowId + "/output", "/v1/jobs/{jobId}/output"), 409, "not_ready");
        refused(send("POST", ACME, "/v1/jobs/" + id + "/cancel", "/v1/jobs/{jobId}/cancel", null), 409, "not_cancellable");

        // Lists, a page at a time, and by status.
        Response page = get(ACME, "/v1/jobs?limit=2", "/v1/jobs");
        assertThat(page.json().path("jobs")).hasSize(2);
        String cursor = page.json().path("next_cursor").asText();
        assertThat(get(ACME, "/v1/jobs?limit=200&cursor=" + cursor, "/v1/jobs").status()).isEqualTo(200);
        assertThat(get(ACME, "/v1/jobs?status=cancelled", "/v1/jobs").json().path("jobs")).isNotEmpty();

        Response usage = get(ACME, "/v1/usage", "/v1/usage");
        assertThat(usage.json().path("lines")).isNotEmpty();
        assertThat(get(ACME, "/v1/usage?from=2026-01-01&to=2026-01-02", "/v1/usage").status()).isEqualTo(200);
    }

    @Test
    @Order(2)
    void refusalsAreTheDeclaredProblemDocuments() {
        refused(get(null, "/v1/jobs", "/v1/jobs"), 401, "unauthorized");
        refused(get(ACME, "/v1/jobs/" + UUID.randomUUID(), "/v1/jobs/{jobId}"), 404, "job_not_found");
        refused(get(ACME, "/v1/jobs?limit=0", "/v1/jobs"), 400, "invalid_parameter");
        // A wait out of 1-30 is refused before the job is looked for: the same answer for a job that does not exist.
        assertThat(refused(get(ACME, "/v1/jobs/" + UUID.randomUUID() + "?wait=31", "/v1/jobs/{jobId}"), 422, "invalid_input")
                .json().path("field").asText()).isEqualTo("wait");
        refused(get(ACME, "/v1/usage?from=yesterday", "/v1/usage"), 400, "invalid_parameter");
        // One fault per request, so that the table gives one answer: a body that is not JSON, then no Idempotency-Key.
        HttpRequest notJson = api.request("/v1/jobs", ACME).header("Content-Type", "application/json").header("Idempotency-Key", "k-not-json")
                .POST(HttpRequest.BodyPublishers.ofString("{not json")).build();
        refused(contract().check("POST", "/v1/jobs", api.send(notJson)), 400, "malformed_json");
        refused(send("POST", ACME, "/v1/jobs", "/v1/jobs", "{\"preset_id\": \"invoice-clean\"}"), 400, "missing_idempotency_key");
        HttpRequest bad = api.request("/v1/jobs", ACME).header("Content-Type", "application/json").header("Idempotency-Key", "k-bad")
                .POST(HttpRequest.BodyPublishers.ofString("{\"preset_id\": \"invoice-clean\", \"colour\": \"red\"}")).build();
        refused(contract().check("POST", "/v1/jobs", api.send(bad)), 422, "invalid_request");
        refused(contract().check("POST", "/v1/uploads", api.upload(ACME, "image/png", Samples.jpeg(4, 4))), 415, "media_type_mismatch");
        refused(get(ACME, "/v1/webhooks/endpoints/" + UUID.randomUUID(), "/v1/webhooks/endpoints/{endpointId}"), 404, "endpoint_not_found");
        // Plain http to an address that is not loopback (a literal: no name to resolve, so no DNS decides the answer).
        refused(send("POST", ACME, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints", "{\"url\": \"http://192.0.2.10/x\"}"),
                422, "webhook_url_insecure");
        refused(send("POST", null, "/v1/providers/no-such/webhook", "/v1/providers/{provider}/webhook", "{}"), 404, "unknown_webhook");
        refused(get(ACME, "/v1/admin/usage", "/v1/admin/usage"), 401, "unauthorized");
        refused(send("POST", ADMIN, "/v1/admin/providers/simulator/canary/stop", "/v1/admin/providers/{provider}/canary/stop",
                "{\"operator\": \"contract\"}"), 404, "canary_not_found");
        refused(send("POST", ADMIN, "/v1/admin/providers/simulator/canary/promote", "/v1/admin/providers/{provider}/canary/promote",
                "{\"operator\": \"contract\"}"), 404, "canary_not_found");
        refused(send("POST", ADMIN, "/v1/admin/providers/simulator/canary/restart", "/v1/admin/providers/{provider}/canary/restart",
                "{\"operator\": \"contract\"}"), 404, "canary_not_found");
    }

    /** The refusal code of each header of {@code POST /v1/jobs} whose value the server checks. */
    static final Map<String, String> HEADER_REFUSALS = Map.of(
            "Idempotency-Key", "invalid_idempotency_key",
            "X-Correlation-Id", "invalid_correlation_id");

    /**
     * Issue 64: the headers' constraints the document states are the ones the server enforces, value by value.
     * For each sample the document gives its verdict; a value it allows must make the job (202), a value it
     * forbids must be refused with that header's code. A pattern, a length or a prefix rule of the document
     * that differs from the server's fails here, in either direction. The samples sit on the edges: the longest
     * allowed, one longer, each class of character.
     */
    @Test
    @Order(2)
    void theHeadersConstraintsAreTheServers() {
        List<Map.Entry<String, String>> samples = List.of(
                Map.entry("Idempotency-Key", "k"),
                Map.entry("Idempotency-Key", "k".repeat(254) + "1"),
                Map.entry("Idempotency-Key", "k".repeat(255) + "2"),
                Map.entry("Idempotency-Key", "order 42 / line #7 {~}"),
                Map.entry("Idempotency-Key", "jobgate:summary:mine"),
                Map.entry("Idempotency-Key", "JOBGATE:mine-" + UUID.randomUUID()),
                Map.entry("Idempotency-Key", "tab\there"),
                Map.entry("X-Correlation-Id", "c"),
                Map.entry("X-Correlation-Id", "c".repeat(128)),
                Map.entry("X-Correlation-Id", "c".repeat(129)),
                Map.entry("X-Correlation-Id", "order-42/line:7.a_B"),
                Map.entry("X-Correlation-Id", "with space"),
                Map.entry("X-Correlation-Id", "semi;colon"),
                Map.entry("X-Correlation-Id", "plus+sign"));
        // No sample beyond ASCII: java.net.http sends such a character as '?', so the server would judge another value.
        JsonNode request = example("image", "ImageJobRequest");
        Map<String, Set<Boolean>> verdicts = new java.util.TreeMap<>();
        for (Map.Entry<String, String> sample : samples) {
            String header = sample.getKey();
            boolean allowed = contract().allowsParameter("POST", "/v1/jobs", "header", header,
                    com.fasterxml.jackson.databind.node.TextNode.valueOf(sample.getValue()));
            verdicts.computeIfAbsent(header, h -> new TreeSet<>()).add(allowed);
            String key = header.equals("Idempotency-Key") ? sample.getValue() : "contract-header-" + UUID.randomUUID();
            String correlation = header.equals("X-Correlation-Id") ? sample.getValue() : null;
            Response r = submit(ACME, key, correlation, request);
            if (allowed) {
                assertThat(r.status()).as("%s '%s': the document allows it, the server answered %s", header, sample.getValue(), r.text())
                        .isEqualTo(202);
            } else {
                assertThat(r.status()).as("%s '%s': the document forbids it, the server answered %s", header, sample.getValue(), r.text())
                        .isEqualTo(400);
                refused(r, 400, HEADER_REFUSALS.get(header));
            }
        }
        assertThat(verdicts).as("each header has samples the document allows and samples it forbids")
                .containsOnlyKeys(HEADER_REFUSALS.keySet()).allSatisfy((header, seen) -> assertThat(seen).containsExactly(false, true));
    }

    /** A request of a call with a JSON body that the server takes, for the closed-body check. */
    record BodyCall(String method, String path, String template, String key, String json) {
    }

    Response sendBody(BodyCall call, String json) {
        HttpRequest.Builder b = api.request(call.path(), call.key()).header("Content-Type", "application/json")
                .method(call.method(), HttpRequest.BodyPublishers.ofString(json));
        if (call.template().equals("/v1/jobs")) {
            b.header("Idempotency-Key", "contract-closed-" + UUID.randomUUID());
        }
        return contract().check(call.method(), call.template(), api.send(b.build()));
    }

    /**
     * Issue 64: a request body is closed in the document (additionalProperties: false) exactly when the server
     * refuses an unknown member of it. Every JSON request body the document declares is sent twice, as the server
     * takes it and with one member more: where the document forbids the member, the server refuses it (422
     * invalid_request); where the document allows it, the server answers as without it.
     */
    @Test
    @Order(2)
    void closedBodiesAreTheServersClosedBodies() {
        receiver.stubFor(post(com.github.tomakehurst.wiremock.client.WireMock.urlMatching("/hooks/closed-.*")).willReturn(ok()));
        Response made = send("POST", ACME, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints",
                "{\"url\": \"http://127.0.0.1:" + receiver.port() + "/hooks/closed-0\"}");
        assertThat(made.status()).as(made.text()).isEqualTo(201);
        String endpoint = "/v1/webhooks/endpoints/" + made.json().path("id").asText();
        try {
            closedBodies(endpoint);
        } finally {
            // The later tests count the tenant's endpoints.
            assertThat(send("DELETE", ACME, endpoint, "/v1/webhooks/endpoints/{endpointId}", null).status()).isEqualTo(204);
        }
    }

    private void closedBodies(String endpoint) {
        String canary = "/v1/admin/providers/simulator/canary/";
        String operator = "{\"operator\": \"contract\"}";
        Map<String, java.util.function.IntFunction<BodyCall>> calls = new java.util.LinkedHashMap<>();
        calls.put("post-jobs", n -> new BodyCall("POST", "/v1/jobs", "/v1/jobs", ACME, example("image", "ImageJobRequest").toString()));
        calls.put("post-webhook-endpoints", n -> new BodyCall("POST", "/v1/webhooks/endpoints", "/v1/webhooks/endpoints", ACME,
                "{\"url\": \"http://127.0.0.1:" + receiver.port() + "/hooks/closed-" + (n + 1) + "\"}"));
        calls.put("patch-webhook-endpoint", n -> new BodyCall("PATCH", endpoint, "/v1/webhooks/endpoints/{endpointId}", ACME,
                "{\"enabled\": true}"));
        calls.put("post-webhook-endpoint-rotate", n -> new BodyCall("POST", endpoint + "/rotate-secret",
                "/v1/webhooks/endpoints/{endpointId}/rotate-secret", ACME, "{\"overlap_seconds\": 60}"));
        calls.put("post-admin-redrive", n -> new BodyCall("POST", "/v1/admin/jobs/" + UUID.randomUUID() + "/redrive",
                "/v1/admin/jobs/{jobId}/redrive", ADMIN, operator));
        calls.put("put-admin-preset-default", n -> new BodyCall("PUT", "/v1/admin/presets/invoice-clean/default",
                "/v1/admin/presets/{presetId}/default", ADMIN, "{\"version\": null, \"operator\": \"contract\"}"));
        for (String verb : List.of("stop", "promote", "restart")) {
            calls.put("post-admin-canary-" + verb, n -> new BodyCall("POST", canary + verb, "/v1/admin/providers/{provider}/canary/" + verb,
                    ADMIN, operator));
        }
        for (String verb : List.of("drain", "restore")) { // restored last: the pool is as it was
            calls.put("post-admin-pool-member-" + verb, n -> new BodyCall("POST", "/v1/admin/pools/sims/members/simulator/" + verb,
                    "/v1/admin/pools/{pool}/members/{member}/" + verb, ADMIN, operator));
        }
        // The worker protocol's calls on tasks of pull member gpubox, leased for them: a heartbeat, a complete (its output
        // stored), a fail. The call with an unknown member is refused before its token is looked at.
        String worker = io.jobgate.support.TestTenants.GPUBOX_WORKER;
        List<JsonNode> tasks = leasedWorkerTasks(3);
        JsonNode completed = tasks.get(1);
        assertThat(api.send(api.request("/v1/workers/tasks/" + completed.path("task_id").asText() + "/output", worker)
                .header("Content-Type", "image/png").header("Lease-Token", completed.path("lease_token").asText())
                .PUT(HttpRequest.BodyPublishers.ofByteArray(io.jobgate.simulator.InvoiceRenderer.render(
                        completed.path("request").path("inputs"), 1024, 1024, "image/png", false, 1))).build()).status()).isEqualTo(200);
        calls.put("post-worker-leases", n -> new BodyCall("POST", "/v1/workers/gpubox/leases", "/v1/workers/{provider}/leases", worker,
                "{\"worker_id\": \"contract\", \"max\": 1}"));
        String[] ends = {"heartbeat", "complete", "fail"};
        String[] bodies = {"}", ", \"media_type\": \"image/png\"}", ", \"category\": \"terminal\"}"};
        for (int i = 0; i < 3; i++) {
            JsonNode task = tasks.get(i);
            String end = ends[i];
            String body = "{\"lease_token\": \"" + task.path("lease_token").asText() + "\"" + bodies[i];
            calls.put("post-worker-" + end, n -> new BodyCall("POST", "/v1/workers/tasks/" + task.path("task_id").asText() + "/" + end,
                    "/v1/workers/tasks/{taskId}/" + end, worker, body));
        }
        Set<String> withJsonBodies = new TreeSet<>();
        contract().document.path("paths").forEach(item -> item.forEach(op -> {
            if (op.path("requestBody").path("content").path("application/json").path("schema").has("$ref")) {
                withJsonBodies.add(op.path("operationId").asText());
            }
        }));
        assertThat(calls.keySet()).as("a call for every JSON request body the document declares").containsExactlyInAnyOrderElementsOf(withJsonBodies);

        Set<String> closed = new TreeSet<>();
        calls.forEach((id, call) -> {
            BodyCall plain = call.apply(0);
            BodyCall again = call.apply(1);
            com.fasterxml.jackson.databind.node.ObjectNode more = (com.fasterxml.jackson.databind.node.ObjectNode)
                    Json.parseObject(again.json().getBytes(java.nio.charset.StandardCharsets.UTF_8));
            more.put("x_contract_unknown", true);
            boolean allowed = contract().allowsRequest(again.method(), again.template(), more);
            Response taken = sendBody(plain, plain.json());
            Response extended = sendBody(again, more.toString());
            if (id.equals("post-webhook-endpoints")) {
                for (Response r : List.of(taken, extended)) {
                    if (r.status() == 201) {
                        send("DELETE", ACME, "/v1/webhooks/endpoints/" + r.json().path("id").asText(), "/v1/webhooks/endpoints/{endpointId}", null);
                    }
                }
            }
            if (allowed) {
                assertThat(extended.status()).as("%s: the document allows an unknown member, the server answered %s (without it %s)",
                        id, extended.text(), taken.text()).isEqualTo(taken.status());
            } else {
                closed.add(id);
                assertThat(taken.status()).as("%s without the member: %s", id, taken.text()).isLessThan(300);
                refused(extended, 422, "invalid_request");
            }
        });
        assertThat(closed).as("the job request is closed in the document and on the server").contains("post-jobs");
    }

    /**
     * The values of a text column's CHECK (col IN (...)) in the running database: what the server can answer
     * for that column, whatever its code spells.
     */
    static Set<String> databaseValues(String table, String column) {
        Set<String> values = new TreeSet<>();
        for (Map<String, Object> row : io.jobgate.support.Db.rows("SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint"
                + " WHERE contype = 'c' AND conrelid = '" + table + "'::regclass")) {
            String def = row.get("def").toString();
            if (def.matches("(?s).*\\(\\(*" + column + " = ANY.*")) {
                java.util.regex.Matcher m = java.util.regex.Pattern.compile("'([a-z_]+)'::text").matcher(def);
                while (m.find()) {
                    values.add(m.group(1));
                }
            }
        }
        assertThat(values).as("the CHECK of %s.%s", table, column).isNotEmpty();
        return values;
    }

    static Set<String> enumOf(JsonNode schema) {
        Set<String> values = new TreeSet<>();
        schema.path("enum").forEach(v -> values.add(v.asText()));
        return values;
    }

    /**
     * Issue 64: the states the document lists are the ones the database lets the server store and answer, and
     * the ones docs/webhooks.md names: a state renamed on one side only (cancelled for dropped) fails here.
     */
    @Test
    @Order(2)
    void theDocumentsStatesAreTheDatabases() throws Exception {
        JsonNode schemas = contract().document.path("components").path("schemas");
        Set<String> deliveries = databaseValues("webhook_deliveries", "state");
        assertThat(enumOf(schemas.path("Delivery").path("properties").path("state"))).as("Delivery.state")
                .containsExactlyInAnyOrderElementsOf(deliveries);
        assertThat(enumOf(schemas.path("JobStatus"))).as("JobStatus").containsExactlyInAnyOrderElementsOf(databaseValues("jobs", "status"));
        String row = java.nio.file.Files.readAllLines(java.nio.file.Path.of("docs/webhooks.md")).stream()
                .filter(l -> l.startsWith("| `GET /v1/jobs/{id}/deliveries`")).findFirst().orElseThrow();
        Set<String> documented = new TreeSet<>();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("`([a-z_]+)`").matcher(row.substring(row.indexOf("state ("), row.indexOf(")", row.indexOf("state ("))));
        while (m.find()) {
            documented.add(m.group(1));
        }
        assertThat(documented).as("docs/webhooks.md, the states of a delivery").containsExactlyInAnyOrderElementsOf(deliveries);
    }

    @Test
    @Order(3)
    void webhookEndpointsDeliveriesAndPayloadsAnswerAsDeclared() {
        receiver.stubFor(post("/hooks/ok").willReturn(ok()));
        receiver.stubFor(post("/hooks/dead").willReturn(aResponse().withStatus(500)));
        String every = "[\"job.queued\", \"job.running\", \"job.submitting\", \"job.provider_pending\", \"job.submission_unknown\","
                + " \"job.retry_wait\", \"job.succeeded\", \"job.failed\", \"job.cancelled\"]";
        String createOk = "{\"url\": \"http://127.0.0.1:" + receiver.port() + "/hooks/ok\", \"event_types\": " + every + "}";
        contract().checkRequest("POST", "/v1/webhooks/endpoints", Json.parseObject(createOk.getBytes()));
        Response made = send("POST", ACME, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints", createOk);
        assertThat(made.status()).as(made.text()).isEqualTo(201);
        String endpoint = made.json().path("id").asText();
        String one = "/v1/webhooks/endpoints/" + endpoint;
        String template = "/v1/webhooks/endpoints/{endpointId}";
        refused(send("POST", ACME, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints", createOk), 409, "endpoint_exists");
        assertThat(get(ACME, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints").json().path("endpoints")).hasSize(1);
        assertThat(get(ACME, one, template).status()).isEqualTo(200);
        assertThat(send("PATCH", ACME, one, template, "{\"enabled\": true, \"event_types\": " + every + "}").status()).isEqualTo(200);
        Response rotated = send("POST", ACME, one + "/rotate-secret", template + "/rotate-secret", "{\"overlap_seconds\": 60}");
        assertThat(rotated.json().path("previous_secret_expires_at").isTextual()).isTrue();

        // A job runs to its end: every status change is POSTed, each body the document's webhook payload.
        Response job = submit(ACME, "contract-" + UUID.randomUUID(), null, example("image", "ImageJobRequest"));
        String jobId = job.json().path("job_id").asText();
        awaitTerminal(ACME, jobId);
        await().atMost(Duration.ofSeconds(15)).until(() -> received("/hooks/ok").stream()
                .anyMatch(r -> r.getBodyAsString().contains("\"job.succeeded\"") && r.getBodyAsString().contains(jobId)));
        JsonNode webhook = contract().document.path("webhooks").path("job-status").path("post");
        assertThat(webhook.path("requestBody").path("content").path("application/json").path("schema").path("$ref").asText())
                .isEqualTo("#/components/schemas/WebhookEvent");
        List<LoggedRequest> payloads = received("/hooks/ok");
        for (LoggedRequest r : payloads) {
            contract().checkSchema("WebhookEvent", Json.parseObject(r.getBody()));
            webhook.path("parameters").forEach(h -> assertThat(r.getHeader(h.path("name").asText())).as(h.path("name").asText()).isNotBlank());
        }
        assertThat(payloads).extracting(r -> Json.parseObject(r.getBody()).path("type").asText())
                .contains("job.queued", "job.succeeded");
        await().atMost(Duration.ofSeconds(10)).until(() -> get(ACME, "/v1/jobs/" + jobId + "/deliveries", "/v1/jobs/{jobId}/deliveries")
                .json().path("deliveries").findValuesAsText("state").stream().allMatch("delivered"::equals));
        Response replayed = send("POST", ACME, one + "/replay?since=2020-01-01", template + "/replay", null);
        assertThat(replayed.status()).isEqualTo(202);
        assertThat(replayed.json().path("replayed").asInt()).isPositive();
        refused(send("POST", ACME, one + "/replay", template + "/replay", null), 422, "invalid_input");

        // A receiver that always fails: its delivery dies, is seen by its tenant and the operator, and is redriven.
        Response dead = send("POST", GLOBEX, "/v1/webhooks/endpoints", "/v1/webhooks/endpoints",
                "{\"url\": \"http://127.0.0.1:" + receiver.port() + "/hooks/dead\"}");
        assertThat(dead.status()).as(dead.text()).isEqualTo(201);
        Response cancelled = submit(GLOBEX, "contract-" + UUID.randomUUID(), "sim-fault-slow-" + UUID.randomUUID(),
                example("image", "ImageJobRequest"));
        send("POST", GLOBEX, "/v1/jobs/" + cancelled.json().path("job_id").asText() + "/cancel", "/v1/jobs/{jobId}/cancel", null);
        await().atMost(Duration.ofSeconds(20)).until(() -> !get(GLOBEX, "/v1/webhooks/deliveries/dead", "/v1/webhooks/deliveries/dead")
                .json().path("deliveries").isEmpty());
        assertThat(get(ADMIN, "/v1/admin/webhooks/dead", "/v1/admin/webhooks/dead").json().path("deliveries")).isNotEmpty();
        assertThat(get(ADMIN, "/v1/admin/webhooks/dead?tenant=globex", "/v1/admin/webhooks/dead").status()).isEqualTo(200);
        assertThat(get(GLOBEX, "/v1/jobs/" + cancelled.json().path("job_id").asText() + "/deliveries", "/v1/jobs/{jobId}/deliveries")
                .json().path("deliveries").path(0).path("state").asText()).isEqualTo("dead");
        Response redriven = send("POST", ADMIN, "/v1/admin/webhooks/dead/redrive?tenant=globex", "/v1/admin/webhooks/dead/redrive", null);
        assertThat(redriven.json().path("redriven").asInt()).isEqualTo(1);

        assertThat(send("DELETE", GLOBEX, "/v1/webhooks/endpoints/" + dead.json().path("id").asText(), template, null).status()).isEqualTo(204);
        assertThat(send("DELETE", ACME, one, template, null).status()).isEqualTo(204);
        refused(send("DELETE", ACME, one, template, null), 404, "endpoint_not_found");
    }

    @Test
    @Order(4)
    void operatorCallsAnswerAsDeclared() {
        // A job that fails (the simulator's wrong size), redriven by an operator.
        String failingKey = "contract-" + UUID.randomUUID();
        Response failing = submit(ACME, failingKey, "sim-fault-wrong_size-" + UUID.randomUUID(),
                example("image", "ImageJobRequest"));
        String id = failing.json().path("job_id").asText();
        assertThat(awaitTerminal(ACME, id).path("status").asText()).isEqualTo("failed");
        Response redrive = send("POST", ADMIN, "/v1/admin/jobs/" + id + "/redrive", "/v1/admin/jobs/{jobId}/redrive",
                "{\"operator\": \"contract\", \"reason\": \"schema check\"}");
        assertThat(redrive.status()).as(redrive.text()).isEqualTo(202);
        awaitTerminal(ACME, id);
        Response attempts = get(ADMIN, "/v1/admin/jobs/" + id + "/attempts", "/v1/admin/jobs/{jobId}/attempts");
        assertThat(attempts.json().path("redrives")).hasSize(1);
        Response found = get(ADMIN, "/v1/admin/jobs?find=" + failingKey, "/v1/admin/jobs");
        assertThat(found.json().path("jobs").path(0).path("job_id").asText()).isEqualTo(id);
        assertThat(get(ADMIN, "/v1/admin/jobs?tenant=acme&limit=2", "/v1/admin/jobs").json().path("jobs")).hasSize(2);
        refused(get(ADMIN, "/v1/admin/jobs?status=nope", "/v1/admin/jobs"), 400, "invalid_parameter");
        Response story = get(ADMIN, "/v1/admin/jobs/" + id, "/v1/admin/jobs/{jobId}");
        assertThat(story.json().path("redrives")).hasSize(1);
        assertThat(story.json().path("ledger")).isNotEmpty();
        refused(get(ADMIN, "/v1/admin/jobs/" + UUID.randomUUID(), "/v1/admin/jobs/{jobId}"), 404, "job_not_found");
        assertThat(send("POST", ADMIN, "/v1/admin/jobs/" + id + "/reconcile", "/v1/admin/jobs/{jobId}/reconcile", null).status())
                .isEqualTo(200);
        refused(send("POST", ADMIN, "/v1/admin/jobs/" + UUID.randomUUID() + "/redrive", "/v1/admin/jobs/{jobId}/redrive",
                "{\"operator\": \"contract\"}"), 404, "job_not_found");

        assertThat(get(ADMIN, "/v1/admin/usage", "/v1/admin/usage").json().path("tenants")).isNotEmpty();
        assertThat(get(ADMIN, "/v1/admin/presets", "/v1/admin/presets").json().path("presets")).isNotEmpty();
        assertThat(send("PUT", ADMIN, "/v1/admin/presets/invoice-clean/default", "/v1/admin/presets/{presetId}/default",
                "{\"version\": 1, \"operator\": \"contract\", \"reason\": \"schema check\"}").status()).isEqualTo(200);
        assertThat(send("PUT", ADMIN, "/v1/admin/presets/invoice-clean/default", "/v1/admin/presets/{presetId}/default",
                "{\"version\": null, \"operator\": \"contract\"}").json().path("pinned").asBoolean()).isFalse();
        assertThat(get(ADMIN, "/v1/admin/canaries", "/v1/admin/canaries").status()).isEqualTo(200);
        assertThat(get(ADMIN, "/v1/admin/pools", "/v1/admin/pools").json().path("pools")).isNotEmpty();
        assertThat(send("POST", ADMIN, "/v1/admin/pools/sims/members/simulator/drain", "/v1/admin/pools/{pool}/members/{member}/drain",
                "{\"operator\": \"contract\", \"reason\": \"schema check\"}").json().path("members").get(0).path("state").asText())
                .isEqualTo("drained");
        assertThat(send("POST", ADMIN, "/v1/admin/pools/sims/members/simulator/restore", "/v1/admin/pools/{pool}/members/{member}/restore",
                "{\"operator\": \"contract\"}").json().path("members").get(0).path("state").asText()).isEqualTo("open");
        refused(send("POST", ADMIN, "/v1/admin/pools/nosuch/members/simulator/drain", "/v1/admin/pools/{pool}/members/{member}/drain",
                "{\"operator\": \"contract\"}"), 404, "pool_not_found");
        assertThat(get(ADMIN, "/v1/admin/evaluations", "/v1/admin/evaluations").status()).isEqualTo(200);
        assertThat(get(ADMIN, "/v1/admin/evaluations?since=2020-01-01", "/v1/admin/evaluations").status()).isEqualTo(200);
    }

    /** {@code count} tasks of pull member gpubox, each for a job of its own, leased to this test. */
    List<JsonNode> leasedWorkerTasks(int count) {
        List<String> jobs = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            jobs.add(submit(ACME, "contract-" + UUID.randomUUID(), null, Json.parseObject("""
                    {"preset_id": "invoice-clean", "aspect_class": "square", "provider": "gpubox",
                     "inputs": {"supplier_name": "Contract", "invoice_id": "W-1", "currency": "EUR", "line_items": []}}"""
                    .getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                    .json().path("job_id").asText());
        }
        java.util.Map<String, JsonNode> leased = new java.util.HashMap<>();
        org.awaitility.Awaitility.await("the tasks leased").atMost(java.time.Duration.ofSeconds(30)).until(() -> {
            for (JsonNode lease : send("POST", io.jobgate.support.TestTenants.GPUBOX_WORKER, "/v1/workers/gpubox/leases",
                    "/v1/workers/{provider}/leases", "{\"worker_id\": \"contract\", \"max\": 32}").json().path("leases")) {
                leased.put(lease.path("job_id").asText(), lease);
            }
            return leased.keySet().containsAll(jobs);
        });
        return jobs.stream().map(leased::get).toList();
    }

    /** The worker protocol (docs/workers.md): pull member gpubox's tasks leased, kept, stored, completed and failed. */
    @Test
    @Order(10)
    void workerCallsAnswerAsDeclared() throws Exception {
        String worker = io.jobgate.support.TestTenants.GPUBOX_WORKER;
        List<JsonNode> tasks = leasedWorkerTasks(2);
        String[] jobs = {tasks.get(0).path("job_id").asText(), tasks.get(1).path("job_id").asText()};
        JsonNode done = tasks.get(0);
        String task = done.path("task_id").asText();
        String token = "{\"lease_token\": \"" + done.path("lease_token").asText() + "\"";
        assertThat(send("POST", worker, "/v1/workers/tasks/" + task + "/heartbeat", "/v1/workers/tasks/{taskId}/heartbeat", token + "}")
                .status()).isEqualTo(200);
        byte[] png = io.jobgate.simulator.InvoiceRenderer.render(done.path("request").path("inputs"), 1024, 1024, "image/png", false, 1);
        Response stored = contract().check("PUT", "/v1/workers/tasks/{taskId}/output", api.send(api.request("/v1/workers/tasks/"
                + task + "/output", worker).header("Content-Type", "image/png").header("Lease-Token", done.path("lease_token").asText())
                .PUT(HttpRequest.BodyPublishers.ofByteArray(png)).build()));
        assertThat(stored.status()).as(stored.text()).isEqualTo(200);
        assertThat(send("POST", worker, "/v1/workers/tasks/" + task + "/complete", "/v1/workers/tasks/{taskId}/complete",
                token + ", \"media_type\": \"image/png\", \"billed_units\": 1.5, \"billed_unit\": \"gpu_seconds\"}").status()).isEqualTo(200);
        assertThat(awaitTerminal(ACME, jobs[0]).path("status").asText()).isEqualTo("succeeded");
        JsonNode broken = tasks.get(1);
        assertThat(send("POST", worker, "/v1/workers/tasks/" + broken.path("task_id").asText() + "/fail", "/v1/workers/tasks/{taskId}/fail",
                "{\"lease_token\": \"" + broken.path("lease_token").asText() + "\", \"category\": \"terminal\", \"message\": \"no GPU\"}")
                .status()).isEqualTo(200);
        assertThat(awaitTerminal(ACME, jobs[1]).path("status").asText()).isEqualTo("failed");
        refused(send("POST", worker, "/v1/workers/tasks/" + task + "/heartbeat", "/v1/workers/tasks/{taskId}/heartbeat", token + "}"),
                409, "task_ended");

        // What operators see of them (admin key): every pull member, or the one named.
        assertThat(get(ADMIN, "/v1/admin/workers", "/v1/admin/workers").json().path("members")).isNotEmpty();
        JsonNode member = get(ADMIN, "/v1/admin/workers?provider=gpubox", "/v1/admin/workers").json().path("members").get(0);
        assertThat(member.path("workers")).extracting(w -> w.path("worker_id").asText()).contains("contract");
        assertThat(member.path("tasks").path("ended_last_hour").path("succeeded").asLong()).isPositive();
        refused(get(ADMIN, "/v1/admin/workers?provider=simulator", "/v1/admin/workers"), 404, "not_found");
    }

    private List<LoggedRequest> received(String path) {
        return receiver.findAll(postRequestedFor(urlEqualTo(path)));
    }

    /** A test of this class, as the coverage check runs it when JUnit did not. */
    interface Scenario {
        void run() throws Exception;
    }

    /** Every other test of this class by name: the calls the coverage check counts. */
    Map<String, Scenario> scenarios() {
        Map<String, Scenario> all = new java.util.LinkedHashMap<>();
        all.put("theServedDocumentIsTheCheckedInOne", this::theServedDocumentIsTheCheckedInOne);
        all.put("anAnswerThatDoesNotMatchItsSchemaFails", this::anAnswerThatDoesNotMatchItsSchemaFails);
        all.put("jobsUploadsAndUsageAnswerAsDeclared", this::jobsUploadsAndUsageAnswerAsDeclared);
        all.put("refusalsAreTheDeclaredProblemDocuments", this::refusalsAreTheDeclaredProblemDocuments);
        all.put("theHeadersConstraintsAreTheServers", this::theHeadersConstraintsAreTheServers);
        all.put("closedBodiesAreTheServersClosedBodies", this::closedBodiesAreTheServersClosedBodies);
        all.put("theDocumentsStatesAreTheDatabases", this::theDocumentsStatesAreTheDatabases);
        all.put("webhookEndpointsDeliveriesAndPayloadsAnswerAsDeclared", this::webhookEndpointsDeliveriesAndPayloadsAnswerAsDeclared);
        all.put("operatorCallsAnswerAsDeclared", this::operatorCallsAnswerAsDeclared);
        all.put("workerCallsAnswerAsDeclared", this::workerCallsAnswerAsDeclared);
        return all;
    }

    /** The tests JUnit has begun in this class (one instance per class), by method name. */
    final Set<String> begun = new java.util.concurrent.ConcurrentSkipListSet<>();

    @org.junit.jupiter.api.BeforeEach
    void begins(org.junit.jupiter.api.TestInfo test) {
        test.getTestMethod().ifPresent(m -> begun.add(m.getName()));
    }

    /**
     * Every operation of the document had its success answers checked, but those listed as not reached here.
     * A test of its own, last by order, that never skips: whatever JUnit ran before it (the whole class, one test
     * picked with -Dtest=Class#method, another order), it first runs each scenario that did not begin, so the calls
     * are always made; a scenario that began and failed is not run again, and what it left unchecked fails here too.
     */
    @Test
    @Order(Integer.MAX_VALUE)
    void everyOperationsSuccessAnswersWereChecked() throws Exception {
        Set<String> tests = new TreeSet<>();
        for (java.lang.reflect.Method m : getClass().getDeclaredMethods()) {
            if (m.isAnnotationPresent(Test.class) && !m.getName().equals("everyOperationsSuccessAnswersWereChecked")) {
                tests.add(m.getName());
            }
        }
        assertThat(scenarios().keySet()).as("scenarios(): every other test of this class").containsExactlyInAnyOrderElementsOf(tests);
        for (Map.Entry<String, Scenario> scenario : scenarios().entrySet()) {
            if (begun.add(scenario.getKey())) {
                scenario.getValue().run();
            }
        }
        Set<String> declared = new TreeSet<>();
        contract().document.path("paths").forEach(item -> item.forEach(op -> op.path("responses").fieldNames().forEachRemaining(status -> {
            if (status.startsWith("2")) {
                declared.add(op.path("operationId").asText() + " " + status);
            }
        })));
        Set<String> missing = new TreeSet<>(declared);
        missing.removeAll(contract().checked);
        missing.removeAll(NOT_REACHED.keySet());
        assertThat(missing).as("success answers the document declares that no real answer was checked against").isEmpty();
        assertThat(declared).as("the answers listed as not reached are declared").containsAll(NOT_REACHED.keySet());
    }
}
