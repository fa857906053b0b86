package io.jobgate.canary;

import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.TreeMap;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * What an operator sees of the canaries: each with its share, its route, its gates now and its actions; health's notes.
 * The admin API writes the views as they are (docs/operator-api.md): a component's name is its JSON member, in order.
 */
public final class CanaryViews {

    /**
     * One canary as the admin API shows it.
     *
     * @param closedUntil  its own gate, closed by a 429 it got (the provider's gate is not): until then its share goes to
     *                     the stable revision; null once past
     * @param sampledAt    when its gates first judged a full sample; before that it takes at most min-sample attempts
     * @param sharePercent with {@code routeLoaded} and {@code gates}, left out when its provider is not configured now
     */
    public record Canary(String provider, String revision, List<String> revisions, String status, String gate, String reason,
                         @JsonProperty("changed_by") String changedBy,
                         @JsonProperty("changed_at") String changedAt,
                         @JsonProperty("closed_until") String closedUntil,
                         @JsonProperty("closed_reason") String closedReason,
                         @JsonProperty("sampled_at") String sampledAt,
                         @JsonProperty("share_percent") @JsonInclude(JsonInclude.Include.NON_NULL) Double sharePercent,
                         @JsonProperty("route_loaded") @JsonInclude(JsonInclude.Include.NON_NULL) Boolean routeLoaded,
                         @JsonInclude(JsonInclude.Include.NON_NULL) Gates gates,
                         Attempts attempts, List<Action> actions) {
    }

    /** Its gates over the window now ({@link CanaryGates.Verdict}); {@code wouldTrip} the gate it would stop at, or null. */
    public record Gates(long sample, boolean judged,
                        @JsonProperty("error_rate") double errorRate,
                        @JsonProperty("invalid_output_rate") double invalidOutputRate,
                        @JsonProperty("p95_ms") long p95Millis,
                        @JsonProperty("would_trip") String wouldTrip) {
    }

    /** Every attempt of its revisions: how many, how many held their output, how many ended in an error. */
    public record Attempts(long total, @JsonProperty("held_outputs") long heldOutputs, long errors) {
    }

    /** One of its actions (started, stopped, promoted, restarted), oldest first. */
    public record Action(String action, String gate, String reason, String operator, String at, int requeued) {
    }

    private final CanaryStore store;
    private final ProviderCatalog providers;
    private final Canaries canaries;
    private final CanaryGates gates;
    private final Clock clock;

    public CanaryViews(JdbcTemplate jdbc, ProviderCatalog providers, Canaries canaries, Clock clock) {
        this.store = new CanaryStore(jdbc);
        this.providers = providers;
        this.canaries = canaries;
        this.clock = clock;
        this.gates = new CanaryGates(jdbc, clock);
    }

    /** Every canary, newest first, with its share, whether its route is loaded, its gates now, and its actions. */
    public List<Canary> list() {
        return store.newestFirst().stream().map(this::view).toList();
    }

    public Canary view(String revision) {
        return view(store.find(revision).orElseThrow(() -> new NoSuchElementException("no canary " + revision)));
    }

    private Canary view(CanaryStore.Canary row) {
        boolean closed = row.closedUntil() != null && row.closedUntil().isAfter(clock.instant());
        Optional<Provider> provider = providers.find(row.provider());
        Gates now = provider.map(p -> {
            CanaryGates.Verdict v = gates.judge(p, row.revision(), row.revisions(), GateThresholds.of(p), row.judgedFrom());
            return new Gates(v.sample(), v.judged(), v.errorRate(), v.invalidOutputRate(), v.p95Millis(), v.tripped());
        }).orElse(null);
        CanaryStore.AttemptTotals attempts = store.attemptTotals(row.revisions());
        return new Canary(row.provider(), row.revision(), row.revisions(), row.status().wire(), row.gate(), row.reason(),
                row.changedBy(), text(row.changedAt()), closed ? text(row.closedUntil()) : null, closed ? row.closedReason() : null,
                text(row.sampledAt()),
                provider.map(CanaryShare::share).orElse(null),
                provider.map(p -> canaries.candidate(p).map(c -> c.id().equals(row.revision())).orElse(false)).orElse(null),
                now,
                new Attempts(attempts.total(), attempts.heldOutputs(), attempts.errors()),
                store.actions(row.revision()).stream()
                        .map(a -> new Action(a.action(), a.gate(), a.reason(), a.operator(), text(a.at()), a.requeued())).toList());
    }

    private static String text(Instant at) {
        return at == null ? null : at.toString();
    }

    /** Per provider, what health adds: its newest canary's state. */
    public Map<String, String> healthNotes() {
        Map<String, String> notes = new TreeMap<>();
        for (CanaryStore.Canary row : store.newestOfEachProvider()) {
            String share = providers.find(row.provider()).map(p -> " at " + CanaryShare.share(p) + " %").orElse("");
            notes.put(row.provider(), switch (row.status()) {
                case STOPPED -> "canary " + row.revision() + " stopped: " + row.reason();
                case PROMOTED -> "canary " + row.revision() + " promoted (every attempt)";
                case RUNNING -> "canary " + row.revision() + " running" + share;
            });
        }
        return notes;
    }
}
