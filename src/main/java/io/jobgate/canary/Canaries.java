package io.jobgate.canary;

import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.Function;

import io.jobgate.fate.Placement;
import io.jobgate.fate.PlacementFacts;
import io.jobgate.fate.Placements;
import io.jobgate.job.JobRows;
import io.jobgate.job.RevisionRole;
import io.jobgate.provider.AdapterSource;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.provider.RevisionIdentity;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Canary adapter revisions (docs/canary.md), where attempts go: a candidate route file beside a provider's stable
 * one ({@code direct:provider-<name>-candidate}) gets a share of new attempts ({@code canary.share}, percent),
 * placed by {@link io.jobgate.fate.Placements} over the facts gathered here; its own gate (its 429s); the route
 * and key of its attempts. Its gates' verdicts, stop, promotion and restart are {@link CanaryLifecycle}'s; what an
 * operator sees, {@link CanaryViews}'.
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

    /** Where an attempt goes: its revision, the route to call, and whether its output may be promoted. */
    public record Choice(String revision, String adapterUri, boolean candidate, boolean approved) {
        public static Choice stable(Provider provider, String kind) {
            return new Choice(provider.revision(kind), provider.adapterUri(), false, true);
        }

        /**
         * The part its revision plays for the attempt (written on the attempt and its job as it opens): a candidate's
         * whose outputs are not approved, else stable (the stable revision's, or a promoted candidate's).
         */
        public RevisionRole role() {
            return candidate && !approved ? RevisionRole.CANDIDATE : RevisionRole.STABLE;
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

    private final CanaryStore store;
    /** The jobs table's queries this uses (on the same {@code jdbc} as the store). */
    private final JobRows jobRows;
    private final ProviderCatalog providers;
    private final Function<String, AdapterSource> candidateSources;
    private final Clock clock;

    /**
     * @param candidateSources a provider's candidate route file as loaded and started now, or null when
     *                         no candidate route runs ({@code AdapterRoutes.candidateSource})
     */
    public Canaries(JdbcTemplate jdbc, ProviderCatalog providers, Function<String, AdapterSource> candidateSources, Clock clock) {
        this.store = new CanaryStore(jdbc);
        this.jobRows = new JobRows(jdbc);
        this.providers = providers;
        this.candidateSources = candidateSources;
        this.clock = clock;
    }

    // --- Routing ---------------------------------------------------------------------------------

    /** Whether {@code provider} has a candidate loaded now: only then may a start's choice need the database. */
    public boolean hasCandidate(Provider provider) {
        return candidateSources.apply(provider.name()) != null;
    }

    /** The candidate of {@code provider} whose route is loaded and started now. */
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

    /**
     * Where the next attempt of a job goes (called in the worker's start transaction, {@code AttemptStarts.start},
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
        CanaryStore.Canary row = loaded.flatMap(c -> store.find(c.id())).orElse(null);
        PlacementFacts.Canary canary = row == null ? PlacementFacts.Canary.NONE : PlacementFacts.Canary.valueOf(row.status().name());
        String revision = loaded.map(c -> c.revision(provider, kind)).orElse(null);
        Instant now = clock.instant();
        boolean inShare = canary == PlacementFacts.Canary.RUNNING
                && CanaryShare.inShare(provider, jobId, attemptsSoFar + 1);
        Placement placed = Placements.place(new PlacementFacts(canary, attemptsSoFar, maxAttempts, inShare,
                row == null ? null : row.closedUntil(),
                () -> jobRows.adapterRevision(jobId).filter(revision::equals).isPresent(),
                () -> row.sampledAt() == null && sampleFull(provider, row, now, mayWait),
                now));
        if (placed instanceof Placement.OnCandidate on) {
            return new Choice(revision, loaded.get().uri(), true, on.role() == RevisionRole.STABLE);
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
    private boolean sampleFull(Provider provider, CanaryStore.Canary canary, Instant now, boolean mayWait) {
        GateThresholds thresholds = GateThresholds.of(provider);
        if (mayWait) {
            store.lockSample(canary.revision());
        } else if (!store.tryLockSample(canary.revision())) {
            return true;
        }
        Instant since = now.minus(thresholds.window());
        if (canary.judgedFrom().isAfter(since)) {
            since = canary.judgedFrom();
        }
        return store.attemptsStarted(canary.revisions(), provider.name(), since) >= thresholds.minSample();
    }

    /**
     * A candidate's attempt got a 429: the candidate alone waits until {@code until} (never shortened),
     * its share going to the stable revision meanwhile; the provider's gate stays open for stable attempts.
     *
     * @param revision the attempt's (per-kind) revision
     */
    public void closeCandidate(String revision, Instant until, String reason) {
        store.closeCandidate(revision, until, reason);
    }

    /** Until when the candidate of the (per-kind) {@code revision} is closed by its own 429, if it is now. */
    private Optional<Instant> candidateClosedUntil(String revision) {
        return store.closedUntil(revision, clock.instant());
    }

    /**
     * Where a lookup of an attempt on {@code revision} goes: the route that speaks for it ({@link #adapterUri}) and, for
     * a candidate's attempt, the candidate's own gate (closed by its 429 until then; the provider's gate is the job
     * package's).
     */
    public record LookupRoute(String adapterUri, Optional<Instant> closedUntil) {
    }

    /** The lookup route of an attempt on {@code revision}, run as {@code role}. */
    public LookupRoute lookupRoute(Provider provider, String revision, RevisionRole role) {
        return new LookupRoute(adapterUri(provider, revision),
                role == RevisionRole.CANDIDATE ? candidateClosedUntil(revision) : Optional.empty());
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
}
