package io.jobgate.worker;

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
 * How an attempt starts: the usual start takes the lease and the provider's slot as one transition, a full provider
 * or a closed gate makes the job wait without spending an attempt, a closing gate moves the waiting dispatches to its
 * reopening, the provider's concurrency limit holds across jobs, and a stored request that no longer validates fails
 * before any call.
 */
class WorkerStartsTest extends WorkerTestBase {


    @Test
    void aClosingGateMovesTheProvidersWaitingDispatchesToItsReopening() {
        String tag = Jobs.tag();
        io.jobgate.support.JobFactory jobs = io.jobgate.support.JobFactory.onTestDatabase();
        Instant inAnHour = Instant.now().plus(Duration.ofHours(1));
        for (String provider : List.of("gated-" + tag, "open-" + tag)) {
            UUID id = jobs.job("acme").key(tag + "-" + provider).status("retry_wait").provider(provider)
                    .lifetime(86400, Instant.now().plus(Duration.ofDays(1))).nextAttemptAt(inAnHour).insert();
            jobs.dispatch(id, "acme", inAnHour);
        }
        Instant reopening = clock.instant().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.MICROS);

        int moved = gates.close("gated-" + tag, reopening, "HTTP 429 in a test");

        assertThat(moved).isEqualTo(1);
        assertThat(Db.rows("SELECT j.provider, o.available_at FROM outbox o JOIN jobs j USING (job_id) "
                + "WHERE j.idempotency_key LIKE '" + tag + "-%' ORDER BY j.provider")).satisfiesExactly(
                gated -> assertThat(((java.sql.Timestamp) gated.get("available_at")).toInstant()).isEqualTo(reopening),
                open -> assertThat(((java.sql.Timestamp) open.get("available_at")).toInstant()).isBefore(reopening));
        assertThat(((java.sql.Timestamp) Db.single("SELECT next_attempt_at FROM jobs WHERE idempotency_key = ?",
                tag + "-gated-" + tag).get("next_attempt_at")).toInstant()).as("the job shows its new due time").isEqualTo(reopening);
        Db.execute("DELETE FROM outbox WHERE job_id IN (SELECT job_id FROM jobs WHERE idempotency_key LIKE '" + tag + "-%'); "
                + "DELETE FROM jobs WHERE idempotency_key LIKE '" + tag + "-%'");
    }

    /**
     * The usual start (nothing against the request, caps left, a free slot) is one transition: the job
     * goes from queued to submitting in one row version, under the token its provider slot was claimed
     * with, and its attempt opens under the same token.
     */
    @Test
    void aUsualStartTakesTheLeaseAndStartsTheCallAsOneTransition() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        List<io.jobgate.job.JobTransitions.Event> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        context.getRegistry().lookupByNameAndType("jobTransitions", io.jobgate.job.JobTransitions.class).observe((e, moved, change) -> {
            if (id.equals(moved.row().get("job_id"))) {
                seen.add(e);
            }
        });

        AttemptStarts.GatePass pass = startAsTheWorkerDoes(id, event);

        assertThat(pass).isInstanceOf(AttemptStarts.Submitting.class);
        AttemptStarts.Submitting started = (AttemptStarts.Submitting) pass;
        assertThat(seen).containsExactly(io.jobgate.job.JobTransitions.Event.START);
        assertThat(started.attempt()).isEqualTo(1);
        assertThat(started.lease().attempts()).as("the attempts made before this one").isZero();
        Map<String, Object> job = Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id);
        assertThat(job).containsEntry("status", "submitting").containsEntry("attempts", 1)
                .containsEntry("lease_token", started.lease().token());
        assertThat(Db.single("SELECT lease_token FROM attempts WHERE job_id = ? AND attempt = 1", id))
                .containsEntry("lease_token", started.lease().token());
        assertThat(Db.rows("SELECT lease_token FROM provider_slots WHERE job_id = '" + id + "'")).singleElement()
                .satisfies(slot -> assertThat(slot.get("lease_token")).isEqualTo(started.lease().token()));
