package io.jobgate.canary;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import io.jobgate.common.ApiProblem;
import io.jobgate.fate.Placement;
import io.jobgate.fate.PlacementFacts;
import io.jobgate.fate.Placements;
import io.jobgate.job.JobConditions;
import io.jobgate.job.JobRows;
import io.jobgate.job.JobSchedules;
import io.jobgate.job.JobStatus;
import io.jobgate.job.RevisionRole;
import io.jobgate.job.JobTransitions;
import io.jobgate.provider.AdapterSource;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.provider.RevisionIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Canary adapter revisions (docs/canary.md): a candidate route file beside a provider's stable one
 * ({@code direct:provider-<name>-candidate}) gets a share of new attempts ({@code canary.share}, percent),
 * is judged by its gates ({@link CanaryGates}) every period, stops by itself when it crosses one, and its
 * jobs are rolled back onto the stable revision under their ids.
 *
 * <p>Which attempt goes to the candidate is decided from the attempt alone — a hash of (job id, attempt
 * number) against the share — so every instance decides the same without a shared counter or lock.
 * The canary's state ({@code canaries}) is read in the start's transaction, so a stop committed before a
 * start is seen by it on every instance.
 */
public final class Canaries {

    private static final Logger LOG = LoggerFactory.getLogger(Canaries.class);

    /** The stable revision's route is {@code direct:provider-<name>}; a candidate's adds this. */
    public static final String CANDIDATE_SUFFIX = "-candidate";
    /** Who the automatic stop names. */
    public static final String GATES = "canary-gates";
    /** Hash buckets of the share: 1/10000 (a share is given to 0.01 %). */
    static final int BUCKETS = 10_000;

    /** Where an attempt goes: its revision, the route to call, and whether its output may be promoted. */
    public record Choice(String revision, String adapterUri, boolean candidate, boolean approved) {
        public static Choice stable(Provider provider, String kind) {
            return new Choice(provider.revision(kind), provider.adapterUri(), false, true);
        }
    }

    /**
     * A provider's candidate as loaded now: its identity, label and route file, and the provider's settings as
     * it reads them (with the entries only it reads that the environment alone gives).
     */
    public record Candidate(String provider, String id, String label, AdapterSource source, Map<String, String> settings) {
        public String revision(Provider p, String kind) {
            return RevisionIdentity.of(Canaries.label(p, kind), source, settings, kind);
        }

        /** Its per-kind revisions (what its attempts record). */
        public List<String> revisions(Provider p) {
            return p.kinds().stream().sorted().map(k -> revision(p, k)).toList();
        }

        public String uri() {
            return "direct:provider-" + provider + CANDIDATE_SUFFIX;
        }
    }

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
    /** The jobs table's queries this uses (built on {@code jdbc}). */
    private final JobRows jobRows;
    private final JobSchedules schedules;
    private final JobConditions conditions;
    private final TransactionTemplate transactions;
    private final JobTransitions transitions;
    private final ProviderCatalog providers;
    private final Function<String, AdapterSource> candidateSources;
    private final CanaryGates gates;
    private final Clock clock;
    private volatile StopListener stopListener = (p, r, g, why, n) -> { };
    private volatile Publisher publisher = event -> { };
    /** Revisions known not to be candidates (never in {@code canaries}): approved for good. */
    private final Map<String, Boolean> plainRevisions = new ConcurrentHashMap<>();

    /**
     * @param candidateSources a provider's candidate route file as loaded and started now, or null when
     *                         no candidate route runs ({@code AdapterRoutes.candidateSource})
     */
    public Canaries(JdbcTemplate jdbc, TransactionTemplate transactions, JobTransitions transitions, ProviderCatalog providers,
                    Function<String, AdapterSource> candidateSources) {
        this.jdbc = jdbc;
        this.jobRows = new JobRows(jdbc);
        this.schedules = new JobSchedules(jdbc);
        this.conditions = new JobConditions(jdbc);
        this.transactions = transactions;
        this.transitions = transitions;
        this.providers = providers;
        this.candidateSources = candidateSources;
        this.clock = transitions.clock();
        this.gates = new CanaryGates(jdbc, clock);
    }

