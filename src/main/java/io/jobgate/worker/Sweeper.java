package io.jobgate.worker;

import io.jobgate.job.JobLeases;

import io.jobgate.job.ErrorCategory;
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.RevisionRole;
import java.time.Clock;
import java.util.List;
import java.util.UUID;

import io.jobgate.job.JobConditions;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobRows;
import io.jobgate.job.JobSchedules;
import io.jobgate.job.JobStatus;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.apache.camel.Exchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Rules of the sweeper route (routes/sweeper.camel.yaml). Expired leases: the worker is gone, so
 * the job gets a new attempt under the same id, unless its request may have reached a provider
 * that does not deduplicate resubmissions, which makes it {@code submission_unknown}. Jobs past
 * their lifetime that nobody works on fail as {@code expired}. Safe on several instances at once:
 * every change is conditional on the lease token or on the job not being final.
 */
public final class Sweeper {

    private static final Logger LOG = LoggerFactory.getLogger(Sweeper.class);

    private final JdbcTemplate jdbc;
    /** The jobs table's queries this uses (built on {@code jdbc}). */
    private final JobRows rows;
    private final JobSchedules schedules;
    private final JobConditions conditions;
    private final JobLeases leases;
    private final JobFinalizer finalizer;
    private final ProviderCatalog providers;
    private final Clock clock;
    private final int batch;

    private final software.amazon.awssdk.services.s3.S3Client s3;
    private final String bucket;
    private final java.time.Duration quarantineMaxAge;
    private final java.time.Duration horizon;

    public Sweeper(JdbcTemplate jdbc, JobLeases leases, JobFinalizer finalizer, ProviderCatalog providers, Clock clock,
                   SweeperSettings settings, software.amazon.awssdk.services.s3.S3Client s3, String bucket) {
        this.s3 = s3;
        this.bucket = bucket;
        this.quarantineMaxAge = settings.quarantineMaxAge();
        this.horizon = settings.horizon();
        this.jdbc = jdbc;
        this.rows = new JobRows(jdbc);
        this.schedules = new JobSchedules(jdbc);
        this.conditions = new JobConditions(jdbc);
        this.leases = leases;
        this.finalizer = finalizer;
        this.providers = providers;
        this.clock = clock;
        this.batch = settings.batch();
    }


    public void sweep(Exchange exchange) {
        int reclaimed = reclaimLeasesOfGoneInstances() + reclaimExpiredLeases();
        int expired = expireOverdue();
        exchange.getMessage().setHeader("reclaimed", reclaimed);
        exchange.getMessage().setHeader("expired", expired);
    }

    /**
     * The leases, poller claims and relay claims of instances that died (listed, their liveness lock gone: see
     * infra/InstanceLiveness) are taken over now rather than when they run out; an owner that holds
     * nothing any more is forgotten.
     */
    public int reclaimLeasesOfGoneInstances() {
        List<String> gone = jdbc.queryForList("SELECT owner FROM gateway_instances_gone", String.class).stream()
                .filter(owner -> !ownOwners.contains(owner)).toList();
        if (gone.isEmpty()) {
            return 0;
        }
        java.time.Instant now = clock.instant();
        String[] owners = gone.toArray(String[]::new);
        int released = release(rows.leasedByAny(gone, batch), "owner_gone", "ended with its process");
        int claims = schedules.releaseCheckClaims(gone, now);
        if (claims > 0) {
            LOG.warn("{} provider checks claimed by instances that ended ({}) are due now", claims, gone);
        }
        int relayed = jdbc.update("""
                UPDATE outbox SET claimed_until = NULL, claim_token = NULL, claimed_by = NULL
                 WHERE claimed_by = ANY (?) AND published_at IS NULL""", (Object) owners);
        if (relayed > 0) {
            LOG.warn("{} outbox events claimed by relays that ended ({}) are released to the next round", relayed, gone);
        }
        jdbc.update("""
                DELETE FROM gateway_instances g
                 WHERE g.owner = ANY (?)
                   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.lease_owner = g.owner AND j.lease_token IS NOT NULL)
                   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.check_claimed_by = g.owner AND j.finalized_at IS NULL)
                   AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.claimed_by = g.owner AND o.published_at IS NULL)""",
                (Object) owners);
        return released;
    }

