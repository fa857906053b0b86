package io.jobgate.common;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** SHA-256 as lower-case hex: object keys, API key digests, request fingerprints. */
public final class Digests {

    private Digests() {
    }

    public static String sha256Hex(byte[] bytes) {
        return HexFormat.of().formatHex(sha256().digest(bytes));
    }

    public static String sha256Hex(String text) {
        return sha256Hex(text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Does {@code secret} hash to {@code sha256Hex} (the stored digest of a key)? Compared in constant time; a missing
     * secret or digest never matches.
     */
    public static boolean sha256Matches(String secret, String sha256Hex) {
        return secret != null && sha256Hex != null && MessageDigest.isEqual(sha256Hex(secret).getBytes(StandardCharsets.US_ASCII),
                sha256Hex.getBytes(StandardCharsets.US_ASCII));
    }

    /** Copied per digest: a clone skips the security providers' lookup that getInstance does (twice per admission). */
    private static final MessageDigest SHA_256;

    static {
        try {
            SHA_256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static MessageDigest sha256() {
        try {
            return (MessageDigest) SHA_256.clone();
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
    }
}
