package io.jobgate.worker;

import io.jobgate.job.JobLeases;
import io.jobgate.job.Lease;

import io.jobgate.job.ErrorCategory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.stubbing.Scenario;
import com.github.tomakehurst.wiremock.verification.LoggedRequest;
import io.jobgate.job.JobFinalizer;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.relay.OutboxRelay;
import io.jobgate.support.ApiClient;
import io.jobgate.support.Db;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.Jobs;
import io.jobgate.support.Samples;
import jakarta.jms.ConnectionFactory;
import jakarta.jms.MessageProducer;
import jakarta.jms.Session;
import jakarta.jms.TextMessage;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

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
 * What the worker's tests share: a gateway with the worker and the sweeper on, against a provider faked with WireMock
 * over real HTTP, with the real relay, Artemis, PostgreSQL and S3 API. Each test tags its requests with a unique
 * supplier name, which the rendered prompt carries, so stubs and the fake's request log are per test.
 */
abstract class WorkerTestBase extends GatewayTestBase {

    static final String PATH = "/v1/images/generations";

    WireMockServer fake;
    Path dropInRoutes;
    Path dropInProviders;

    @BeanInject
    Worker worker;
    @BeanInject
    Sweeper sweeper;
    @BeanInject
    JobFinalizer finalizer;
    @BeanInject
    ProviderCatalog providers;
    @BeanInject
    JobLeases leases;
    @BeanInject
    AttemptStarts starts;
    @BeanInject
    io.jobgate.job.ProviderGates gates;
    @BeanInject
    CamelContext context;
    /** The gateway's clock: tests that need time to pass move it. */
    final io.jobgate.support.MovableClock clock = movableClock();
    @BeanInject
    software.amazon.awssdk.services.s3.S3Client s3;

    @Override
    protected Map<String, String> settings() throws Exception {
        fake = fakeProvider();
        dropInRoutes = Files.createTempDirectory("jobgate-adapters");
        dropInProviders = Files.createTempDirectory("jobgate-providers");
        return Map.ofEntries(
                Map.entry("jobgate.worker.enabled", "true"),
                Map.entry("jobgate.worker.concurrency", "4"),
                Map.entry("jobgate.worker.lease-margin-seconds", "1"),
                Map.entry("jobgate.worker.gate-full-delay-ms", "100"),
                // Retries wait exactly the ceiling of their jitter window (200, 400, 800 ms): measurable, still the real code path.
                Map.entry("jobgate.worker.backoff-base-ms", "200"),
                Map.entry("jobgate.worker.backoff-cap-ms", "5000"),
                Map.entry("jobgate.worker.backoff-jitter", "false"),
                Map.entry("jobgate.sweeper.enabled", "true"),
                Map.entry("jobgate.sweeper.period-ms", "200"),
                Map.entry("jobgate.provider.fakeimg.base-url", fake.baseUrl()),
                Map.entry("jobgate.provider.dropin.base-url", fake.baseUrl()),
                Map.entry("jobgate.providers.dirs", "config/providers,src/test/resources/providers," + dropInProviders),
                Map.entry("camel.main.routes-reload-enabled", "true"),
                Map.entry("camel.main.routes-reload-directory", dropInRoutes.toString()),
                Map.entry("camel.main.routes-reload-pattern", "*.camel.yaml"));
    }

    /** When the attempt's outcome said the next one was due. */
    Instant due(UUID id, int attempt) {
        return ((java.sql.Timestamp) Db.single("SELECT next_attempt_at FROM attempts WHERE job_id = ? AND attempt = ?", id, attempt)
                .get("next_attempt_at")).toInstant();
    }

    @BeforeEach
    void resetFaults() {
        clock.reset();
        worker.injectFaults(step -> { });
    }

    UUID submit(String tag, String provider) {
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), """
                {"preset_id": "invoice-clean", "aspect_class": "portrait", "provider": "%s",
                 "inputs": {"supplier_name": "%s", "invoice_id": "INV-1", "currency": "EUR",
                            "line_items": [{"description": "Work", "quantity": 1, "unit_price": 10}]}}"""
                .formatted(provider, tag));
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        return UUID.fromString(r.json().path("job_id").asText());
    }

    static String pngReply() {
        return "{\"created\": 1, \"data\": [{\"b64_json\": \"" + Base64.getEncoder().encodeToString(Samples.png(1024, 1536)) + "\"}]}";
    }

    List<LoggedRequest> requests(String tag) {
        return fake.findAll(postRequestedFor(urlEqualTo(PATH)).withRequestBody(containing(tag)));
    }

    static Map<String, Object> job(UUID id) {
        return Db.single("SELECT status, attempts, error_category, error_message, result::text AS result, "
                + "finalized_at, lease_token FROM jobs WHERE job_id = ?", id);
    }

    static List<Map<String, Object>> attempts(UUID id) {
        return Db.rows("SELECT attempt, outcome, http_status, error_category, error_message, adapter, adapter_revision, "
                + "duration_ms, next_attempt_at, response_excerpt, retry_after FROM attempts WHERE job_id = '" + id
                + "' ORDER BY attempt");
    }

    /** A job the relay dispatched, its dispatch event due in an hour (no worker gets it); @return the event's id. */
    long dispatchedJob(UUID id, String provider) {
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        jobs.job("acme").id(id).key("dispatched-" + id).provider(provider).lifetime(3600, Instant.now().plusSeconds(3600))
                .dispatchedAt(Instant.now()).insert();
        jobs.dispatch(id, "acme", Instant.now().plusSeconds(3600));
        return Db.count("SELECT max(event_id) FROM outbox WHERE job_id = ?", id);
    }

    /** The provider's slot rows, as its first start makes them (the long way), so the usual start can claim one. */
    void fakeimgSlotsMade() {
        Db.execute("INSERT INTO provider_slots (provider, slot) SELECT 'fakeimg', g FROM generate_series(0, "
                + (providers.find("fakeimg").orElseThrow().maxConcurrency() - 1) + ") g ON CONFLICT DO NOTHING");
    }

    AttemptStarts.GatePass startAsTheWorkerDoes(UUID id, long event) {
        fakeimgSlotsMade();
        Lease peeked = leases.peek(id, event).orElseThrow();
        return starts.start(id, event, "test-worker", Duration.ofSeconds(30), providers.find("fakeimg").orElseThrow(),
                Duration.ofSeconds(1), null, Duration.ofSeconds(1), peeked);
    }

    double lateAnswers(String provider, String outcome) {
        String metrics = api.send(api.request("/observe/metrics", null).GET().build()).text();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^jobgate_late_answers_total\\{[^}]*outcome=\"" + outcome
                + "\"[^}]*provider=\"" + provider + "\"[^}]*\\} ([0-9.Ee+]+)$").matcher(metrics);
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
}
