package io.jobgate.api;

import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.jobgate.job.JobFinalizer;
import io.jobgate.support.ApiClient;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static io.jobgate.support.TestTenants.ACME;
import static io.jobgate.support.TestTenants.ADMIN;
import static io.jobgate.support.TestTenants.BROKE;
import static io.jobgate.support.TestTenants.LOWBYTES;
import static io.jobgate.support.TestTenants.TINY;
import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The error table of docs/api.md, row by row: each code it lists is produced by a request, with the
 * status the table gives and a problem document; and every code the table lists has a request here.
 */
class ErrorTableTest extends GatewayTestBase {

    static final int UPLOAD_CAP = 64 * 1024;


    @BeanInject
    JobFinalizer finalizer;
    @BeanInject("workerTasks")
    io.jobgate.workers.WorkerTasks workerTasks;
    @BeanInject
    org.apache.camel.CamelContext context;

    @Override
    protected Map<String, String> settings() {
        // A pool of transcription jobs, which an image job may not name (pool_kind_mismatch); tenant picky, which may not
        // use fakeimg (provider_not_allowed) nor so the pool "fakes" (pool_not_allowed).
        // Pull member gpubox (src/test/resources/workers): the worker protocol's codes.
        return Map.of("jobgate.uploads.max-bytes", Integer.toString(UPLOAD_CAP),
                "jobgate.pools.dirs", "src/test/resources/pools/kinds,src/test/resources/pools/rules",
                "jobgate.tenants.files", "config/tenants.yaml,src/test/resources/test-tenants.yaml,src/test/resources/pools/rules/tenants.yaml",
                "jobgate.providers.dirs", "config/providers,src/test/resources/providers,src/test/resources/workers/providers",
                "camel.main.routes-include-pattern", io.jobgate.support.GatewayTestSupport.ROUTES
                        + ",file:src/test/resources/workers/adapters/*.camel.yaml");
    }