io.jobgate.support.JobFactory.onTestDatabase().endedBehindTheGateway(id, "failed");
    }

    /**
     * The usual start claims a slot only for a job it applies to: when the job moved on since the worker read it
     * (here: a newer dispatch event), nothing is leased and no slot is taken.
     */
    @Test
    void aStartWhoseJobMovedOnSinceItWasReadLeasesNothingAndGivesTheSlotBack() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        Lease peeked = leases.peek(id, event).orElseThrow();
        Db.execute("INSERT INTO outbox (job_id, tenant_id, event_type, available_at) VALUES ('" + id
                + "', 'acme', 'dispatch', now() + interval '1 hour')");
        fakeimgSlotsMade();
        long freeBefore = Db.count("SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NULL");

        AttemptStarts.GatePass pass = starts.start(id, event, "test-worker", Duration.ofSeconds(30),
                providers.find("fakeimg").orElseThrow(), Duration.ofSeconds(1), null, Duration.ofSeconds(1), peeked);

        assertThat(pass).isInstanceOfSatisfying(AttemptStarts.NotLeased.class,
                lost -> assertThat(lost.reason()).startsWith("stale dispatch event " + event));
        assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
        assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE provider = 'fakeimg' AND lease_token IS NULL"))
                .isEqualTo(freeBefore);
        assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                .containsEntry("status", "queued").containsEntry("attempts", 0).containsEntry("lease_token", null);
