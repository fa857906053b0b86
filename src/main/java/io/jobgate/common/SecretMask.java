package io.jobgate.common;

import java.util.regex.Pattern;

/**
 * Masks what looks like a credential in text kept for operators (the stored head of a provider's
 * error reply): a provider may echo a key or token back, and none may be stored or shown.
 */
public final class SecretMask {

    private static final String MASK = "[redacted]";
    private static final Pattern BEARER = Pattern.compile("(?i)\\b(bearer|basic|token)\\s+[A-Za-z0-9._~+/=-]{6,}");
    private static final Pattern KEY_LIKE = Pattern.compile("\\b(sk|pk|rk|r8|key|sess)[-_][A-Za-z0-9_*-]{6,}");
    private static final Pattern JSON_FIELD = Pattern.compile(
            "(?i)(\"[a-z_-]*(?:api[_-]?key|secret|token|password|authorization|signature)[a-z_-]*\"\\s*:\\s*)\"[^\"]*\"");

    private SecretMask() {
    }

    public static String mask(String text) {
        if (text == null) {
            return null;
        }
        String masked = JSON_FIELD.matcher(text).replaceAll("$1\"" + MASK + "\"");
        masked = BEARER.matcher(masked).replaceAll("$1 " + MASK);
        return KEY_LIKE.matcher(masked).replaceAll(MASK);
    }
}
