package io.jobgate.job;

import java.util.Arrays;
import java.util.Optional;

/**
 * Stable error categories (logged, counted, stored on attempts and failed jobs) and what the
 * worker does with each when an adapter reports it.
 */
public enum ErrorCategory {
    /** 4xx other than 429: the request itself is wrong. Never retried. */
    TERMINAL_REQUEST(Handling.FAIL),
    /** 401/403: credentials refused. Never retried. */
    AUTH(Handling.FAIL),
    /** The provider cannot do this one (content policy, duplicate). Never retried. */
    DECLINED(Handling.FAIL),
    /** 429: Retry-After is the minimum delay, and the provider's gate closes until then. */
    RATE_LIMITED(Handling.RETRY),
    /** 5xx, capacity, connection refused: retried after capped exponential backoff with jitter. */
    TRANSIENT(Handling.RETRY),
    /** Timeout or broken connection after the request was sent: never blindly resubmitted. */
    AMBIGUOUS(Handling.UNKNOWN),
    /** A reply the adapter could not read: retried, but fails after two in a row. */
    UNPARSEABLE_RESPONSE(Handling.RETRY),
    /** Wrong media type or size of an output. */
    INVALID_OUTPUT(Handling.FAIL),
    /** The stored request no longer validates (preset version gone, source upload changed). */
    INVALID_REQUEST(Handling.FAIL),
    EXHAUSTED(Handling.FAIL),
    EXPIRED(Handling.FAIL),
    DEAD_LETTERED(Handling.FAIL),
    CANCELLED(Handling.FAIL);

    /** What follows an attempt that ended in a category. */
    public enum Handling {
        FAIL, RETRY, UNKNOWN
    }

    private final Handling handling;

    ErrorCategory(Handling handling) {
        this.handling = handling;
    }

    public Handling handling() {
        return handling;
    }

    public String wire() {
        return name().toLowerCase();
    }

    public static Optional<ErrorCategory> fromWire(String value) {
        return Arrays.stream(values()).filter(c -> c.wire().equals(value)).findFirst();
    }

    /** The category of a provider's HTTP status when the adapter named none. */
    public static ErrorCategory ofHttpStatus(int status) {
        if (status == 429) {
            return RATE_LIMITED;
        }
        if (status == 401 || status == 403) {
            return AUTH;
        }
        if (status == 408 || status == 425 || status >= 500) {
            return TRANSIENT; // the server says it did not process the request (408/425) or failed itself
        }
        if (status >= 400) {
            return TERMINAL_REQUEST;
        }
        return UNPARSEABLE_RESPONSE; // a 1xx/2xx/3xx the adapter did not turn into an outcome
    }
}