    /**
     * This process's own lease and claim owners: never gone while it runs, whatever the database lists. After a
     * failover of the database the instance's liveness lock is on the dead server, and until its next check
     * takes it again on the promoted one (up to 5 s) the promoted server lists the instance gone; this sweeper
     * once took over its own instance's leases then, and withdrew the output of a job its webhook was that
     * moment promoting, which then succeeded without it (FailoverIT).
     */
    public void runsHere(String owner) {
        ownOwners.add(owner);
    }

    private final java.util.Set<String> ownOwners = java.util.concurrent.ConcurrentHashMap.newKeySet();

    public int reclaimExpiredLeases() {
        return release(rows.leasesExpiredBefore(clock.instant(), batch), "lease_expired", "expired during the call");
    }

    /**
     * A clean stop: the leases {@code owner} still holds (its routes have stopped, their in-flight
     * exchanges finished or were cut off by the shutdown timeout) are handed back now, by the rule of
     * an expired lease, so another instance takes the jobs at once instead of after the lease runs out.
     */
    public int handBack(String owner) {
        int done = release(rows.leasedBy(owner), "handed_back", "handed back when its worker stopped");
        if (done > 0) {
            LOG.info("handed back {} leases of {} on stop", done, owner);
        }
        return done;
    }

    /**
     * Ends leases nobody will finish. An attempt whose output its worker had already promoted (its
     * manifest, or the output's own record, names this attempt) before it died succeeds with that output: the provider's answer is
     * there, and asking again would pay for it twice, or, where nothing can be asked, lose it. Otherwise a
     * new attempt, unless the request may have reached a provider that does not deduplicate resubmissions
     * ({@code submission_unknown}); the open attempt row says why.
     */
    private int release(List<JobRows.LeasedJob> leased, String outcome, String why) {
        int done = 0;
        for (JobRows.LeasedJob row : leased) {
            UUID jobId = row.jobId();
            UUID token = row.leaseToken();
            JobStatus status = row.status();
            boolean sent = status == JobStatus.SUBMITTING;
            PromotedEvidence promoted = sent ? promotedEvidence(row) : null;
            if (promoted != null) {
                if (succeededWithPromotedOutput(row, promoted, why)) {
                    done++;
                }
                continue; // else the lease moved on, or the manifest could not be written: the next sweep looks again
            }
            if (sent && outcome.equals("owner_gone")) {
                withdrawHalfPromotion(row.tenantId(), jobId);
            }
            // A canary candidate's call is not looked up either: its task could only ever give a held output,
            // never the job's, so its job goes on to the stable revision (docs/canary.md).
            boolean resubmitSafe = providers.find(row.provider()).map(Provider::idempotentSubmit).orElse(false)
                    || row.role() == RevisionRole.CANDIDATE;
            rows.closeEndedLease(jobId, token, clock.instant(), outcome, "lease of " + row.leaseOwner() + " " + why);
            Fate fate = Outcomes.decide(new Evidence.LeaseEnded(sent, resubmitSafe, why), RevisionRole.STABLE,
                    new Standing(row.attempts(), row.maxAttempts(), row.expiresAt(), row.unparseableStreak()),
                    Waits.NONE, clock.instant());
            boolean changed;
            String next;
            if (fate instanceof Fate.Retry retry) {
                changed = leases.requeue(jobId, token, retry.at(), retry.unparseableStreak(),
                        retry.last() == null ? null : retry.last().wire());
                next = "new attempt queued";
            } else if (fate instanceof Fate.Fail fail) {
                changed = finalizer.finalizeJob(jobId, token, JobFinalizer.Outcome.failed(fail.category().wire(), fail.message()));
                next = "failed: " + fail.message();
            } else {
                changed = leases.parkUnknown(jobId, token, null, clock.instant());
                next = "submission_unknown (request may have reached the provider)";
            }
            if (changed) {
                done++;
                LOG.warn("lease of {} on job {} {} in {}: {}", row.leaseOwner(), jobId, why, status.wire(), next);
            }
        }
        return done;
    }