    public void onStop(StopListener listener) {
        this.stopListener = listener;
    }

    public void publishWith(Publisher publisher) {
        this.publisher = publisher;
    }

    // --- Routing ---------------------------------------------------------------------------------

    /** The candidate of {@code provider} whose route is loaded and started now. */
    /** Whether {@code provider} has a candidate loaded now: only then may a start's choice need the database. */
    public boolean hasCandidate(Provider provider) {
        return candidateSources.apply(provider.name()) != null;
    }

    public Optional<Candidate> candidate(Provider provider) {
        AdapterSource source = candidateSources.apply(provider.name());
        if (source == null) {
            return Optional.empty();
        }
        String label = label(provider, null);
        Map<String, String> settings = providers.settingsReadBy(provider, source);
        return Optional.of(new Candidate(provider.name(), RevisionIdentity.of(label, source, settings, null), label, source, settings));
    }

    /** A candidate's human label: {@code canary.label}, else the stable label and {@code -candidate}. */
    static String label(Provider provider, String kind) {
        String own = provider.settings().get("canary.label");
        return own == null || own.isBlank() ? provider.label(kind) + CANDIDATE_SUFFIX : own.trim();
    }

    /** {@code canary.share}: percent of new attempts for the candidate, 0 to 100 (decimals allowed). */
    public static double share(Provider provider) {
        String value = provider.settings().get("canary.share");
        if (value == null || value.isBlank()) {
            return 0;
        }
        try {
            double share = Double.parseDouble(value.trim());
            if (!(share >= 0 && share <= 100)) {
                throw new NumberFormatException();
            }
            return share;
        } catch (NumberFormatException e) {
            throw new IllegalStateException("jobgate.provider." + provider.name() + ".canary.share must be a percent from 0 to 100, was "
                    + value);
        }
    }

    /**
     * Where the next attempt of a job goes (called in the worker's start transaction, {@code JobLeases.start},
     * right before the attempt row is opened). The candidate gets it when its route runs, its canary is running
     * (or promoted: then every attempt), the job's previous attempt did not run on it, the job has an attempt
     * left for the stable revision after this one, the attempt's hash bucket falls within the share, the
     * candidate's own gate is open (a 429 it got closes it, {@link #closeCandidate}), and — until its gates have
     * judged a full sample — it has fewer than {@code canary.min-sample} attempts started ({@link #sampleFull}).
     *
     * @param attemptsSoFar the job's attempts before this one
     */
    public Choice choose(Provider provider, UUID jobId, String kind, int attemptsSoFar, int maxAttempts) {
        return choose(provider, jobId, kind, attemptsSoFar, maxAttempts, false);
    }

    /**
     * As {@link #choose(Provider, UUID, String, int, int)}.
     *
     * @param mayWait the start holds no job row yet (the usual start, whose transition locks the job after the
     *                choice): it may wait for the count of a candidate's first sample; a start that holds its job's
     *                row only tries (and goes to the stable revision when another start is counting), so no two
     *                starts ever wait on each other
     */
    public Choice choose(Provider provider, UUID jobId, String kind, int attemptsSoFar, int maxAttempts, boolean mayWait) {
        if (provider == null) {
            return null;
        }
        try {
            return chooseFor(provider, jobId, kind, attemptsSoFar, maxAttempts, mayWait);
        } catch (IllegalStateException badSetting) {
            // A canary entry that cannot be read (share, thresholds) sends nothing to the candidate; it never stops
            // the stable revision's attempts. The gates' round names it too.
            if (!badSetting.getMessage().equals(lastBadSetting)) {
                lastBadSetting = badSetting.getMessage();
                LOG.warn("canary of provider {} takes no attempts: {}", provider.name(), badSetting.getMessage());
            }
            return Choice.stable(provider, kind);
        }
    }

