package io.jobgate.common;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Optional;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Standard Webhooks signatures (the scheme Replicate uses): HMAC-SHA256 over
 * {@code <webhook-id>.<webhook-timestamp>.<raw body>} with the provider's secret
 * ({@code whsec_<base64>}), sent as {@code webhook-signature: v1,<base64> [v1,<base64> ...]}.
 */
public final class WebhookSignature {

    private WebhookSignature() {
    }

    /** @return empty when valid, else why not (for the 401's detail; never echoes the secret) */
    public static Optional<String> verify(String secret, String id, String timestamp, String signatures, byte[] body,
                                          Instant now, Duration tolerance) {
        if (id == null || id.isBlank() || timestamp == null || signatures == null) {
            return Optional.of("webhook-id, webhook-timestamp and webhook-signature headers are required");
        }
        long sent;
        try {
            sent = Long.parseLong(timestamp.trim());
        } catch (NumberFormatException e) {
            return Optional.of("webhook-timestamp is not unix seconds");
        }
        if (Math.abs(now.getEpochSecond() - sent) > tolerance.toSeconds()) {
            return Optional.of("webhook-timestamp is outside the " + tolerance.toSeconds() + " s tolerance");
        }
        byte[] expected = sign(secret, id, timestamp.trim(), body);
        for (String entry : signatures.trim().split("\\s+")) {
            int comma = entry.indexOf(',');
            if (comma > 0 && entry.substring(0, comma).equals("v1")) {
                try {
                    byte[] given = Base64.getDecoder().decode(entry.substring(comma + 1));
                    if (MessageDigest.isEqual(expected, given)) {
                        return Optional.empty();
                    }
                } catch (IllegalArgumentException e) {
                    // not base64: not a match
                }
            }
        }
        return Optional.of("no v1 signature matches");
    }

    /** The raw HMAC of a message (also what a provider, or a test, sends base64-encoded after {@code v1,}). */
    public static byte[] sign(String secret, String id, String timestamp, byte[] body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key(secret), "HmacSHA256"));
            mac.update((id + "." + timestamp + ".").getBytes(StandardCharsets.UTF_8));
            return mac.doFinal(body);
        } catch (java.security.GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 unavailable", e);
        }
    }

    /**
     * The {@code webhook-signature} header a sender puts on a message: one {@code v1,} entry per secret,
     * space-separated (during a rotation, by the new secret and the old, so either verifies).
     */
    public static String header(java.util.List<String> secrets, String id, long timestamp, byte[] body) {
        StringBuilder header = new StringBuilder();
        for (String secret : secrets) {
            header.append(header.isEmpty() ? "" : " ").append("v1,")
                    .append(Base64.getEncoder().encodeToString(sign(secret, id, Long.toString(timestamp), body)));
        }
        return header.toString();
    }

    private static byte[] key(String secret) {
        String s = secret.trim();
        return Base64.getDecoder().decode(s.startsWith("whsec_") ? s.substring("whsec_".length()) : s);
    }
}