io.jobgate.support.JobFactory.onTestDatabase().endedBehindTheGateway(id, "failed");
    }

    /**
     * A provider with every slot held: the usual start claims nothing and writes nothing of its own; the long way
     * puts the job back to wait (no attempt spent) until the full delay, its lease given back.
     */
    @Test
    void aUsualStartOnAFullProviderTakesNoSlotAndWaitsWithoutAnAttempt() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        fakeimgSlotsMade();
        UUID holder = UUID.randomUUID();
        Db.execute("UPDATE provider_slots SET lease_token = '" + holder + "', job_id = '" + holder + "', taken_at = now()"
                + " WHERE provider = 'fakeimg' AND lease_token IS NULL");
        try {
            AttemptStarts.GatePass pass = startAsTheWorkerDoes(id, event);

            assertThat(pass).isInstanceOfSatisfying(AttemptStarts.Snoozed.class,
                    snoozed -> assertThat(snoozed.reason()).contains("at its concurrency limit"));
            assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
            assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                    .containsEntry("status", "retry_wait").containsEntry("attempts", 0).containsEntry("lease_token", null);
            assertThat(Db.count("SELECT count(*) FROM attempts WHERE job_id = ?", id)).isZero();
        } finally {
            Db.execute("UPDATE provider_slots SET lease_token = NULL, job_id = NULL, taken_at = NULL WHERE job_id = '" + holder + "'; "
                    + "DELETE FROM outbox WHERE job_id = '" + id + "'"); // its new dispatch event: the relay would take it
            io.jobgate.support.JobFactory.onTestDatabase().endedBehindTheGateway(id, "failed");
        }
    }

    /** A provider's gate closed by a Retry-After: the usual start claims no slot and the job waits until the gate opens. */
    @Test
    void aUsualStartBehindAClosedGateTakesNoSlotAndWaitsForTheGate() {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        java.time.Instant until = java.time.Instant.now().plusSeconds(120).truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
        Db.execute("INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES ('fakeimg', '" + until
                + "', 'test', now()) ON CONFLICT (provider) DO UPDATE SET closed_until = EXCLUDED.closed_until, closed_reason = 'test'");
        try {
            AttemptStarts.GatePass pass = startAsTheWorkerDoes(id, event);

            assertThat(pass).isInstanceOfSatisfying(AttemptStarts.Snoozed.class, snoozed -> assertThat(snoozed.until()).isEqualTo(until));
            assertThat(Db.count("SELECT count(*) FROM provider_slots WHERE job_id = ?", id)).isZero();
            assertThat(Db.single("SELECT status, lease_token, attempts FROM jobs WHERE job_id = ?", id))
                    .containsEntry("status", "retry_wait").containsEntry("attempts", 0).containsEntry("lease_token", null);
        } finally {
            Db.execute("UPDATE provider_gates SET closed_until = '-infinity', closed_reason = NULL WHERE provider = 'fakeimg'; "
                    + "DELETE FROM outbox WHERE job_id = '" + id + "'");
            io.jobgate.support.JobFactory.onTestDatabase().endedBehindTheGateway(id, "failed");
        }
    }

    /**
     * A finalize (the sweeper expiring a job, a cancel) locks the job's unpublished dispatch events,
     * then its row; a worker starting the same job — here on its way to put it back to wait, which
     * drops those events — must take them in the same order, or the two deadlock.
     */
    @Test
    void aWorkerStartingAJobTakesItsEventsBeforeItsRowSoAConcurrentFinalizeCannotDeadlockWithIt() throws Exception {
        UUID id = UUID.randomUUID();
        long event = dispatchedJob(id, "fakeimg");
        try (java.sql.Connection finalize = java.sql.DriverManager.getConnection(io.jobgate.support.TestDatabase.url(),
                io.jobgate.support.TestDatabase.user(), io.jobgate.support.TestDatabase.password());
             java.sql.Statement st = finalize.createStatement()) {
            finalize.setAutoCommit(false);
            int finalizer;
            try (java.sql.ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                finalizer = rs.getInt(1);
            }
            st.execute("SET LOCAL lock_timeout = '500ms'"); // below deadlock_timeout: waiting at all fails
            st.execute("DELETE FROM outbox WHERE job_id = '" + id + "' AND event_type = 'dispatch' AND published_at IS NULL");
            var starting = java.util.concurrent.CompletableFuture.supplyAsync(() -> starts.start(id, event, "test-worker",
                    Duration.ofSeconds(30), providers.find("fakeimg").orElseThrow(), Duration.ofSeconds(1),
                    new AttemptStarts.Verdict(ErrorCategory.TRANSIENT, "source not readable yet", true), Duration.ofSeconds(1)));
            await().atMost(Duration.ofSeconds(10)).until(() -> Db.count(
                    "SELECT count(*) FROM pg_stat_activity WHERE pg_blocking_pids(pid) @> ARRAY[?::int]", finalizer) == 1);

            // Fails (lock timeout) if the worker took the row before the events.
            st.execute("UPDATE jobs SET status = 'failed', error_category = 'expired', finalized_at = now(), "
                    + "dispatched_at = NULL WHERE job_id = '" + id + "'");
            finalize.commit();

            assertThat(starting.get(10, java.util.concurrent.TimeUnit.SECONDS)).isInstanceOf(AttemptStarts.NotLeased.class);
        }
    }

    @Test
    void theProviderConcurrencyLimitHoldsAcrossJobsWithoutSpendingAttempts() {
        String tag = Jobs.tag();
        int delay = 500;
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(delay)));
        List<UUID> ids = java.util.stream.IntStream.range(0, 5).mapToObj(i -> submit(tag + "x" + i, "fakeimg")).toList();
        ids.forEach(id -> Jobs.awaitStatus(id, "succeeded"));

        List<Long> starts = requests(tag).stream().map(r -> r.getLoggedDate().getTime()).sorted().toList();
        assertThat(starts).hasSize(5);
        int most = 0;
        for (long start : starts) {
            int overlapping = (int) starts.stream().filter(s -> s <= start && start < s + delay).count();
            most = Math.max(most, overlapping);
        }
        assertThat(most).as("requests in flight at once (max-concurrency 2)").isLessThanOrEqualTo(2);
        assertThat(ids).allSatisfy(id -> assertThat(job(id).get("attempts")).isEqualTo(1));
    }

    @Test
    void aSourceUploadThatNoLongerMatchesItsDigestFailsTheJobBeforeAnyCall() {
        ApiClient.Response upload = api.upload(ACME, "audio/wav", Samples.wav(1500));
        assertThat(upload.status()).isEqualTo(201);
        String sha = upload.json().path("sha256").asText();
        // The stored object changes behind the gateway's back (bit rot, an operator's mistake).
        s3.putObject(b -> b.bucket("jobgate").key("sources/sha256/" + sha),
                software.amazon.awssdk.core.sync.RequestBody.fromBytes(Samples.wav(1200)));
        ApiClient.Response r = api.postJob(ACME, "k-" + UUID.randomUUID(), "{\"preset_id\": \"call-transcript\", "
                + "\"provider\": \"fakeimg\", \"upload_id\": \"" + upload.json().path("upload_id").asText() + "\"}");
        assertThat(r.status()).as(r.text()).isEqualTo(202);
        UUID id = UUID.fromString(r.json().path("job_id").asText());
        Jobs.awaitStatus(id, "failed");

        assertThat(job(id).get("error_category")).isEqualTo("invalid_request");
        assertThat((String) job(id).get("error_message")).contains("does not match its digest");
        assertThat(job(id).get("attempts")).isEqualTo(0);
        assertThat(fake.getAllServeEvents()).noneMatch(e -> id.toString().equals(e.getRequest().getHeader("Idempotency-Key")));
    }
}