    private volatile String lastBadSetting = "";

    private Choice chooseFor(Provider provider, UUID jobId, String kind, int attemptsSoFar, int maxAttempts, boolean mayWait) {
        Optional<Candidate> loaded = candidate(provider);
        List<Map<String, Object>> rows = loaded.isEmpty() ? List.of() : jdbc.queryForList(
                "SELECT status, closed_until, sampled_at, judged_from, array_to_string(revisions, ' ') AS revisions FROM canaries WHERE revision = ?",
                loaded.get().id());
        Map<String, Object> row = rows.isEmpty() ? null : rows.get(0);
        String status = row == null ? null : (String) row.get("status");
        PlacementFacts.Canary canary = status == null ? PlacementFacts.Canary.NONE
                : PlacementFacts.Canary.valueOf(status.toUpperCase(java.util.Locale.ROOT));
        String revision = loaded.map(c -> c.revision(provider, kind)).orElse(null);
        Instant now = clock.instant();
        boolean inShare = canary == PlacementFacts.Canary.RUNNING
                && bucket(jobId, attemptsSoFar + 1) < Math.round(share(provider) * (BUCKETS / 100.0));
        Placement placed = Placements.place(new PlacementFacts(canary, attemptsSoFar, maxAttempts, inShare,
                row != null && row.get("closed_until") instanceof Timestamp closed ? closed.toInstant() : null,
                () -> jobRows.adapterRevision(jobId).filter(revision::equals).isPresent(),
                () -> row.get("sampled_at") == null && sampleFull(provider, loaded.get(), revisions(row),
                        ((Timestamp) row.get("judged_from")).toInstant(), now, mayWait),
                now));
        if (placed instanceof Placement.OnCandidate on) {
            return new Choice(revision, loaded.get().uri(), true, on.role() == io.jobgate.job.RevisionRole.STABLE);
        }
        return Choice.stable(provider, kind);
    }

    /**
     * Before its gates first judged a full sample, may the candidate take no more attempts? It has
     * {@code canary.min-sample} attempts started in the gates' window (since {@code judged_from}; attempts
     * the gates never count — lease lost, ended with their job — excepted), counted as they start: the
     * count runs in the start's transaction under a transaction-scoped advisory lock of the canary, so
     * concurrent starts on any instance count one after the other and a burst cannot overshoot. A usual start
     * ({@code mayWait}) waits for the lock while it holds no job row; one that holds its job's row (the long
     * way of a start) only tries it and, finding it taken, sends its attempt to the stable revision. A holder
     * of the lock may wait for its own job's row, never the other way round: no cycle.
     */
    private boolean sampleFull(Provider provider, Candidate candidate, List<String> revisions, Instant judgedFrom, Instant now,
                               boolean mayWait) {
        GateThresholds thresholds = GateThresholds.of(provider);
        if (mayWait) {
            jdbc.queryForList("SELECT pg_advisory_xact_lock(?, hashtext(?))", SAMPLE_LOCK, candidate.id());
        } else if (!Boolean.TRUE.equals(jdbc.queryForObject("SELECT pg_try_advisory_xact_lock(?, hashtext(?))", Boolean.class,
                SAMPLE_LOCK, candidate.id()))) {
            return true;
        }
        Instant since = now.minus(thresholds.window());
        if (judgedFrom.isAfter(since)) {
            since = judgedFrom;
        }
        Long started = jdbc.queryForObject("""
                SELECT count(*) FROM attempts
                 WHERE adapter_revision = ANY (?) AND adapter = ? AND started_at >= ?
                   AND (outcome IS NULL OR outcome NOT IN ('lease_lost', 'ended_with_job'))""",
                Long.class, revisions.toArray(String[]::new), provider.name(), Timestamp.from(since));
        return started != null && started >= thresholds.minSample();
    }

