package io.jobgate.admission;

import io.jobgate.common.ApiProblem;

/** The Idempotency-Key rules (draft-ietf-httpapi-idempotency-key-header): required, printable, bounded. */
public final class IdempotencyKeys {

    static final int MAX_LENGTH = 255;

    /** The keys of the jobs the gateway orders itself (a transcription's summary): never a client's. */
    public static final String RESERVED_PREFIX = "jobgate:";

    private IdempotencyKeys() {
    }

    static void check(String key) {
        if (key == null || key.isBlank()) {
            throw ApiProblem.of(400, "missing_idempotency_key",
                    "Send an Idempotency-Key header (for example a UUID) so a retry never makes a second job.");
        }
        if (key.length() > MAX_LENGTH || !printableAscii(key)) {
            throw ApiProblem.of(400, "invalid_idempotency_key",
                    "The Idempotency-Key must be 1 to " + MAX_LENGTH + " printable ASCII characters.");
        }
        if (key.startsWith(RESERVED_PREFIX)) {
            throw ApiProblem.of(400, "invalid_idempotency_key",
                    "Idempotency-Keys beginning with '" + RESERVED_PREFIX + "' are the gateway's own; choose another.");
        }
    }

    /** A plain loop: once per admission, where {@code chars().allMatch} built a stream and a lambda. */
    private static boolean printableAscii(String key) {
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < 0x20 || c >= 0x7F) {
                return false;
            }
        }
        return true;
    }
}