    ApiClient.Response admin(String method, String path, String json) {
        return api.send(api.request(path, ADMIN).header("Content-Type", "application/json")
                .method(method, java.net.http.HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** A video job (preset invoice-clip) with these inputs; the rest valid. */
    static String clip(String seconds, String resolution) {
        return """
                {"preset_id": "invoice-clip", "aspect_class": "landscape",
                 "inputs": {"duration_seconds": %s, "resolution": %s, "supplier_name": "Clip GmbH",
                            "invoice_id": "V-1", "currency": "EUR", "total": 1200.5}}""".formatted(seconds, resolution);
    }

    static String invoice(String supplier) {
        return """
                {"preset_id": "invoice-clean", "aspect_class": "portrait",
                 "inputs": {"supplier_name": "%s", "invoice_id": "E-1", "currency": "EUR", "line_items": []}}"""
                .formatted(supplier);
    }

    static String key() {
        return "errors-" + UUID.randomUUID();
    }

    Response post(String apiKey, String path, String contentType, String body, Map<String, String> headers) {
        HttpRequest.Builder b = api.request(path, apiKey).header("Content-Type", contentType)
                .POST(HttpRequest.BodyPublishers.ofString(body));
        headers.forEach(b::header);
        return api.send(b.build());
    }

    /** Posts until the gateway stops saying 202 (the tenant's limit is reached), at most a few times. */
    Response untilRefused(String apiKey, Supplier<String> body) {
        Response r = null;
        for (int i = 0; i < 5 && (r == null || r.status() == 202); i++) {
            r = api.postJob(apiKey, key(), body.get());
        }
        return r;
    }

    /** A task of pull member gpubox (for a job of acme), leased over HTTP: its id and lease token. */
    String[] leasedTask() {
        String job = api.postJob(ACME, key(), invoice("Worker")).json().path("job_id").asText();
        UUID task = workerTasks.submit("gpubox", UUID.fromString(job), 1, "{}").taskId();
        for (int round = 0; round < 20; round++) {
            Response r = worker("/v1/workers/gpubox/leases", "{\"worker_id\": \"errors\", \"max\": 32}");
            for (com.fasterxml.jackson.databind.JsonNode lease : r.json().path("leases")) {
                if (lease.path("task_id").asText().equals(task.toString())) {
                    return new String[] {task.toString(), lease.path("lease_token").asText()};
                }
            }
        }
        throw new AssertionError("task " + task + " was never leased");
    }

    Response worker(String path, String json) {
        return api.send(api.request(path, io.jobgate.support.TestTenants.GPUBOX_WORKER).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** One request per code of the table. */
    Map<String, Supplier<Response>> requests() {
        return Map.ofEntries(
                entry("malformed_json", () -> api.postJob(ACME, key(), "{\"preset_id\": ")),
                entry("missing_idempotency_key", () -> post(ACME, "/v1/jobs", "application/json", invoice("A"), Map.of())),
                entry("invalid_idempotency_key", () -> api.postJob(ACME, "k".repeat(256), invoice("A"))),
                entry("invalid_correlation_id", () -> post(ACME, "/v1/jobs", "application/json", invoice("A"),
                        Map.of("Idempotency-Key", key(), "X-Correlation-Id", "x".repeat(300)))),
                entry("invalid_parameter", () -> api.get(ACME, "/v1/jobs?limit=many")),
                entry("empty_upload", () -> api.upload(ACME, "image/png", new byte[0])),
                entry("unauthorized", () -> api.get(null, "/v1/jobs")),
                entry("budget_exhausted", () -> untilRefused(BROKE, () -> invoice("Broke"))),
                entry("job_not_found", () -> api.get(ACME, "/v1/jobs/" + UUID.randomUUID())),
                entry("not_cancellable", () -> {
                    String id = api.postJob(ACME, key(), invoice("Done")).json().path("job_id").asText();
                    finalizer.finalizeJob(UUID.fromString(id), JobFinalizer.Outcome.failed("transient", "failed for the test"));
                    return api.post(ACME, "/v1/jobs/" + id + "/cancel");
                }),
                entry("not_redrivable", () -> {
                    String id = api.postJob(ACME, key(), invoice("Open")).json().path("job_id").asText();
                    return admin("POST", "/v1/admin/jobs/" + id + "/redrive", "{\"operator\": \"ops\"}");
                }),
                entry("redrive_lifetime_exceeded", () -> {
                    String id = api.postJob(ACME, key(), invoice("Old")).json().path("job_id").asText();
                    finalizer.finalizeJob(UUID.fromString(id), JobFinalizer.Outcome.failed("transient", "failed for the test"));
                    // A day later than its lifetime allowed (a final job is otherwise unchangeable).
                    Db.execute("SET session_replication_role = replica; UPDATE jobs SET expires_at = now() - interval '1 day' "
                            + "WHERE job_id = '" + id + "'");
                    return admin("POST", "/v1/admin/jobs/" + id + "/redrive", "{\"operator\": \"ops\"}");
                }),
                entry("canary_not_found", () -> admin("POST", "/v1/admin/providers/simulator/canary/stop",
                        "{\"operator\": \"ops\"}")),
                entry("pool_drained", () -> {
                    admin("POST", "/v1/admin/pools/fakes/members/fakeimg/drain", "{\"operator\": \"ops\"}");
                    try {
                        return api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"pool\": \"fakes\", "));
                    } finally {
                        admin("POST", "/v1/admin/pools/fakes/members/fakeimg/restore", "{\"operator\": \"ops\"}");
                    }
                }),
                entry("lease_lost", () -> worker("/v1/workers/tasks/" + leasedTask()[0] + "/heartbeat",
                        "{\"lease_token\": \"" + UUID.randomUUID() + "\"}")),
                entry("task_cancelled", () -> {
                    String[] leased = leasedTask();
                    workerTasks.cancel(UUID.fromString(leased[0]));
                    return worker("/v1/workers/tasks/" + leased[0] + "/heartbeat", "{\"lease_token\": \"" + leased[1] + "\"}");
                }),
                entry("output_missing", () -> {
                    String[] leased = leasedTask();
                    return worker("/v1/workers/tasks/" + leased[0] + "/complete", "{\"lease_token\": \"" + leased[1]
                            + "\", \"media_type\": \"image/png\"}");
                }),
                entry("task_ended", () -> {
                    String[] leased = leasedTask();
                    String fail = "{\"lease_token\": \"" + leased[1] + "\", \"category\": \"terminal\", \"message\": \"no GPU\"}";
                    worker("/v1/workers/tasks/" + leased[0] + "/fail", fail);
                    return worker("/v1/workers/tasks/" + leased[0] + "/fail", fail);
                }),
                entry("pool_not_found", () -> admin("POST", "/v1/admin/pools/nosuch/members/fakeimg/drain", "{\"operator\": \"ops\"}")),
                entry("pool_member_not_found", () -> admin("POST", "/v1/admin/pools/fakes/members/nobody/drain",
                        "{\"operator\": \"ops\"}")),
                entry("canary_conflict", () -> {
                    // A running canary cannot be restarted (its row as the canary-gates route writes it).
                    Db.update("""
                            INSERT INTO canaries (revision, provider, revisions, status, judged_from, changed_by, changed_at, created_at)
                            VALUES ('errors-1-candidate@0000000000', 'errors', '{errors-1-candidate@0000000001}', 'running',
                                    now(), 'drop-in', now(), now()) ON CONFLICT DO NOTHING""");
                    return admin("POST", "/v1/admin/providers/errors/canary/restart", "{\"operator\": \"ops\"}");
                }),
                entry("unknown_webhook_url", () -> api.postJob(ACME, key(), invoice("Hooked").replace("\"preset_id\"",
                        "\"webhook_url\": \"https://203.0.113.7/not-registered\", \"preset_id\""))),
                entry("endpoint_not_found", () -> api.get(ACME, "/v1/webhooks/endpoints/" + UUID.randomUUID())),
                entry("endpoint_exists", () -> {
                    // ErrorTableTest runs no loopback endpoints: a public literal address needs no DNS.
                    post(ACME, "/v1/webhooks/endpoints", "application/json", "{\"url\": \"https://203.0.113.7/errors\"}", Map.of());
                    return post(ACME, "/v1/webhooks/endpoints", "application/json", "{\"url\": \"https://203.0.113.7/errors\"}", Map.of());
                }),
                entry("webhook_url_insecure", () -> post(ACME, "/v1/webhooks/endpoints", "application/json",
                        "{\"url\": \"http://203.0.113.7/errors\"}", Map.of())),
                entry("webhook_url_private", () -> post(ACME, "/v1/webhooks/endpoints", "application/json",
                        "{\"url\": \"https://169.254.169.254/latest\"}", Map.of())),
                entry("webhook_url_unresolvable", () -> post(ACME, "/v1/webhooks/endpoints", "application/json",
                        "{\"url\": \"https://no-such-host.invalid/errors\"}", Map.of())),
                entry("invalid_duration", () -> api.postJob(ACME, key(), clip("5", "\"720p\""))),
                entry("invalid_resolution", () -> api.postJob(ACME, key(), clip("4", "\"4k\""))),
                entry("preset_not_found", () -> admin("PUT", "/v1/admin/presets/no-such-preset/default",
                        "{\"version\": 1, \"operator\": \"ops\"}")),
                entry("unknown_preset_version", () -> admin("PUT", "/v1/admin/presets/invoice-clean/default",
                        "{\"version\": 99, \"operator\": \"ops\"}")),
                entry("not_ready", () -> {
                    String id = api.postJob(ACME, key(), invoice("Waiting")).json().path("job_id").asText();
                    return api.get(ACME, "/v1/jobs/" + id + "/output");
                }),
                entry("upload_too_large", () -> {
                    byte[] big = new byte[UPLOAD_CAP + 1];
                    System.arraycopy(Samples.png(2, 2), 0, big, 0, 8);
                    return api.upload(ACME, "image/png", big);
                }),
                entry("request_too_large", () -> api.postJob(ACME, key(), invoice("x".repeat(70 * 1024)))),
                entry("unsupported_media_type", () -> api.upload(ACME, "text/plain", "hello".getBytes())),
                entry("media_type_mismatch", () -> api.upload(ACME, "audio/wav", Samples.png(10, 11))),
                entry("invalid_request", () -> api.postJob(ACME, key(), "{\"aspect_class\": \"square\"}")),
                entry("unknown_preset", () -> api.postJob(ACME, key(), "{\"preset_id\": \"no-such-preset\"}")),
                entry("invalid_aspect_class", () -> api.postJob(ACME, key(), invoice("A").replace("portrait", "panorama"))),
                entry("invalid_input", () -> api.postJob(ACME, key(), invoice("S".repeat(200)))),
                entry("unknown_upload", () -> api.postJob(ACME, key(),
                        "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + UUID.randomUUID() + "\"}")),
                entry("upload_expired", () -> {
                    String upload = api.upload(ACME, "audio/wav", Samples.wav(321)).json().path("upload_id").asText();
                    Db.update("UPDATE uploads SET expired_at = now() WHERE upload_id = ?::uuid", upload);
                    return api.postJob(ACME, key(), "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload + "\"}");
                }),
                entry("unknown_provider", () -> api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"provider\": \"nobody\", "))),
                entry("unknown_pool", () -> api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"pool\": \"nosuch\", "))),
                entry("pool_kind_mismatch", () -> api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"pool\": \"transcripts\", "))),
                entry("provider_not_allowed", () -> api.postJob("test-picky-key", key(), invoice("A").replaceFirst("\\{", "{\"provider\": \"fakeimg\", "))),
                entry("pool_not_allowed", () -> api.postJob("test-picky-key", key(), invoice("A").replaceFirst("\\{", "{\"pool\": \"fakes\", "))),
                entry("pool_or_provider", () -> api.postJob(ACME, key(),
                        invoice("A").replaceFirst("\\{", "{\"pool\": \"transcripts\", \"provider\": \"fakeimg\", "))),
                entry("provider_not_running", () -> api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"provider\": \"noroute\", "))),
                entry("aspect_class_not_rendered", () -> api.postJob(ACME, key(), invoice("A").replaceFirst("\\{", "{\"provider\": \"squareonly\", "))),
                entry("idempotency_key_reused", () -> {
                    String key = key();
                    api.postJob(ACME, key, invoice("First"));
                    return api.postJob(ACME, key, invoice("Second"));
                }),
                entry("tenant_concurrency", () -> untilRefused(TINY, () -> invoice("Tiny"))),
                entry("global_capacity", () -> {
                    Db.execute("UPDATE gateway_capacity SET in_flight = in_flight + 100000 WHERE id = 1");
                    try {
                        return api.postJob(ACME, key(), invoice("Full"));
                    } finally {
                        Db.execute("UPDATE gateway_capacity SET in_flight = in_flight - 100000 WHERE id = 1");
                    }
                }),
                entry("queued_bytes", () -> {
                    String upload = api.upload(LOWBYTES, "audio/wav", Samples.wav(100)).json().path("upload_id").asText();
                    return untilRefused(LOWBYTES, () -> "{\"preset_id\": \"call-transcript\", \"upload_id\": \"" + upload + "\"}");
                }),
                entry("internal_error", () -> {
                    try (Db.Fault fault = Db.failInsertsFor("outbox", "boom-")) {
                        return api.postJob(ACME, "boom-" + UUID.randomUUID(), invoice("Boom"));
                    }
                }),
                entry("input_too_large", () -> {
                    String upload = api.upload(ACME, "audio/wav", Samples.wav(200)).json().path("upload_id").asText();
                    return api.postJob(ACME, key(), "{\"preset_id\": \"call-transcript\", \"provider\": \"smallinput\", \"upload_id\": \""
                            + upload + "\"}");
                }),
                entry("transaction_conflict", () -> {
                    // PostgreSQL's answer to a lock cycle (40P01), here on every run of the admission's transaction.
                    try (Db.Fault fault = Db.failInsertsFor("outbox", "cycle-", "40P01")) {
                        return api.postJob(ACME, "cycle-" + UUID.randomUUID(), invoice("Cycle"));
                    }
                }),
                entry("database_unavailable", () -> {
                    // The database's own answer while it is not taking work (a failover): 57P03, cannot_connect_now.
                    try (Db.Fault fault = Db.failInsertsFor("outbox", "lost-", "57P03")) {
                        return api.postJob(ACME, "lost-" + UUID.randomUUID(), invoice("Lost"));
                    }
                }),
                entry("unknown_webhook", () -> post(null, "/v1/providers/nobody/webhook", "application/json", "{}", Map.of())),
                entry("invalid_signature", () -> post(null, "/v1/providers/fakeasync/webhook", "application/json", "{}",
                        Map.of("webhook-id", "msg_errors", "webhook-timestamp", Long.toString(java.time.Instant.now().getEpochSecond()),
                                "webhook-signature", "v1,bm90IHRoZSBzaWduYXR1cmU="))),
                entry("not_found", () -> api.get(ACME, "/v1/no-such-resource")),
                entry("method_not_allowed", () -> api.send(api.request("/v1/usage", ACME).DELETE().build())),
                entry("not_available", () -> {
                    try {
                        context.getRouteController().stopRoute("get-usage");
                        return api.get(ACME, "/v1/usage");
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    } finally {
                        try {
                            context.getRouteController().startRoute("get-usage");
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }));
    }

    /** The table: each code with the status its row gives. */
    static List<Arguments> table() throws Exception {
        String readme = Files.readString(Path.of("docs/api.md"));
        String section = readme.substring(readme.indexOf("## Errors"));
        section = section.substring(0, section.indexOf("\n#", 5));
        List<Arguments> rows = new ArrayList<>();
        Pattern row = Pattern.compile("^\\| (\\d{3}) \\| (.*?) \\|", Pattern.MULTILINE);
        Matcher m = row.matcher(section);
        while (m.find()) {
            Matcher code = Pattern.compile("`([a-z_]+)`").matcher(m.group(2));
            while (code.find()) {
                rows.add(Arguments.of(Integer.parseInt(m.group(1)), code.group(1)));
            }
        }
        return rows;
    }

    static Stream<Arguments> everyRow() throws Exception {
        return table().stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("everyRow")
    void eachCodeOfTheTableIsAProblemWithItsStatus(int status, String code) {
        Supplier<Response> request = requests().get(code);
        assertThat(request).as("a request that produces " + code).isNotNull();

        Response r = request.get();

        assertThat(r.status()).as(r.text()).isEqualTo(status);
        assertThat(r.contentType()).isEqualTo("application/problem+json");
        assertThat(r.code()).isEqualTo(code);
        assertThat(r.json().path("status").asInt()).isEqualTo(status);
        assertThat(r.json().path("type").asText()).isEqualTo("urn:jobgate:problem:" + code);
        assertThat(r.json().path("detail").asText()).isNotBlank();
    }

    @Test
    void everyCodeWithARequestHereIsInTheTable() throws Exception {
        Set<String> documented = new TreeSet<>();
        table().forEach(a -> documented.add((String) a.get()[1]));
        assertThat(documented).containsAll(new TreeSet<>(requests().keySet()));
    }
}