    /**
     * The attempt's output was promoted (its worker died between the promotion and the record, or between the
     * output and its manifest): the job succeeds with it through the one finalize, under the lease being ended,
     * and its attempt is closed as succeeded. The record is the worker's, read back from the manifest beside the
     * output, or from the output's own record when the manifest was never written; that manifest is written
     * once the finalize has won (the job's row locked), and a write that fails takes the success back with it.
     */
    private boolean succeededWithPromotedOutput(JobRows.LeasedJob row, PromotedEvidence found, String why) {
        UUID jobId = row.jobId();
        UUID token = row.leaseToken();
        int attempt = row.attempts();
        boolean won;
        try {
            won = leases.inOneTransaction(() -> {
                // The attempt first: the finalize closes any attempt still open as ended with its job.
                rows.closeSucceededLease(jobId, token, clock.instant(), "its output was promoted; the lease " + why + " before the record");
                if (!finalizer.finalizeJob(jobId, token, JobFinalizer.Outcome.succeeded(found.result()))) {
                    throw new LeaseMovedOn(); // rolls the attempt's close back with it
                }
                if (found.manifestToWrite() != null) {
                    s3.putObject(b -> b.bucket(bucket).key(found.manifestKey()).contentType("application/json"),
                            software.amazon.awssdk.core.sync.RequestBody.fromBytes(found.manifestToWrite()));
                }
                return true;
            });
        } catch (LeaseMovedOn e) {
            won = false;
        } catch (software.amazon.awssdk.core.exception.SdkException e) {
            LOG.warn("job {}: object storage unavailable to write the manifest of attempt {}'s output ({}); its lease is looked "
                    + "at again at the next sweep", jobId, attempt, e.getClass().getSimpleName());
            won = false;
        }
        if (won) {
            LOG.warn("job {} succeeded with the output attempt {} had promoted before its lease {}{}", jobId, attempt, why,
                    found.manifestToWrite() == null ? "" : " (its manifest written from the output's own record)");
        }
        return won;
    }

    /**
     * A worker killed in the middle of a promotion (between the output's write and its manifest's) left the
     * job's readable key with an output nobody recorded, and neither a manifest nor an output's own record that
     * names its attempt (an object an older release half wrote): no evidence the job may succeed with. Were it
     * left there, a job that then fails (a provider without a lookup, at the reconciliation horizon) would keep
     * a readable output beside its refund. Only for a dead
     * process: a lease that merely ran out may belong to a worker still promoting, whose answer is a late
     * answer. A job that succeeds later promotes its output again.
     */
    private void withdrawHalfPromotion(String tenant, UUID jobId) {
        String prefix = "outputs/" + tenant + "/" + jobId + "/";
        try {
            List<String> keys = s3.listObjectsV2(b -> b.bucket(bucket).prefix(prefix)).contents().stream()
                    .map(software.amazon.awssdk.services.s3.model.S3Object::key).toList();
            for (String key : keys) {
                s3.deleteObject(b -> b.bucket(bucket).key(key));
            }
            if (!keys.isEmpty()) {
                LOG.warn("job {}: its worker died in the middle of promoting an output; {} withdrawn from its readable key", jobId, keys);
            }
        } catch (software.amazon.awssdk.core.exception.SdkException e) {
            LOG.warn("job {}: object storage unavailable to withdraw a half-promoted output ({})", jobId, e.getClass().getSimpleName());
        }
    }

    /**
     * What the sweeper found of an attempt's promoted output: the job's result, and the manifest still to be
     * written beside it ({@code manifestToWrite}; null when the worker wrote it).
     */
    private record PromotedEvidence(String result, String manifestKey, byte[] manifestToWrite) {
    }

