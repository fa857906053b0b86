package io.jobgate.reconcile;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.X509EncodedKeySpec;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Digests;
import io.jobgate.common.Json;

/**
 * fal's webhook signatures: ED25519 over {@code request_id \n user_id \n timestamp \n hex(sha256(body))},
 * sent hex-encoded in {@code X-Fal-Webhook-Signature}, verified with any key of fal's JWKS
 * ({@code webhook-jwks-url}; OKP/Ed25519 keys, cached for a day, fetched again when none verifies).
 */
public final class FalWebhookSignature {

    public static final String REQUEST_ID = "X-Fal-Webhook-Request-Id";
    public static final String USER_ID = "X-Fal-Webhook-User-Id";
    public static final String TIMESTAMP = "X-Fal-Webhook-Timestamp";
    public static final String SIGNATURE = "X-Fal-Webhook-Signature";

    private static final Duration KEYS_KEPT = Duration.ofHours(24);
    /** An X.509 SubjectPublicKeyInfo header for a raw 32-byte Ed25519 key (RFC 8410). */
    private static final byte[] ED25519_SPKI = HexFormat.of().parseHex("302a300506032b6570032100");

    private record Keys(List<PublicKey> keys, Instant fetched) {
    }

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Keys> byUrl = new ConcurrentHashMap<>();
    private final Clock clock;

    public FalWebhookSignature(Clock clock) {
        this.clock = clock;
    }

    /** @return empty when valid, else why not */
    public Optional<String> verify(String jwksUrl, Map<String, String> headers, byte[] body, Duration tolerance) {
        String requestId = headers.get(REQUEST_ID);
        String userId = headers.get(USER_ID);
        String timestamp = headers.get(TIMESTAMP);
        String signature = headers.get(SIGNATURE);
        if (requestId == null || userId == null || timestamp == null || signature == null) {
            return Optional.of("X-Fal-Webhook-Request-Id, -User-Id, -Timestamp and -Signature headers are required");
        }
        long sent;
        try {
            sent = Long.parseLong(timestamp.trim());
        } catch (NumberFormatException e) {
            return Optional.of("X-Fal-Webhook-Timestamp is not unix seconds");
        }
        if (Math.abs(clock.instant().getEpochSecond() - sent) > tolerance.toSeconds()) {
            return Optional.of("X-Fal-Webhook-Timestamp is outside the " + tolerance.toSeconds() + " s tolerance");
        }
        byte[] given;
        try {
            given = HexFormat.of().parseHex(signature.trim());
        } catch (IllegalArgumentException e) {
            return Optional.of("X-Fal-Webhook-Signature is not hex");
        }
        byte[] message = message(requestId, userId, timestamp.trim(), body);
        if (anyVerifies(keys(jwksUrl, false), message, given) || anyVerifies(keys(jwksUrl, true), message, given)) {
            return Optional.empty();
        }
        return Optional.of("no key of the provider's JWKS verifies the signature");
    }

    /** What fal signs (and a test signs the same way). */
    public static byte[] message(String requestId, String userId, String timestamp, byte[] body) {
        return (requestId + "\n" + userId + "\n" + timestamp + "\n" + Digests.sha256Hex(body)).getBytes(StandardCharsets.UTF_8);
    }

    private static boolean anyVerifies(List<PublicKey> keys, byte[] message, byte[] signature) {
        for (PublicKey key : keys) {
            try {
                Signature v = Signature.getInstance("Ed25519");
                v.initVerify(key);
                v.update(message);
                if (v.verify(signature)) {
                    return true;
                }
            } catch (GeneralSecurityException e) {
                // a malformed signature for this key: try the next
            }
        }
        return false;
    }

    private List<PublicKey> keys(String url, boolean refresh) {
        Keys cached = byUrl.get(url);
        boolean fresh = cached != null && cached.fetched().plus(KEYS_KEPT).isAfter(clock.instant());
        if (fresh && !refresh) {
            return cached.keys();
        }
        if (refresh && cached != null && cached.fetched().plusSeconds(10).isAfter(clock.instant())) {
            return List.of(); // fetched moments ago: a bad signature does not make us hammer the JWKS
        }
        try {
            HttpResponse<byte[]> reply = http.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
                    HttpResponse.BodyHandlers.ofByteArray());
            if (reply.statusCode() != 200) {
                return cached == null ? List.of() : cached.keys();
            }
            List<PublicKey> keys = parse(Json.MAPPER.readTree(reply.body()));
            byUrl.put(url, new Keys(keys, clock.instant()));
            return keys;
        } catch (IOException e) {
            return cached == null ? List.of() : cached.keys();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of();
        }
    }

    static List<PublicKey> parse(JsonNode jwks) {
        List<PublicKey> keys = new ArrayList<>();
        for (JsonNode key : jwks.path("keys")) {
            if (!"OKP".equals(key.path("kty").asText()) || !"Ed25519".equals(key.path("crv").asText())) {
                continue;
            }
            try {
                byte[] raw = Base64.getUrlDecoder().decode(key.path("x").asText());
                byte[] spki = new byte[ED25519_SPKI.length + raw.length];
                System.arraycopy(ED25519_SPKI, 0, spki, 0, ED25519_SPKI.length);
                System.arraycopy(raw, 0, spki, ED25519_SPKI.length, raw.length);
                keys.add(KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki)));
            } catch (IllegalArgumentException | GeneralSecurityException e) {
                // not a usable key
            }
        }
        return keys;
    }
}