    /** Advisory lock class of a canary's first sample (beside {@code UploadStore.OBJECT_LOCK}, {@code InstanceLiveness.LOCK_CLASS}). */
    static final int SAMPLE_LOCK = 27241;

    /**
     * A candidate's attempt got a 429: the candidate alone waits until {@code until} (never shortened),
     * its share going to the stable revision meanwhile; the provider's gate stays open for stable attempts.
     *
     * @param revision the attempt's (per-kind) revision
     */
    public void closeCandidate(String revision, Instant until, String reason) {
        jdbc.update("""
                UPDATE canaries SET closed_until = greatest(coalesce(closed_until, '-infinity'), ?), closed_reason = ?
                 WHERE ? = ANY (revisions)""", Timestamp.from(until), reason, revision);
    }

    /** Until when the candidate of the (per-kind) {@code revision} is closed by its own 429, if it is now. */
    public Optional<Instant> candidateClosedUntil(String revision) {
        return jdbc.queryForList("SELECT closed_until FROM canaries WHERE ? = ANY (revisions) AND closed_until > ?", Timestamp.class,
                revision, Timestamp.from(clock.instant())).stream().findFirst().map(Timestamp::toInstant);
    }

    /**
     * Is {@code revision} a candidate's whose outputs are not approved (running or stopped, not promoted)?
     * Its attempts' failures are the candidate's, never their job's.
     */
    public boolean isCandidate(String revision) {
        return !approved(revision);
    }

    /** The attempt's bucket, 0 to 9999: the same on every instance. */
    static int bucket(UUID jobId, int attempt) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest((jobId + ":" + attempt).getBytes(StandardCharsets.US_ASCII));
            long n = ((d[0] & 0xffL) << 24) | ((d[1] & 0xffL) << 16) | ((d[2] & 0xffL) << 8) | (d[3] & 0xffL);
            return (int) (n % BUCKETS);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * May an output made by {@code revision} be promoted? Not while it is a candidate's that was not
     * promoted (its outputs stay in quarantine); every other revision is approved.
     */
    public boolean approved(String revision) {
        if (revision == null || plainRevisions.containsKey(revision)) {
            return true;
        }
        List<String> status = jdbc.queryForList("SELECT status FROM canaries WHERE ? = ANY (revisions)", String.class, revision);
        if (status.isEmpty()) {
            plainRevisions.put(revision, true); // a candidate revision is in the table before its first attempt
            return true;
        }
        return status.stream().allMatch("promoted"::equals);
    }

    /**
     * The route that speaks for an attempt of {@code revision} (a lookup, a cancel): the candidate's
     * while it is loaded and the revision is one of its, else the stable one.
     */
    public String adapterUri(Provider provider, String revision) {
        return candidate(provider).filter(c -> revision != null && c.revisions(provider).contains(revision))
                .map(Candidate::uri).orElse(provider.adapterUri());
    }

    /**
     * The idempotency key of a candidate's attempt: its own per attempt, so a provider that deduplicates by
     * key never answers the stable revision's attempt with the candidate's result.
     */
    public static String candidateKey(String jobKey, int attempt) {
        return jobKey + "-canary-" + attempt;
    }


    // --- Gates (the canary-gates timer route) ----------------------------------------------------------

    /**
     * Route step: every loaded candidate gets its row (a new one runs), every running canary is judged,
     * one that crossed a gate is stopped and rolled back; then unpublished actions go to the status topic.
     */
    public void judge() {
        for (Provider provider : providers.all()) {
            candidate(provider).ifPresent(c -> discover(provider, c));
        }
        for (Map<String, Object> row : jdbc.queryForList("SELECT revision, provider, array_to_string(revisions, ' ') AS revisions, judged_from, sampled_at FROM canaries WHERE status = 'running'")) {
            Provider provider = providers.find((String) row.get("provider")).orElse(null);
            if (provider == null) {
                continue;
            }
            String revision = (String) row.get("revision");
            CanaryGates.Verdict verdict = gates.judge(provider, revision, revisions(row), GateThresholds.of(provider),
                    ((Timestamp) row.get("judged_from")).toInstant());
            if (verdict.tripped() != null) {
                stop(revision, verdict.tripped().split(" ")[0], verdict.tripped(), GATES);
            } else if (verdict.judged() && row.get("sampled_at") == null) {
                // A full sample passed: from now on the share alone decides (no count at each start).
                jdbc.update("UPDATE canaries SET sampled_at = ? WHERE revision = ? AND status = 'running' AND sampled_at IS NULL",
                        Timestamp.from(clock.instant()), revision);
            }
        }
        publish();
    }