    /** The lease was no longer the one being ended: nothing of the promoted output's success is written. */
    private static final class LeaseMovedOn extends RuntimeException {
        LeaseMovedOn() {
            super(null, null, false, false);
        }
    }

    /**
     * The evidence of the leased attempt's promoted output: its manifest when that names the attempt; else,
     * when there is no manifest or only an earlier attempt's, the output's own record
     * ({@link io.jobgate.output.PromotedOutput}, in its metadata) when that names the attempt. Null when
     * there is none, when a later attempt's manifest is there, or when storage cannot be read (never a guess).
     */
    private PromotedEvidence promotedEvidence(JobRows.LeasedJob row) {
        UUID jobId = row.jobId();
        int attempt = row.attempts();
        String prefix = "outputs/" + row.tenantId() + "/" + jobId + "/";
        String manifestKey = prefix + "manifest.json";
        try {
            com.fasterxml.jackson.databind.JsonNode manifest;
            try {
                manifest = io.jobgate.common.Json.parseObject(s3.getObjectAsBytes(b -> b.bucket(bucket).key(manifestKey)).asByteArray());
            } catch (software.amazon.awssdk.services.s3.model.NoSuchKeyException e) {
                manifest = null;
            }
            if (manifest != null && manifest.path("attempt").asInt() == attempt) {
                com.fasterxml.jackson.databind.JsonNode output = manifest.path("output");
                long bytes = s3.headObject(b -> b.bucket(bucket).key(output.path("key").asText())).contentLength();
                io.jobgate.output.OutputCheck.Checked checked = new io.jobgate.output.OutputCheck.Checked(
                        output.path("media_type").asText(),
                        output.path("width").isNumber() ? output.path("width").intValue() : null, // none for JSON or text
                        output.path("height").isNumber() ? output.path("height").intValue() : null,
                        output.hasNonNull("duration_ms") ? output.path("duration_ms").asLong() : null);
                return new PromotedEvidence(new io.jobgate.output.PromotedOutput(output.path("key").asText(), manifestKey, checked,
                        bytes, output.path("sha256").asText(), manifest.path("adapter").path("name").asText(),
                        manifest.path("adapter").path("revision").asText(), attempt).resultJson(), manifestKey, null);
            }
            if (manifest != null && manifest.path("attempt").asInt() > attempt) {
                return null; // a later attempt's output: this one's answer is not the job's
            }
            return outputWithoutManifest(row, prefix, manifestKey);
        } catch (software.amazon.awssdk.services.s3.model.NoSuchKeyException e) {
            return null; // the manifest names an output that is not there
        } catch (software.amazon.awssdk.core.exception.SdkException e) {
            LOG.warn("job {}: object storage unavailable to look for a promoted output ({}); its lease ends as if none", jobId,
                    e.getClass().getSimpleName());
            return null;
        } catch (RuntimeException e) {
            // Evidence that cannot be read is no evidence, and must not stop the sweep of every other lease.
            LOG.warn("job {}: the record of its promoted output cannot be read ({}); its lease ends as if none", jobId, e.toString());
            return null;
        }
    }

