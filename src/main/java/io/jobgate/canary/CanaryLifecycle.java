package io.jobgate.canary;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

import io.jobgate.common.ApiProblem;
import io.jobgate.fate.Evidence;
import io.jobgate.fate.Fate;
import io.jobgate.fate.Outcomes;
import io.jobgate.fate.Standing;
import io.jobgate.fate.Waits;
import io.jobgate.job.JobFinalizer;
import io.jobgate.job.JobRows;
import io.jobgate.job.JobSchedules;
import io.jobgate.job.JobStatus;
import io.jobgate.job.JobTransitions;
import io.jobgate.job.RevisionRole;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A canary's life (docs/canary.md): a loaded candidate gets its row, its gates ({@link CanaryGates}) judge it every
 * period and stop it when it crosses one, an operator stops, promotes or restarts it; a stop rolls its open jobs back
 * onto the stable revision under their ids, and every change rewrites the role of its open jobs' attempts. Each
 * action is recorded and published to the status topic.
 */
public final class CanaryLifecycle {

    private static final Logger LOG = LoggerFactory.getLogger(CanaryLifecycle.class);

    /** Who the automatic stop names. */
    public static final String GATES = "canary-gates";

    /** Told of every stop (metrics and alerts). */
    @FunctionalInterface
    public interface StopListener {
        void stopped(String provider, String revision, String gate, String reason, int requeued);
    }

    /** Publishes one canary action to the status topic (the gateway's JMS topic; tests: a list). */
    @FunctionalInterface
    public interface Publisher {
        void publish(Map<String, Object> event) throws Exception;
    }

    private final JdbcTemplate jdbc;
    private final CanaryStore store;
    private final JobRows jobRows;
    private final JobSchedules schedules;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;
    private final JobFinalizer finalizer;
    private final ProviderCatalog providers;
    private final Canaries canaries;
    private final CanaryGates gates;
    private final Clock clock;
    private volatile StopListener stopListener = (p, r, g, why, n) -> { };
    private volatile Publisher publisher = event -> { };

    public CanaryLifecycle(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions, JobFinalizer finalizer,
                           ProviderCatalog providers, Canaries canaries) {
        this.finalizer = finalizer;
        this.jdbc = jdbc;
        this.store = new CanaryStore(jdbc);
        this.jobRows = new JobRows(jdbc);
        this.schedules = new JobSchedules(jdbc);
        this.transactions = transactions;
        this.transitions = transitions;
        this.providers = providers;
        this.canaries = canaries;
        this.clock = transitions.clock();
        this.gates = new CanaryGates(jdbc, clock);
    }

    public void onStop(StopListener listener) {
        this.stopListener = listener;
    }

    public void publishWith(Publisher publisher) {
        this.publisher = publisher;
    }

    /**
     * Route step: every loaded candidate gets its row (a new one runs), every running canary is judged,
     * one that crossed a gate is stopped and rolled back; then unpublished actions go to the status topic.
     */
    public void judge() {
        for (Provider provider : providers.all()) {
            canaries.candidate(provider).ifPresent(c -> discover(provider, c));
        }
        for (CanaryStore.Canary canary : store.running()) {
            Provider provider = providers.find(canary.provider()).orElse(null);
            if (provider == null) {
                continue;
            }
            CanaryGates.Verdict verdict = gates.judge(provider, canary.revision(), canary.revisions(), GateThresholds.of(provider),
                    canary.judgedFrom());
            if (verdict.tripped() != null) {
                stop(canary.revision(), verdict.tripped().split(" ")[0], verdict.tripped(), GATES);
            } else if (verdict.judged() && canary.sampledAt() == null) {
                // A full sample passed: from now on the share alone decides (no count at each start).
                store.markSampled(canary.revision(), clock.instant());
            }
        }
        publish();
    }

