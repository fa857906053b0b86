package io.jobgate.pool;

import io.jobgate.common.PropertiesFiles;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

import io.jobgate.common.StartRefused;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;

/**
 * The pools of {@code <dir>/<pool>.properties} in the pool directories ({@code jobgate.pools.dirs}), read and checked
 * once at start: a file that names an unknown or disabled provider, a member that does not serve the pool's kind, a
 * weight, max-wait, failure threshold, window or cooldown that is not a whole number of at least 0 (a threshold with a
 * window or cooldown of 0), a pool without members or whose weights are all 0, a preset listed by two pools, two
 * default pools of one kind, or an entry the pool does not know refuses the start, in one line naming the file and
 * the entry. A job that names neither a provider nor a pool takes its preset's pool ({@code presets}), else its kind's
 * default pool ({@code default = true}), else its kind's default provider.
 */
public final class PoolCatalog {

    static final Set<String> KINDS = Set.of("image", "transcription", "summary", "video");
    static final Duration DEFAULT_MAX_WAIT = Duration.ofSeconds(60);
    static final int DEFAULT_FAILURE_THRESHOLD = 5;
    static final Duration DEFAULT_FAILURE_WINDOW = Duration.ofSeconds(60);
    static final Duration DEFAULT_COOLDOWN = Duration.ofSeconds(30);
    /** The per-member entries of a pool file, each followed by {@code .<member>}. */
    static final List<String> MEMBER_ENTRIES = List.of("weight", "max-wait-seconds", "failure-threshold", "failure-window-seconds",
            "cooldown-seconds");

    /** The pool-wide entries of a pool file. */
    static final Set<String> POOL_ENTRIES = Set.of("kind", "members", "presets", "default");

    private final Map<String, Pool> pools;

    PoolCatalog(Map<String, Pool> pools) {
        this.pools = Map.copyOf(pools);
    }

    /** No pool declared: every job goes to the provider it names or to its kind's default (a pool of one). */
    public static PoolCatalog none() {
        return new PoolCatalog(Map.of());
    }

    public static PoolCatalog load(List<Path> directories, ProviderCatalog providers) throws IOException {
        Map<String, Pool> pools = new TreeMap<>();
        for (PropertiesFiles.Named file : PropertiesFiles.read(directories)) {
            pools.put(file.name(), parse(file.name(), file.properties(), providers));
        }
        Map<String, String> presetPools = new TreeMap<>();
        Map<String, String> kindDefaults = new TreeMap<>();
        for (Pool pool : pools.values()) {
            for (String preset : new java.util.TreeSet<>(pool.presets())) {
                String other = presetPools.putIfAbsent(preset, pool.name());
                if (other != null) {
                    throw new StartRefused("pool " + pool.name() + " (pools/" + pool.name() + ".properties): presets names '" + preset
                            + "', which pool " + other + " names too; a preset's jobs take one pool");
                }
            }
            String other = pool.kindDefault() ? kindDefaults.putIfAbsent(pool.kind(), pool.name()) : null;
            if (other != null) {
                throw new StartRefused("pool " + pool.name() + " (pools/" + pool.name() + ".properties): default = true, as pool "
                        + other + " is for " + pool.kind() + " jobs; a kind has one default pool");
            }
        }
        return new PoolCatalog(pools);
    }

    /**
     * Refuses the start when a pool's {@code presets} names a preset that does not exist or is of another kind than the
     * pool's: a typo would otherwise leave the preset's jobs on the kind's default without a word.
     */
    public void checkPresets(io.jobgate.preset.PresetCatalog presets) {
        for (Pool pool : pools.values()) {
            for (String id : new java.util.TreeSet<>(pool.presets())) {
                String where = "pool " + pool.name() + " (pools/" + pool.name() + ".properties): presets names '" + id + "'";
                List<io.jobgate.preset.Preset> versions = presets.all().stream().filter(p -> p.id().equals(id)).toList();
                if (versions.isEmpty()) {
                    throw new StartRefused(where + ", which is not a preset (presets: " + String.join(", ", presets.ids()) + ")");
                }
                versions.stream().filter(p -> !p.kind().equals(pool.kind())).findFirst().ifPresent(p -> {
                    throw new StartRefused(where + ", a preset of kind " + p.kind() + "; the pool serves " + pool.kind() + " jobs");
                });
            }
        }
    }

    /**
     * The pool a job of {@code preset} takes when it names neither a provider nor a pool: the pool that lists the
     * preset, else its kind's default pool; empty: the kind's default provider, as without pools.
     */
    public Optional<Pool> forPreset(io.jobgate.preset.Preset preset) {
        return pools.values().stream().filter(p -> p.presets().contains(preset.id())).findFirst()
                .or(() -> pools.values().stream().filter(p -> p.kindDefault() && p.kind().equals(preset.kind())).findFirst());
    }

