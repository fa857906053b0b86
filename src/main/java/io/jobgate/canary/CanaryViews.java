package io.jobgate.canary;

import java.sql.Timestamp;
import java.time.Clock;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import org.springframework.jdbc.core.JdbcTemplate;

/** What an operator sees of the canaries: each with its share, its route, its gates now and its actions; health's notes. */
public final class CanaryViews {

    private final JdbcTemplate jdbc;
    private final ProviderCatalog providers;
    private final Canaries canaries;
    private final CanaryGates gates;
    private final Clock clock;

    public CanaryViews(JdbcTemplate jdbc, ProviderCatalog providers, Canaries canaries, Clock clock) {
        this.jdbc = jdbc;
        this.providers = providers;
        this.canaries = canaries;
        this.clock = clock;
        this.gates = new CanaryGates(jdbc, clock);
    }

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
        view.put("revisions", Canaries.revisions(row));
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
            view.put("share_percent", CanaryShare.share(p));
            view.put("route_loaded", canaries.candidate(p).map(c -> c.id().equals(revision)).orElse(false));
            CanaryGates.Verdict v = gates.judge(p, revision, Canaries.revisions(row), GateThresholds.of(p),
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
                  FROM attempts WHERE adapter_revision = ANY (?)""", (Object) Canaries.revisions(row).toArray(String[]::new)));
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
            String share = providers.find(provider).map(p -> " at " + CanaryShare.share(p) + " %").orElse("");
            notes.put(provider, switch (status) {
                case "stopped" -> "canary " + row.get("revision") + " stopped: " + row.get("reason");
                case "promoted" -> "canary " + row.get("revision") + " promoted (every attempt)";
                default -> "canary " + row.get("revision") + " running" + share;
            });
        }
        return notes;
    }
}
