package io.jobgate.common;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A refusal with a stable code, rendered as RFC 9457 problem details. Thrown by the rules; the
 * route configuration {@code api-errors} turns it into the HTTP answer, the JMS door into a reply.
 */
public final class ApiProblem extends RuntimeException {

    private final int status;
    private final String code;
    private final Map<String, Object> members = new LinkedHashMap<>();
    private final Map<String, String> headers = new LinkedHashMap<>();

    private ApiProblem(int status, String code, String detail) {
        super(detail, null, false, false); // no stack trace: a refusal is not a fault
        this.status = status;
        this.code = code;
    }

    public static ApiProblem of(int status, String code, String detail) {
        return new ApiProblem(status, code, detail);
    }

    public static ApiProblem unauthorized(String detail) {
        return of(401, "unauthorized", detail).withHeader("WWW-Authenticate", "Bearer realm=\"jobgate\"");
    }

    public static ApiProblem invalidInput(String field, String detail) {
        return of(422, "invalid_input", detail).with("field", field);
    }

    public static ApiProblem tooManyRequests(String code, String detail, long retryAfterSeconds) {
        return of(429, code, detail).withHeader("Retry-After", Long.toString(retryAfterSeconds));
    }

    /** Adds a member to the problem document (e.g. the offending {@code field}). */
    /** RFC 9457's own members and ours: an extension member must not shadow them. */
    private static final java.util.Set<String> RESERVED = java.util.Set.of("type", "title", "status", "detail", "instance", "code");

    public ApiProblem with(String name, Object value) {
        if (RESERVED.contains(name)) {
            throw new IllegalArgumentException("'" + name + "' is a problem document's own member");
        }
        members.put(name, value);
        return this;
    }

    public ApiProblem withHeader(String name, String value) {
        headers.put(name, value);
        return this;
    }

    public int status() {
        return status;
    }

    public String code() {
        return code;
    }

    public Map<String, Object> members() {
        return members;
    }

    public Map<String, String> headers() {
        return headers;
    }
}