    private void discover(Provider provider, Canaries.Candidate candidate) {
        if (store.addRunning(candidate.id(), provider.name(), candidate.revisions(provider), clock.instant())) {
            action(candidate.id(), provider.name(), "started", null, "candidate route loaded; share " + CanaryShare.share(provider) + " %",
                    "drop-in", 0);
            LOG.info("canary started provider={} revision={} share={} %", provider.name(), candidate.id(), CanaryShare.share(provider));
        }
    }

    /**
     * Stops a running (or promoted) canary: no new attempt goes to it, and its jobs that are not final
     * and whose last attempt ran on it are re-queued under the stable revision (same id, a new attempt,
     * through the outbox): a job waiting on the provider takes {@code resubmit}, a job waiting for its
     * retry is due now. Failed attempts stay; the ledger is not touched.
     *
     * @return the rows re-queued, or empty when the canary was not running (nothing changed)
     */
    public Optional<Integer> stop(String revision, String gate, String reason, String operator) {
        // The status and the role of its open jobs in one transaction: a stopped canary's outputs stay held.
        Optional<CanaryStore.Canary> stopped = transactions.execute(tx -> {
            Optional<CanaryStore.Canary> row = store.stop(revision, gate, reason, operator, clock.instant());
            row.ifPresent(c -> jobRows.assignRole(c.revisions(), RevisionRole.CANDIDATE));
            return row;
        });
        if (stopped.isEmpty()) {
            return Optional.empty();
        }
        String provider = stopped.get().provider();
        int requeued = rollBack(stopped.get().revisions());
        action(revision, provider, "stopped", gate, reason, operator, requeued);
        LOG.warn("canary stopped provider={} revision={} gate={} by={} requeued={} reason={}", provider, revision, gate, operator,
                requeued, reason);
        stopListener.stopped(provider, revision, gate, reason, requeued);
        return Optional.of(requeued);
    }

    private int rollBack(List<String> revisions) {
        Instant now = clock.instant();
        int requeued = 0;
        for (JobRows.OpenJob job : jobRows.openOnRevisions(revisions)) {
            UUID jobId = job.jobId();
            JobStatus status = job.status();
            if (status == JobStatus.PROVIDER_PENDING || status == JobStatus.SUBMISSION_UNKNOWN) {
                // Resubmitted now on the stable revision, within the job's caps (the rulebook's decision).
                Fate fate = Outcomes.decide(new Evidence.RolledBack(String.join(" ", revisions)), RevisionRole.CANDIDATE,
                        new Standing(job.attempts(), job.maxAttempts(), job.expiresAt(), job.unparseableStreak()),
                        Waits.NONE, now);
                JobTransitions.Guard guard = JobTransitions.Guard.from(Set.of(status));
                boolean moved = fate instanceof Fate.Retry retry
                        ? transitions.apply(jobId, JobTransitions.Event.RESUBMIT, guard,
                                JobTransitions.Change.retryAt(retry.at(), retry.unparseableStreak(), null)).isPresent()
                        : finalizer.finalizeJobIf(jobId, guard, JobFinalizer.Outcome.failed(((Fate.Fail) fate).category().wire(),
                                ((Fate.Fail) fate).message()));
                if (moved) {
                    requeued++;
                }
            } else if (status == JobStatus.RETRY_WAIT) {
                // Its next attempt (on the stable revision: its last ran on the candidate) is due now.
                requeued += transactions.execute(tx -> {
                    int moved = jdbc.update("""
                            UPDATE outbox SET available_at = ? WHERE job_id = ? AND event_type = 'dispatch' AND published_at IS NULL
                               AND available_at > ?""", Timestamp.from(now), jobId, Timestamp.from(now));
                    schedules.retryShownDue(jobId, now);
                    return moved > 0 ? 1 : 0;
                });
            }
            // running, submitting: the call in flight ends as any attempt does; its retry goes to the stable revision.
        }
        return requeued;
    }