    /** The pool {@code name} declares, checked against the providers; refuses the start in one line otherwise. */
    static Pool parse(String name, Properties file, ProviderCatalog providers) {
        String where = "pool " + name + " (pools/" + name + ".properties): ";
        String kind = file.getProperty("kind", "").trim();
        if (!KINDS.contains(kind)) {
            throw new StartRefused(where + "kind must be one of image, transcription, summary, video; was '" + kind + "'");
        }
        List<String> names = Arrays.stream(file.getProperty("members", "").split(",")).map(String::trim)
                .filter(m -> !m.isEmpty()).toList();
        if (names.isEmpty()) {
            throw new StartRefused(where + "it has no member; set members = <provider>, <provider>, ...");
        }
        if (new LinkedHashSet<>(names).size() != names.size()) {
            throw new StartRefused(where + "members names a provider twice: " + String.join(", ", names));
        }
        for (String key : file.stringPropertyNames()) {
            String member = MEMBER_ENTRIES.stream().filter(e -> key.startsWith(e + ".")).findFirst()
                    .map(e -> key.substring(e.length() + 1)).orElse(null);
            if (!POOL_ENTRIES.contains(key) && (member == null || !names.contains(member))) {
                throw new StartRefused(where + "unknown entry '" + key + "'; a pool has kind, members, presets, default, "
                        + String.join(", ", MEMBER_ENTRIES.stream().map(e -> e + ".<member>").toList()) + " for its members "
                        + String.join(", ", names));
            }
        }
        List<Pool.Member> members = new ArrayList<>();
        for (String member : names) {
            Optional<Provider> provider = providers.find(member);
            if (provider.isEmpty()) {
                throw new StartRefused(where + "member '" + member + "' is not a configured provider");
            }
            if ("false".equalsIgnoreCase(provider.get().settings().getOrDefault("enabled", "true").trim())) {
                throw new StartRefused(where + "member '" + member + "' is disabled (jobgate.provider." + member + ".enabled = false)");
            }
            if (!provider.get().kinds().contains(kind)) {
                throw new StartRefused(where + "member '" + member + "' does not serve " + kind + " jobs (its kinds: "
                        + String.join(", ", new java.util.TreeSet<>(provider.get().kinds())) + ")");
            }
            int weight = whole(where, "weight." + member, file.getProperty("weight." + member, "1"));
            int maxWait = whole(where, "max-wait-seconds." + member,
                    file.getProperty("max-wait-seconds." + member, Long.toString(DEFAULT_MAX_WAIT.toSeconds())));
            int threshold = whole(where, "failure-threshold." + member,
                    file.getProperty("failure-threshold." + member, Integer.toString(DEFAULT_FAILURE_THRESHOLD)));
            int window = whole(where, "failure-window-seconds." + member,
                    file.getProperty("failure-window-seconds." + member, Long.toString(DEFAULT_FAILURE_WINDOW.toSeconds())));
            int cooldown = whole(where, "cooldown-seconds." + member,
                    file.getProperty("cooldown-seconds." + member, Long.toString(DEFAULT_COOLDOWN.toSeconds())));
            if (threshold > 0 && (window == 0 || cooldown == 0)) {
                throw new StartRefused(where + "failure-threshold." + member + " is " + threshold + " but its "
                        + (window == 0 ? "failure-window-seconds" : "cooldown-seconds") + " is 0; give it at least 1, or set the threshold to 0"
                        + " (the member never cools down)");
            }
            members.add(new Pool.Member(member, weight, Duration.ofSeconds(maxWait), threshold, Duration.ofSeconds(window),
                    Duration.ofSeconds(cooldown)));
        }
        if (members.stream().allMatch(m -> m.weight() == 0)) {
            throw new StartRefused(where + "every member's weight is 0: it would take no job; give one a weight of at least 1");
        }
        Set<String> presets = new LinkedHashSet<>(Arrays.stream(file.getProperty("presets", "").split(",")).map(String::trim)
                .filter(p -> !p.isEmpty()).toList());
        String kindDefault = file.getProperty("default", "false").trim();
        if (!kindDefault.equals("true") && !kindDefault.equals("false")) {
            throw new StartRefused(where + "default must be true or false, was '" + kindDefault + "'");
        }
        return new Pool(name, kind, members, presets, Boolean.parseBoolean(kindDefault));
    }

    private static int whole(String where, String key, String value) {
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new StartRefused(where + key + " must be a whole number of at least 0, was '" + value.trim() + "'");
    }

    public Optional<Pool> find(String name) {
        return Optional.ofNullable(pools.get(name));
    }

    public List<Pool> all() {
        return List.copyOf(pools.values());
    }
}