    /**
     * The evidence of an output whose worker died after it became readable and before its manifest was written:
     * the object's own record names the attempt. The manifest to write is the worker's (the job's request and the
     * record; the adapter and revision from the job's row, which the attempt set). Null when there is none.
     */
    private PromotedEvidence outputWithoutManifest(JobRows.LeasedJob row, String prefix, String manifestKey) {
        for (var object : s3.listObjectsV2(b -> b.bucket(bucket).prefix(prefix + "output")).contents()) {
            var head = s3.headObject(b -> b.bucket(bucket).key(object.key()));
            var found = io.jobgate.output.PromotedOutput.fromMetadata(object.key(), manifestKey, head.contentLength(), head.metadata(),
                    row.provider(), row.adapterRevision()).filter(o -> o.attempt() == row.attempts());
            if (found.isEmpty()) {
                continue; // another attempt's, or no record (a half-written object of an older release)
            }
            io.jobgate.output.PromotedOutput o = found.get();
            JobRows.StoredRequest job = rows.storedRequest(row.jobId());
            io.jobgate.output.OutputSubject subject = new io.jobgate.output.OutputSubject(row.jobId(), row.tenantId(), o.attempt(),
                    job.presetId(), job.presetVersion(), job.aspectClass(), job.inputsJson(), job.sourceSha256(), o.adapter(),
                    o.revision(), null, null);
            byte[] manifest = io.jobgate.common.Json.write(io.jobgate.output.Manifest.of(subject, o.checked(), o.sha256(),
                    o.outputKey())).getBytes(java.nio.charset.StandardCharsets.UTF_8);
            return new PromotedEvidence(o.resultJson(), manifestKey, manifest);
        }
        return null;
    }

    /**
     * Quarantine objects older than {@code jobgate.sweeper.quarantine-max-age-seconds} whose job is
     * final (an attempt that crashed before promoting, or an output refused by the checks, kept for
     * an operator meanwhile) are deleted. A job still running keeps its objects.
     */
    public void sweepQuarantine(Exchange exchange) {
        java.time.Instant cutoff = clock.instant().minus(quarantineMaxAge);
        int removed = 0;
        for (var object : s3.listObjectsV2Paginator(b -> b.bucket(bucket).prefix("quarantine/").maxKeys(500)).contents()) {
            if (object.lastModified().isAfter(cutoff)) {
                continue;
            }
            String[] parts = object.key().split("/");
            UUID jobId;
            try {
                jobId = UUID.fromString(parts[1]);
            } catch (RuntimeException e) {
                continue; // not ours
            }
            if (!conditions.open(jobId)) {
                s3.deleteObject(b -> b.bucket(bucket).key(object.key()));
                removed++;
            }
        }
        exchange.getMessage().setHeader("removed", removed);
        if (removed > 0) {
            LOG.info("removed {} quarantine objects of final jobs", removed);
        }
    }

    /**
     * The lifetime cap stops new attempts, never evidence. A job not at a provider (queued, waiting
     * for a retry) fails as {@code expired} once its lifetime ends. A job at the provider
     * ({@code provider_pending}, {@code submission_unknown}) may still be finished and billed by the
     * provider: it keeps waiting for the answer (a late success succeeds and is paid, a late failure
     * fails with its refund) until the reconciliation horizon after its lifetime; only then, with
     * no answer, it fails as {@code expired}, refunded, its unreconciled attempt kept for billing review.
     */
    public int expireOverdue() {
        java.time.Instant now = clock.instant();
        int done = 0;
        for (JobRows.OverdueJob row : rows.overdue(now, now.minus(horizon), batch)) {
            UUID jobId = row.jobId();
            boolean atProvider = JobStatus.AT_PROVIDER.contains(row.status());
            String message = atProvider
                    ? "no answer from the provider by the reconciliation horizon (" + horizon.toHours() + " h after the lifetime); "
                            + "attempt " + row.attempts() + " kept unreconciled for billing review"
                    : "lifetime ended before the job could finish";
            // Only from the kind of state it was found in: a job that moved on meanwhile is judged next sweep.
            java.util.Set<JobStatus> from = atProvider ? JobStatus.AT_PROVIDER
                    : java.util.EnumSet.complementOf(java.util.EnumSet.copyOf(JobStatus.AT_PROVIDER));
            if (finalizer.finalizeJob(jobId, null, from, JobFinalizer.Outcome.failed(ErrorCategory.EXPIRED.wire(), message))) {
                done++;
                if (atProvider) {
                    LOG.warn("job {} failed as expired at the reconciliation horizon: attempt {} unreconciled, review its billing",
                            jobId, row.attempts());
                }
            }
        }
        return done;
    }
}
