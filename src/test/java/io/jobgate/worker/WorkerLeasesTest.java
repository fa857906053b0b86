package io.jobgate.worker;

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
 * Leases nobody will finish and answers that come late: a worker killed mid-attempt, a stale lease token, a late
 * answer before and after a newer attempt, a stopping worker's hand-back, a dead instance's leases, half promotions
 * and relay claims taken over at the next sweep, an attempt still open when its job ends.
 */
class WorkerLeasesTest extends WorkerTestBase {


    @Test
    void aWorkerKilledMidAttemptLeavesALeaseThatExpiresIntoANewAttemptOfTheSameJob() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        AtomicBoolean crash = new AtomicBoolean(true);
        worker.injectFaults(step -> {
            if (step.equals("submitting") && crash.compareAndSet(true, false)) {
                throw new IllegalStateException("simulated worker death after the attempt started");
            }
        });
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");

        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("lease_expired", "succeeded");
        assertThat(job(id).get("attempts")).isEqualTo(2);
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(requests(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM jobs WHERE idempotency_key = (SELECT idempotency_key FROM jobs WHERE job_id = ?)",
                id)).isEqualTo(1);
    }

    @Test
    void aStaleLeaseTokenCannotFinalizeOrOverwrite() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1200)));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        UUID staleToken = (UUID) job(id).get("lease_token");

        // The first worker stalls; its lease runs out and the sweeper hands the job to a new attempt.
        clock.advance(Duration.ofSeconds(10));
        await().atMost(Duration.ofSeconds(5)).until(() -> !staleToken.equals(job(id).get("lease_token")));
        assertThat(finalizer.finalizeJob(id, staleToken, JobFinalizer.Outcome.failed("transient", "stale")))
                .as("a stale token finalizes nothing").isFalse();
        Jobs.awaitStatus(id, "succeeded");
        clock.reset(); // only now: the new attempt's due time and lease were taken on the moved clock

        await().atMost(Duration.ofSeconds(5)).until(() -> "lease_lost".equals(attempts(id).get(0).get("outcome")));
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("lease_lost", "succeeded");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(job(id).get("error_category")).isNull();
    }

    /**
     * Issue 35: a provider's answer that comes back after its lease ran out, while the job still waits on
     * that attempt (what the sweeper does with an expired lease of a provider that does not deduplicate:
     * submission_unknown), is the job's: it is promoted and finalized through the one finalize, billed
     * once, its attempt kept as {@code late_succeeded}, and counted.
     */
    @Test
    void aLateAnswerFinalizesTheJobWhileNoNewerAttemptStarted() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        double before = lateAnswers("fakeimg", "finalized");
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)) && requests(tag).size() == 1);
        UUID token = (UUID) job(id).get("lease_token");

        // The lease is released while the call is on the wire, its first reconcile check far away.
        assertThat(leases.parkUnknown(id, token, null, Instant.now().plus(Duration.ofHours(1)))).isTrue();
        assertThat(Jobs.status(id)).isEqualTo("submission_unknown");

        Jobs.awaitStatus(id, "succeeded");
        assertThat(job(id).get("attempts")).isEqualTo(1);
        assertThat((String) job(id).get("result")).contains("\"attempt\": 1");
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("late_succeeded");
        assertThat(attempts(id).get(0).get("http_status")).isEqualTo(200);
        assertThat(requests(tag)).hasSize(1);
        assertThat(Db.count("SELECT count(*) FROM ledger WHERE job_id = ? AND entry_type = 'refund'", id)).isZero();
        assertThat(api.getBytes(ACME, "/v1/jobs/" + id + "/output")).startsWith(new byte[] {(byte) 0x89, 'P', 'N', 'G'});
        await().atMost(Duration.ofSeconds(5)).until(() -> lateAnswers("fakeimg", "finalized") == before + 1);
    }

    /** A late answer for a job that moved on to a newer attempt changes nothing but its own attempt, and is counted. */
    @Test
    void aLateAnswerAfterANewerAttemptIsRecordedOnItsAttemptOnly() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(500)));
        double before = lateAnswers("fakeimg", "recorded");
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)) && requests(tag).size() == 1);
        UUID token = (UUID) job(id).get("lease_token");

        // The lease goes back and a newer attempt starts (and fails retryably) before the first answers.
        assertThat(leases.requeue(id, token, Instant.now(), 0, "ambiguous")).isTrue();
        await().atMost(Duration.ofSeconds(10)).until(() -> ((Number) job(id).get("attempts")).intValue() >= 2);
        await().atMost(Duration.ofSeconds(10)).until(() -> lateAnswers("fakeimg", "recorded") == before + 1);

        assertThat(attempts(id).get(0)).containsEntry("outcome", "lease_lost").containsEntry("http_status", 200);
        assertThat(Jobs.status(id)).isNotEqualTo("succeeded");
        assertThat((Object) job(id).get("result")).isNull();
    }

    /** A clean stop hands the leases of its worker back: another attempt starts at once, not after the lease runs out. */
    @Test
    void aStoppingWorkerHandsItsLeasesBackForANewAttemptAtOnce() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));

        assertThat(sweeper.handBack(worker.name())).isEqualTo(1); // what the stop of this worker does
        Jobs.awaitStatus(id, "succeeded");

        await().atMost(Duration.ofSeconds(5)).until(() -> attempts(id).size() == 2 && attempts(id).get(1).get("outcome") != null);
        assertThat(attempts(id)).extracting(a -> a.get("outcome")).containsExactly("handed_back", "succeeded");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
    }

    /**
     * The lease of a worker whose process died is taken over at the next sweep, not when it runs out:
     * the dead instance's liveness lock (a session advisory lock) went with its connection.
     */
    @Test
    void aLeaseOfAnInstanceWhoseProcessDiedIsTakenOverAtTheNextSweep() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        String dead = "dead-host/" + tag;

        // Another instance's session: its liveness lock and its owner listed, then the job's lease made
        // its own, lasting an hour.
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4242)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4242)");
            io.jobgate.support.JobFactory.onTestDatabase().leaseOwnedBy(id, dead);
            assertThat(Db.count("SELECT count(*) FROM gateway_instances_gone WHERE owner = ?", dead)).isZero();
            assertThat(sweeper.reclaimLeasesOfGoneInstances()).as("alive: its leases are its own").isZero();
            assertThat(Db.single("SELECT lease_owner FROM jobs WHERE job_id = ?", id).get("lease_owner")).isEqualTo(dead);
        } // ... and the process dies: its session ends, PostgreSQL drops the lock

        Jobs.awaitStatus(id, "succeeded"); // long before the hour: the sweeper took the lease over
        await().atMost(Duration.ofSeconds(20)).until(() -> attempts(id).size() == 2 && attempts(id).get(0).get("outcome") != null);
        assertThat((String) attempts(id).get(0).get("outcome")).isIn("owner_gone", "lease_lost");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", dead)).as("forgotten once it holds nothing").isZero();
        // This gateway is alive and listed under its worker's name.
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", worker.name())).isEqualTo(1);
        assertThat(Db.count("SELECT count(*) FROM gateway_instances_gone WHERE owner = ?", worker.name())).isZero();
    }

    /**
     * A worker killed between writing an output to the job's readable key and writing its manifest left part of
     * a promotion nobody recorded: when the sweeper takes over that dead process's lease, it withdraws it, so a
     * job that then fails keeps no readable output (the chaos soak met one), and one that succeeds promotes anew.
     */
    @Test
    void aHalfPromotionOfADeadWorkerIsWithdrawnWhenItsLeaseIsTakenOver() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs(Scenario.STARTED)
                .willSetStateTo("second").willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).inScenario(tag).whenScenarioStateIs("second")
                .willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        String dead = "dead-host/" + tag;
        String stray = "outputs/acme/" + id + "/output.part";
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4343)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4343)");
            io.jobgate.support.JobFactory.onTestDatabase().leaseOwnedBy(id, dead);
            // What the dead worker wrote of its promotion: an object under the job's readable key, no manifest.
            s3.putObject(b -> b.bucket("jobgate").key(stray), software.amazon.awssdk.core.sync.RequestBody.fromString("half"));
        } // the process dies

        Jobs.awaitStatus(id, "succeeded");
        await().atMost(Duration.ofSeconds(5)).until(() -> attempts(id).size() == 2 && attempts(id).get(0).get("outcome") != null);
        List<String> keys = s3.listObjectsV2(b -> b.bucket("jobgate").prefix("outputs/acme/" + id + "/")).contents().stream()
                .map(software.amazon.awssdk.services.s3.model.S3Object::key).toList();
        assertThat(keys).as("the half promotion withdrawn, the second attempt's output and manifest promoted")
                .doesNotContain(stray).contains("outputs/acme/" + id + "/manifest.json");
        assertThat((String) job(id).get("result")).contains("\"attempt\": 2");
    }

    /** A relay's claims are released at the next sweep when its process died, not when they run out. */
    @Test
    void theClaimsOfARelayWhoseProcessDiedAreReleasedAtTheNextSweep() throws Exception {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag)).willReturn(aResponse().withStatus(200).withBody(pngReply())));
        UUID id = submit(tag, "fakeimg");
        Jobs.awaitStatus(id, "succeeded");
        String dead = "dead-host/relay-" + tag;
        long event;
        try (java.sql.Connection process = io.jobgate.support.TestDatabase.connect();
             java.sql.Statement s = process.createStatement()) {
            s.execute("SELECT pg_advisory_lock(27239, 4343)");
            s.execute("INSERT INTO gateway_instances (owner, lock_key) VALUES ('" + dead + "', 4343)");
            // A status event the dead relay had claimed for an hour, in the middle of its round.
            try (var rs = s.executeQuery("""
                    INSERT INTO outbox (job_id, tenant_id, event_type, payload, available_at, claimed_until, claim_token, claimed_by)
                    VALUES ('%s', 'acme', 'status', '{"status": "succeeded"}', now(), now() + interval '1 hour', gen_random_uuid(), '%s')
                    RETURNING event_id""".formatted(id, dead))) {
                rs.next();
                event = rs.getLong(1);
            }
            assertThat(sweeper.reclaimLeasesOfGoneInstances()).isZero();
            assertThat(Db.count("SELECT count(*) FROM outbox WHERE event_id = ? AND published_at IS NULL", event)).isEqualTo(1);
        } // the relay's process dies
        await().atMost(Duration.ofSeconds(10)).until(() ->
                Db.count("SELECT count(*) FROM outbox WHERE event_id = ? AND published_at IS NOT NULL", event) == 1);
        assertThat(Db.count("SELECT count(*) FROM gateway_instances WHERE owner = ?", dead)).isZero();
    }

    /** A job that ends while its attempt is open (here: cancelled mid-call) closes the attempt with it. */
    @Test
    void anAttemptStillOpenWhenItsJobEndsIsClosedWithTheJob() {
        String tag = Jobs.tag();
        fake.stubFor(post(PATH).withRequestBody(containing(tag))
                .willReturn(aResponse().withStatus(200).withBody(pngReply()).withFixedDelay(1500)));
        UUID id = submit(tag, "fakeimg");
        await().atMost(Duration.ofSeconds(10)).until(() -> "submitting".equals(Jobs.status(id)));
        assertThat(api.post(ACME, "/v1/jobs/" + id + "/cancel").status()).isEqualTo(200);

        Map<String, Object> attempt = Db.single("SELECT ended_at, outcome FROM attempts WHERE job_id = ? AND attempt = 1", id);
        assertThat(attempt.get("ended_at")).as("closed with the job, before the worker's call returns").isNotNull();
        assertThat((String) attempt.get("outcome")).isIn("ended_with_job", "lease_lost");
    }
}
