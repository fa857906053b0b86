package io.jobgate.provider;

import java.net.URI;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

import io.jobgate.common.Digests;

/**
 * An adapter revision's identity, derived rather than typed (issue 14): the route file's digest, the
 * effective settings that shape requests, and the operation, hashed to a short id, after the optional
 * human label ({@code revision} / {@code revision.<kind>}): {@code openai-images-2@3f9a0c1d2e}.
 *
 * <p>Request-shaping settings are the ones the route file reads plus the size table (the worker asks
 * for those sizes). Secrets never count (a rotated key is the same revision), nor does a base URL's
 * port, user info or query: a base URL counts by its class — scheme, host and path.
 */
public final class RevisionIdentity {

    /** Hex digits of the hash in an id: enough to tell a provider's revisions apart. */
    static final int HASH_CHARS = 10;

    /** Setting names that hold secrets: never part of an identity. */
    static final Pattern SECRET = Pattern.compile("(?i)(^|[.-])(api-key|key|secret|webhook-secret|token|password|credentials?)($|[.-])");

    /** Settings that never shape a request: labels, prices, error tables, limits, readiness. */
    private static final Pattern NOT_SHAPING = Pattern.compile(
            "revision(\\..*)?|price\\..*|error.*|max-concurrency|rate-limit-backoff-seconds|readiness.*|idempotent-submit|operations|kinds|canary\\..*");

    private RevisionIdentity() {
    }

    /**
     * The revision id of {@code kind} (null: the provider's plain one) of a provider with these settings
     * ({@code settings} immutable, as a {@link Provider}'s are).
     */
    public static String of(String label, AdapterSource source, Map<String, String> settings, String kind) {
        // Asked several times per attempt (lease, adapter call, record): the hash is made once per inputs.
        Inputs inputs = new Inputs(label, source, settings, kind);
        String known = MADE.get(inputs);
        if (known != null) {
            return known;
        }
        String id = label + "@" + Digests.sha256Hex(canonical(source, settings, kind)).substring(0, HASH_CHARS);
        if (MADE.size() >= MADE_MAX) {
            MADE.clear(); // settings reloads make new maps; old ones are not asked again
        }
        MADE.put(inputs, id);
        return id;
    }

    private static final int MADE_MAX = 1024;
    private static final Map<Inputs, String> MADE = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The inputs of an id, the source and the settings by identity: a provider's maps are immutable copies
     * made when its settings are read, so the same instance always hashes to the same id (and comparing
     * by identity costs nothing where hashing the settings would).
     */
    private static final class Inputs {
        private final String label;
        private final AdapterSource source;
        private final Map<String, String> settings;
        private final String kind;
        private final int hash;

        Inputs(String label, AdapterSource source, Map<String, String> settings, String kind) {
            this.label = label;
            this.source = source;
            this.settings = settings;
            this.kind = kind;
            this.hash = java.util.Objects.hash(label, System.identityHashCode(source), System.identityHashCode(settings), kind);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Inputs i && i.source == source && i.settings == settings
                    && java.util.Objects.equals(i.label, label) && java.util.Objects.equals(i.kind, kind);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** The text hashed: one line per input, sorted, so the id is stable across starts and instances. */
    static String canonical(AdapterSource source, Map<String, String> settings, String kind) {
        Map<String, String> shaping = new TreeMap<>();
        settings.forEach((key, value) -> {
            boolean read = source.settingKeys() == null ? !NOT_SHAPING.matcher(key).matches() : source.settingKeys().contains(key);
            if ((read || key.startsWith("size.")) && !SECRET.matcher(key).find()) {
                shaping.put(key, key.equals("base-url") || key.endsWith(".base-url") ? urlClass(value) : value);
            }
        });
        StringBuilder text = new StringBuilder("kind=").append(kind == null ? "" : kind).append('\n')
                .append("route=").append(source.digest()).append('\n');
        shaping.forEach((key, value) -> text.append(key).append('=').append(value).append('\n'));
        return text.toString();
    }

    /** Scheme, host and path of a URL; what is not a URL counts as written. */
    static String urlClass(String url) {
        try {
            URI uri = URI.create(url.trim());
            if (uri.getScheme() == null || uri.getHost() == null) {
                return url.trim();
            }
            String path = uri.getPath() == null ? "" : uri.getPath().replaceAll("/+$", "");
            return uri.getScheme().toLowerCase() + "://" + uri.getHost().toLowerCase() + path;
        } catch (IllegalArgumentException e) {
            return url.trim();
        }
    }
}
