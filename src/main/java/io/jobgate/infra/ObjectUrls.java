package io.jobgate.infra;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.jobgate.common.Digests;

/**
 * Time-limited URLs of single objects (S3 presigned, signature V4 in the query, path style): who holds one may read, or
 * write, that one key until it expires, and nothing else, without the gateway's credentials and without the gateway on
 * the way. External workers read their source and write their output with them (docs/workers.md).
 *
 * <p>They name {@code jobgate.s3.public-endpoint} when set (where callers outside reach the S3 API; the signature
 * covers the host, so it must be the one they connect to), else the gateway's own endpoint. Signing is local, no
 * request: the AWS documentation's "authenticating requests: using query parameters" (signed header {@code host}, an
 * unsigned payload), computed here rather than by the SDK's presigner, whose request pipeline cost a lease of an
 * external worker more CPU than the rest of its call (the day's signing key is kept; a URL is two HMACs and a hash).
 * {@code ObjectUrlsTest} holds it equal to the SDK's presigner, URL for URL.
 */
public final class ObjectUrls {

    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);
    /** S3's limit on a presigned URL's life. */
    private static final Duration LONGEST = Duration.ofDays(7);

    private final CompletableFuture<URI> endpoint;
    private final String region;
    private final String accessKey;
    private final String secretKey;
    private final Clock clock;
    /** The signing key of one UTC day (date, key): derived once a day, not per URL. */
    private volatile Map.Entry<String, byte[]> dayKey;

    ObjectUrls(CompletableFuture<URI> endpoint, String region, String accessKey, String secretKey) {
        this(endpoint, region, accessKey, secretKey, Clock.systemUTC());
    }

    ObjectUrls(CompletableFuture<URI> endpoint, String region, String accessKey, String secretKey, Clock clock) {
        this.endpoint = endpoint;
        this.region = region;
        this.accessKey = accessKey;
        this.secretKey = secretKey;
        this.clock = clock;
    }

    /** A URL that reads {@code key} of {@code bucket} for {@code valid}. */
    public URI get(String bucket, String key, Duration valid) {
        return presign("GET", bucket, key, valid);
    }

    /** A URL that writes {@code key} of {@code bucket} (any media type: the caller's Content-Type is stored) for {@code valid}. */
    public URI put(String bucket, String key, Duration valid) {
        return presign("PUT", bucket, key, valid);
    }

    private URI presign(String method, String bucket, String key, Duration valid) {
        URI base = endpoint.join();
        Instant now = clock.instant();
        String stamp = STAMP.format(now);
        String date = stamp.substring(0, 8);
        String scope = date + "/" + region + "/s3/aws4_request";
        long seconds = Math.max(1, Math.min(valid.toSeconds(), LONGEST.toSeconds()));
        String host = base.getPort() < 0 || base.getPort() == defaultPort(base.getScheme()) ? base.getHost()
                : base.getHost() + ":" + base.getPort();
        String prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/+$", "");
        String path = prefix + "/" + encode(bucket, false) + "/" + encode(key, true);

        Map<String, String> query = new TreeMap<>(); // the canonical order: by name
        query.put("X-Amz-Algorithm", "AWS4-HMAC-SHA256");
        query.put("X-Amz-Credential", accessKey + "/" + scope);
        query.put("X-Amz-Date", stamp);
        query.put("X-Amz-Expires", Long.toString(seconds));
        query.put("X-Amz-SignedHeaders", "host");
        StringBuilder canonicalQuery = new StringBuilder();
        query.forEach((name, value) -> canonicalQuery.append(canonicalQuery.isEmpty() ? "" : "&").append(encode(name, false))
                .append('=').append(encode(value, false)));
        String canonicalRequest = method + "\n" + path + "\n" + canonicalQuery + "\nhost:" + host + "\n\nhost\nUNSIGNED-PAYLOAD";
        String toSign = "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n" + Digests.sha256Hex(canonicalRequest);
        String signature = HexFormat.of().formatHex(hmac(signingKey(date), toSign));
        return URI.create(base.getScheme() + "://" + host + path + "?" + canonicalQuery + "&X-Amz-Signature=" + signature);
    }

    private byte[] signingKey(String date) {
        Map.Entry<String, byte[]> known = dayKey;
        if (known != null && known.getKey().equals(date)) {
            return known.getValue();
        }
        byte[] key = hmac(hmac(hmac(hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), date), region), "s3"), "aws4_request");
        dayKey = Map.entry(date, key);
        return key;
    }

    private static int defaultPort(String scheme) {
        return "https".equalsIgnoreCase(scheme) ? 443 : 80;
    }

    /** RFC 3986 encoding as SigV4 asks: every byte but the unreserved ones, and {@code /} too unless a key's. */
    static String encode(String text, boolean keepSlash) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xff);
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'
                    || c == '~' || (keepSlash && c == '/')) {
                out.append(c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit((c >> 4) & 0xf, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }

    private static byte[] hmac(byte[] key, String data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }
}
