package io.jobgate.provider;

import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.common.Digests;

/**
 * What a provider's adapter route file is, as far as its revision goes: the file's digest and the
 * provider settings it reads ({@code {{jobgate.provider.<name>.<key>}}} placeholders). The settings a
 * route reads are the ones that shape its requests, so they are found there rather than listed by hand.
 *
 * @param digest      SHA-256 of the route file's text, or {@code unknown} when the route has no file
 * @param settingKeys the short keys of its provider's settings the file reads
 */
public record AdapterSource(String digest, Set<String> settingKeys) {

    /** A provider whose route has no readable file (or no route): its settings alone make the revision. */
    public static final AdapterSource UNKNOWN = new AdapterSource("unknown", null);

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{jobgate\\.provider\\.([A-Za-z0-9_-]+)\\.([A-Za-z0-9._-]+?)(?::[^}]*)?}}");

    /** The source of {@code provider}'s adapter from its route file's text. */
    public static AdapterSource of(String provider, String routeText) {
        java.util.TreeSet<String> keys = new java.util.TreeSet<>();
        Matcher m = PLACEHOLDER.matcher(routeText);
        while (m.find()) {
            if (m.group(1).equals(provider)) {
                keys.add(m.group(2));
            }
        }
        return new AdapterSource(Digests.sha256Hex(routeText), Set.copyOf(keys));
    }
}
