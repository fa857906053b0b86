package io.jobgate.preset;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.jobgate.common.ApiProblem;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The version new jobs get when they name none: chosen by an operator per preset
 * ({@code preset_defaults}, every change kept in {@code preset_default_changes} with who and when),
 * else the latest loaded version. Admission asks on every job, so the choices are held in memory and
 * read again at most every {@link #REFRESH}: another instance's change counts here within it.
 */
public final class PresetDefaults {

    /** How stale this instance's view of another instance's change may be. */
    static final Duration REFRESH = Duration.ofSeconds(1);

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final PresetCatalog presets;
    private final Clock clock;
    private volatile Map<String, Integer> pinned = Map.of();
    private volatile Instant readAt = Instant.MIN;

    public PresetDefaults(JdbcTemplate jdbc, TransactionTemplate transactions, PresetCatalog presets, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.presets = presets;
        this.clock = clock;
    }

    /** The version an operator chose for {@code presetId}, or null: the latest. */
    public Integer pinned(String presetId) {
        Instant now = clock.instant();
        if (Duration.between(readAt, now).compareTo(REFRESH) >= 0 || now.isBefore(readAt)) {
            reload(now);
        }
        return pinned.get(presetId);
    }

    private void reload(Instant now) {
        Map<String, Integer> read = new java.util.HashMap<>();
        jdbc.query("SELECT preset_id, version FROM preset_defaults WHERE version IS NOT NULL",
                rs -> { read.put(rs.getString(1), rs.getInt(2)); });
        pinned = Map.copyOf(read);
        readAt = now;
    }

    /**
     * Sets (or with a null {@code version}, clears: the latest again) the default of {@code presetId}.
     *
     * @throws ApiProblem 404 {@code preset_not_found}, 422 {@code unknown_preset_version}
     */
    public Map<String, Object> set(String presetId, Integer version, String operator, String reason) {
        if (!presets.ids().contains(presetId)) {
            throw ApiProblem.of(404, "preset_not_found", "No preset '" + presetId + "'; known: "
                    + String.join(", ", presets.ids()) + ".");
        }
        List<Integer> versions = presets.versions(presetId);
        if (version != null && !versions.contains(version)) {
            throw ApiProblem.of(422, "unknown_preset_version", "Preset '" + presetId + "' has no version " + version
                    + "; versions: " + versions + ".").with("field", "version").with("versions", versions);
        }
        Timestamp now = Timestamp.from(clock.instant());
        transactions.executeWithoutResult(tx -> {
            List<Integer> before = jdbc.query("SELECT version FROM preset_defaults WHERE preset_id = ? FOR UPDATE",
                    (rs, i) -> (Integer) rs.getObject(1), presetId);
            jdbc.update("""
                    INSERT INTO preset_defaults (preset_id, version, set_by, reason, set_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (preset_id) DO UPDATE SET version = EXCLUDED.version, set_by = EXCLUDED.set_by,
                                                          reason = EXCLUDED.reason, set_at = EXCLUDED.set_at""",
                    presetId, version, operator, reason, now);
            jdbc.update("""
                    INSERT INTO preset_default_changes (preset_id, version, previous_version, set_by, reason, set_at)
                    VALUES (?, ?, ?, ?, ?, ?)""", presetId, version, before.isEmpty() ? null : before.get(0), operator, reason, now);
        });
        reload(clock.instant());
        return view(presetId);
    }

    /** Every preset: its versions, the latest, the default new jobs get and who chose it when. */
    public List<Map<String, Object>> all() {
        reload(clock.instant());
        return presets.ids().stream().map(this::view).toList();
    }

    /** One preset's versions and default, with its last changes (newest first). */
    public Map<String, Object> view(String presetId) {
        List<Integer> versions = presets.versions(presetId);
        Map<String, Object> view = new LinkedHashMap<>();
        view.put("preset_id", presetId);
        view.put("versions", versions);
        view.put("latest_version", versions.get(versions.size() - 1));
        Map<String, Object> row = jdbc.queryForList("SELECT version, set_by, reason, set_at FROM preset_defaults WHERE preset_id = ?",
                presetId).stream().findFirst().orElse(Map.of());
        Integer chosen = (Integer) row.get("version");
        view.put("default_version", chosen != null ? chosen : versions.get(versions.size() - 1));
        view.put("pinned", chosen != null);
        view.put("set_by", row.get("set_by"));
        view.put("reason", row.get("reason"));
        view.put("set_at", row.get("set_at") instanceof Timestamp ts ? ts.toInstant().toString() : null);
        view.put("changes", jdbc.query("""
                SELECT version, previous_version, set_by, reason, set_at FROM preset_default_changes
                 WHERE preset_id = ? ORDER BY change_id DESC LIMIT 20""", (rs, i) -> {
            Map<String, Object> change = new LinkedHashMap<>();
            change.put("version", rs.getObject("version"));
            change.put("previous_version", rs.getObject("previous_version"));
            change.put("set_by", rs.getString("set_by"));
            change.put("reason", rs.getString("reason"));
            change.put("set_at", rs.getTimestamp("set_at").toInstant().toString());
            return change;
        }, presetId));
        return view;
    }
}