    /** The provider's newest canary (the one the admin calls act on). */
    private CanaryStore.Canary newest(String provider) {
        return store.newest(provider).orElseThrow(() -> ApiProblem.of(404, "canary_not_found",
                        "Provider '" + provider + "' has no canary: drop a candidate route (direct:provider-" + provider
                                + Canaries.CANDIDATE_SUFFIX + ") in first."));
    }

    /** Operator: stops the provider's canary (as the gates would). @return its revision */
    public String stopByOperator(String provider, String operator, String reason) {
        CanaryStore.Canary canary = newest(provider);
        if (stop(canary.revision(), "operator", reason == null ? "stopped by " + operator : reason, operator).isEmpty()) {
            throw conflict(canary, "stop");
        }
        return canary.revision();
    }

    /**
     * Operator: the candidate becomes the approved revision: every new attempt of the provider runs on it and
     * its outputs are promoted (the operator then copies the candidate file over the stable one).
     */
    public String promote(String provider, String operator, String reason) {
        CanaryStore.Canary canary = newest(provider);
        // The status and what its open jobs' evidence means from now on, in one transaction: a promoted revision's
        // outputs are the job's.
        Optional<CanaryStore.Canary> promoted = transactions.execute(tx -> {
            Optional<CanaryStore.Canary> row = store.promote(canary.revision(), reason, operator, clock.instant());
            row.ifPresent(c -> jobRows.assignRole(c.revisions(), RevisionRole.STABLE));
            return row;
        });
        return changed(canary, promoted, "promoted", "promote", operator, reason);
    }

    /** Operator: a stopped or promoted canary runs again at its share; its gates judge only attempts from now on. */
    public String restart(String provider, String operator, String reason) {
        CanaryStore.Canary canary = newest(provider);
        // In one transaction too: a restarted candidate's outputs are held again.
        Optional<CanaryStore.Canary> restarted = transactions.execute(tx -> {
            Optional<CanaryStore.Canary> row = store.restart(canary.revision(), reason, operator, clock.instant());
            row.ifPresent(c -> jobRows.assignRole(c.revisions(), RevisionRole.CANDIDATE));
            return row;
        });
        return changed(canary, restarted, "restarted", "restart", operator, reason);
    }

    /** After a promotion or a restart: its action recorded and published, or a conflict when its status did not allow it. */
    private String changed(CanaryStore.Canary before, Optional<CanaryStore.Canary> after, String action, String what, String operator,
                           String reason) {
        if (after.isEmpty()) {
            throw conflict(before, what);
        }
        action(before.revision(), before.provider(), action, null, reason, operator, 0);
        LOG.info("canary {} provider={} revision={} by={}", action, before.provider(), before.revision(), operator);
        publish();
        return before.revision();
    }

    private static ApiProblem conflict(CanaryStore.Canary canary, String what) {
        String status = canary.status().wire();
        return ApiProblem.of(409, "canary_conflict", "The canary " + canary.revision() + " of provider '" + canary.provider() + "' is "
                + status + ": it cannot " + what + ".").with("canary_status", status);
    }

    private void action(String revision, String provider, String action, String gate, String reason, String operator, int requeued) {
        store.addAction(revision, provider, action, gate, reason, operator, clock.instant(), requeued);
    }

    /** Unpublished actions to the status topic, oldest first; a failed publish is tried again next round. */
    private void publish() {
        for (CanaryStore.Action a : store.unpublished(100)) {
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "canary");
            event.put("provider", a.provider());
            event.put("revision", a.revision());
            event.put("action", a.action());
            event.put("gate", a.gate());
            event.put("reason", a.reason());
            event.put("operator", a.operator());
            event.put("at", a.at().toString());
            event.put("requeued", a.requeued());
            try {
                publisher.publish(event);
            } catch (Exception e) {
                LOG.warn("canary event {} not published yet: {}", a.actionId(), e.toString());
                return;
            }
            store.markPublished(a.actionId(), clock.instant());
        }
    }

}