    private static List<String> revisions(Map<String, Object> row) {
        return Arrays.asList(((String) row.get("revisions")).split(" "));
    }

    private void discover(Provider provider, Candidate candidate) {
        Timestamp now = Timestamp.from(clock.instant());
        int added = jdbc.update("""
                INSERT INTO canaries (revision, provider, revisions, status, judged_from, changed_by, changed_at, created_at)
                VALUES (?, ?, ?, 'running', ?, 'drop-in', ?, ?) ON CONFLICT DO NOTHING""",
                candidate.id(), provider.name(), candidate.revisions(provider).toArray(String[]::new), now, now, now);
        if (added == 1) {
            action(candidate.id(), provider.name(), "started", null, "candidate route loaded; share " + share(provider) + " %",
                    "drop-in", 0);
            LOG.info("canary started provider={} revision={} share={} %", provider.name(), candidate.id(), share(provider));
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
        Timestamp now = Timestamp.from(clock.instant());
        // The status and the role of its open jobs in one transaction: a stopped canary's outputs stay held.
        List<Map<String, Object>> stopped = transactions.execute(tx -> {
            List<Map<String, Object>> rows = jdbc.queryForList("""
                    UPDATE canaries SET status = 'stopped', gate = ?, reason = ?, changed_by = ?, changed_at = ?
                     WHERE revision = ? AND status IN ('running', 'promoted') RETURNING provider, array_to_string(revisions, ' ') AS revisions""",
                    gate, reason, operator, now, revision);
            rows.forEach(r -> jobRows.assignRole(revisions(r), RevisionRole.CANDIDATE));
            return rows;
        });
        if (stopped.isEmpty()) {
            return Optional.empty();
        }
        String provider = (String) stopped.get(0).get("provider");
        int requeued = rollBack(revisions(stopped.get(0)));
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
                if (transitions.apply(jobId, JobTransitions.Event.RESUBMIT, JobTransitions.Guard.from(java.util.Set.of(status)),
                        JobTransitions.Change.retryAt(now, 0, null)).isPresent()) {
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
    private Map<String, Object> newest(String provider) {
        return jdbc.queryForList("SELECT revision, status FROM canaries WHERE provider = ? ORDER BY created_at DESC LIMIT 1", provider)
                .stream().findFirst().orElseThrow(() -> ApiProblem.of(404, "canary_not_found",
                        "Provider '" + provider + "' has no canary: drop a candidate route (direct:provider-" + provider
                                + CANDIDATE_SUFFIX + ") in first."));
    }

    /** Operator: stops the provider's canary (as the gates would). */
    public Map<String, Object> stopByOperator(String provider, String operator, String reason) {
        Map<String, Object> row = newest(provider);
        String revision = (String) row.get("revision");
        if (stop(revision, "operator", reason == null ? "stopped by " + operator : reason, operator).isEmpty()) {
            throw conflict(provider, revision, (String) row.get("status"), "stop");
        }
        return view(revision);
    }

    /**
     * Operator: the candidate becomes the approved revision: every new attempt of the provider runs on it and
     * its outputs are promoted (the operator then copies the candidate file over the stable one).
     */
    public Map<String, Object> promote(String provider, String operator, String reason) {
        return change(provider, operator, reason, "promoted", "status IN ('running', 'stopped')", false);
    }

    /** Operator: a stopped or promoted canary runs again at its share; its gates judge only attempts from now on. */
    public Map<String, Object> restart(String provider, String operator, String reason) {
        return change(provider, operator, reason, "running", "status IN ('stopped', 'promoted')", true);
    }

    private Map<String, Object> change(String provider, String operator, String reason, String to, String from, boolean fresh) {
        Map<String, Object> row = newest(provider);
        String revision = (String) row.get("revision");
        Timestamp now = Timestamp.from(clock.instant());
        // The status and what its open jobs' evidence means from now on, in one transaction: a promoted revision's
        // outputs are the job's, a restarted candidate's are held again.
        List<Map<String, Object>> changed = transactions.execute(tx -> {
            List<Map<String, Object>> rows = jdbc.queryForList("UPDATE canaries SET status = ?, gate = NULL, reason = ?,"
                    + " changed_by = ?, changed_at = ?" + (fresh ? ", judged_from = ?, sampled_at = NULL" : "")
                    + " WHERE revision = ? AND " + from + " RETURNING array_to_string(revisions, ' ') AS revisions",
                    fresh ? new Object[] {to, reason, operator, now, now, revision} : new Object[] {to, reason, operator, now, revision});
            rows.forEach(r -> jobRows.assignRole(revisions(r), to.equals("promoted") ? RevisionRole.STABLE : RevisionRole.CANDIDATE));
            return rows;
        });
        if (changed.isEmpty()) {
            throw conflict(provider, revision, (String) row.get("status"), to.equals("running") ? "restart" : "promote");
        }
        String action = to.equals("running") ? "restarted" : "promoted";
        action(revision, provider, action, null, reason, operator, 0);
        LOG.info("canary {} provider={} revision={} by={}", action, provider, revision, operator);
        publish();
        return view(revision);
    }

    private static ApiProblem conflict(String provider, String revision, String status, String what) {
        return ApiProblem.of(409, "canary_conflict", "The canary " + revision + " of provider '" + provider + "' is " + status
                + ": it cannot " + what + ".").with("canary_status", status);
    }

    private void action(String revision, String provider, String action, String gate, String reason, String operator, int requeued) {
        jdbc.update("""
                INSERT INTO canary_actions (revision, provider, action, gate, reason, operator, at, requeued)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)""", revision, provider, action, gate, reason, operator,
                Timestamp.from(clock.instant()), requeued);
    }

    /** Unpublished actions to the status topic, oldest first; a failed publish is tried again next round. */
    private void publish() {
        for (Map<String, Object> a : jdbc.queryForList("""
                SELECT action_id, revision, provider, action, gate, reason, operator, at, requeued FROM canary_actions
                 WHERE published_at IS NULL ORDER BY action_id LIMIT 100""")) {
            Map<String, Object> event = new LinkedHashMap<>();
            event.put("event", "canary");
            event.put("provider", a.get("provider"));
            event.put("revision", a.get("revision"));
            event.put("action", a.get("action"));
            event.put("gate", a.get("gate"));
            event.put("reason", a.get("reason"));
            event.put("operator", a.get("operator"));
            event.put("at", ((Timestamp) a.get("at")).toInstant().toString());
            event.put("requeued", a.get("requeued"));
            try {
                publisher.publish(event);
            } catch (Exception e) {
                LOG.warn("canary event {} not published yet: {}", a.get("action_id"), e.toString());
                return;
            }
            jdbc.update("UPDATE canary_actions SET published_at = ? WHERE action_id = ?", Timestamp.from(clock.instant()),
                    a.get("action_id"));
        }
    }

    // --- Views -------------------------------------------------------------------------------------------

    /** Every canary, newest first, with its share, whether its route is loaded, its gates now, and its actions. */
    public List<Map<String, Object>> list() {
        List<Map<String, Object>> all = new ArrayList<>();
        for (String revision : jdbc.queryForList("SELECT revision FROM canaries ORDER BY created_at DESC", String.class)) {
            all.add(view(revision));
        }
        return all;
    }

    public Map<String, Object> view(String revision) {
        Map<String, Object> row = jdbc.queryForMap("""
                SELECT provider, array_to_string(revisions, ' ') AS revisions, status, gate, reason, changed_by, changed_at, judged_from,
                       closed_until, closed_reason, sampled_at
                  FROM canaries WHERE revision = ?""", revision);
        Map<String, Object> view = new LinkedHashMap<>();
        String providerName = (String) row.get("provider");
        view.put("provider", providerName);
        view.put("revision", revision);
        view.put("revisions", revisions(row));
        view.put("status", row.get("status"));
        view.put("gate", row.get("gate"));
        view.put("reason", row.get("reason"));
        view.put("changed_by", row.get("changed_by"));
        view.put("changed_at", ((Timestamp) row.get("changed_at")).toInstant().toString());
        // Its own gate: closed by a 429 it got (the provider's gate is not), until then its share goes to stable.
        boolean closed = row.get("closed_until") instanceof Timestamp t && t.toInstant().isAfter(clock.instant());
        view.put("closed_until", closed ? ((Timestamp) row.get("closed_until")).toInstant().toString() : null);
        view.put("closed_reason", closed ? row.get("closed_reason") : null);
        // When its gates first judged a full sample; before that it takes at most min-sample attempts.
        view.put("sampled_at", row.get("sampled_at") == null ? null : ((Timestamp) row.get("sampled_at")).toInstant().toString());
        Optional<Provider> provider = providers.find(providerName);
        provider.ifPresent(p -> {
            view.put("share_percent", share(p));
            view.put("route_loaded", candidate(p).map(c -> c.id().equals(revision)).orElse(false));
            CanaryGates.Verdict v = gates.judge(p, revision, revisions(row), GateThresholds.of(p),
                    ((Timestamp) row.get("judged_from")).toInstant());
            Map<String, Object> window = new LinkedHashMap<>();
            window.put("sample", v.sample());
            window.put("judged", v.judged());
            window.put("error_rate", v.errorRate());
            window.put("invalid_output_rate", v.invalidOutputRate());
            window.put("p95_ms", v.p95Millis());
            window.put("would_trip", v.tripped());
            view.put("gates", window);
        });
        view.put("attempts", jdbc.queryForMap("""
                SELECT count(*) AS total, count(*) FILTER (WHERE outcome = 'candidate_output') AS held_outputs,
                       count(*) FILTER (WHERE error_category IS NOT NULL) AS errors
                  FROM attempts WHERE adapter_revision = ANY (?)""", (Object) revisions(row).toArray(String[]::new)));
        List<Map<String, Object>> actions = new ArrayList<>();
        for (Map<String, Object> a : jdbc.queryForList("""
                SELECT action, gate, reason, operator, at, requeued FROM canary_actions WHERE revision = ? ORDER BY action_id""", revision)) {
            Map<String, Object> copy = new LinkedHashMap<>(a);
            copy.put("at", ((Timestamp) a.get("at")).toInstant().toString());
            actions.add(copy);
        }
        view.put("actions", actions);
        return view;
    }

    /** Per provider, what health adds: its newest canary's state. */
    public Map<String, String> healthNotes() {
        Map<String, String> notes = new TreeMap<>();
        for (Map<String, Object> row : jdbc.queryForList("""
                SELECT DISTINCT ON (provider) provider, revision, status, reason FROM canaries ORDER BY provider, created_at DESC""")) {
            String provider = (String) row.get("provider");
            String status = (String) row.get("status");
            String share = providers.find(provider).map(p -> " at " + share(p) + " %").orElse("");
            notes.put(provider, switch (status) {
                case "stopped" -> "canary " + row.get("revision") + " stopped: " + row.get("reason");
                case "promoted" -> "canary " + row.get("revision") + " promoted (every attempt)";
                default -> "canary " + row.get("revision") + " running" + share;
            });
        }
        return notes;
    }
}
