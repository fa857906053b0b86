package io.jobgate.adapter;

import io.jobgate.job.ErrorCategory;
import io.jobgate.provider.ProviderErrors;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

import org.apache.camel.Exchange;
import org.apache.camel.component.direct.DirectConsumerNotAvailableException;

/**
 * What one adapter call came back with, read from the adapter's exchange (see {@link AdapterContract}).
 *
 * @param outcome  {@code succeeded}, {@code pending}, or null when {@code category} says what failed
 * @param excerpt  the start of the reply body for an operator (error outcomes only), at most 2 KiB
 * @param billedAmount what the provider billed, when it sent a readable number; {@code billedUnit} names
 *                     its unit ({@code units} when the adapter named none)
 * @param providerState the adapter's own record of its task ({@link AdapterContract#PROVIDER_STATE}), or null
 * @param outputBytes the output already decoded ({@link AdapterContract#OUTPUT_BYTES}), or null
 */
public record AdapterResult(String outcome, ErrorCategory category, Integer httpStatus, String retryAfter,
                            String providerRequestId, String providerTask, String outputUrl, String outputBase64,
                            OutputBytes outputBytes, String outputText, String outputMediaType, String message, String excerpt,
                            BigDecimal billedAmount, String billedUnit, boolean declared, String providerState) {

    static final int EXCERPT_CHARS = 2048;

    public boolean succeeded() {
        return AdapterContract.SUCCEEDED.equals(outcome);
    }

    public boolean pending() {
        return AdapterContract.PENDING.equals(outcome);
    }

    public boolean absent() {
        return AdapterContract.ABSENT.equals(outcome);
    }

    /** A webhook said the task is done without carrying its result: ask the lookup now. */
    public boolean fetch() {
        return AdapterContract.FETCH.equals(outcome);
    }

    /**
     * The same answer without what the adapter read from a state it was given for another job than the one
     * its task turned out to be (a webhook whose URL named the wrong job): its billing and that state.
     */
    public AdapterResult withoutGivenState() {
        return new AdapterResult(outcome, category, httpStatus, retryAfter, providerRequestId, providerTask, outputUrl, outputBase64,
                outputBytes, outputText, outputMediaType, message, excerpt, null, null, declared, null);
    }

    /** The same answer with these outputs (an output set aside on disk while the answer waits, and taken back). */
    public AdapterResult withOutputs(String base64, String text) {
        return new AdapterResult(outcome, category, httpStatus, retryAfter, providerRequestId, providerTask, outputUrl, base64,
                outputBytes, text, outputMediaType, message, excerpt, billedAmount, billedUnit, declared, providerState);
    }

    /** A call that never reached an adapter or ended in an exception, classified by where it broke. */
    public static AdapterResult ofException(Throwable failure) {
        ErrorCategory category = sentBeforeFailing(failure) ? ErrorCategory.AMBIGUOUS : ErrorCategory.TRANSIENT;
        if (category == ErrorCategory.AMBIGUOUS && !(rootOf(failure) instanceof IOException)) {
            category = ErrorCategory.UNPARSEABLE_RESPONSE; // the adapter itself failed on the reply
        }
        Throwable root = rootOf(failure);
        String message = root.getClass().getSimpleName() + (root.getMessage() == null ? "" : ": " + root.getMessage());
        return new AdapterResult(null, category, null, null, null, null, null, null, null, null, null, truncate(message, 500),
                null, null, null, false, null);
    }

    public static AdapterResult deadlinePassed(long millis) {
        return new AdapterResult(null, ErrorCategory.AMBIGUOUS, null, null, null, null, null, null, null, null, null,
                "no answer within the call deadline of " + millis + " ms", null, null, null, false, null);
    }

    /** Reads the outcome properties an adapter set, falling back on the reply's status and headers. */
    public static AdapterResult of(Exchange call) {
        return of(call, ProviderErrors.NONE);
    }

    /**
     * Reads the outcome properties an adapter set; a reply it set none for is classified by the
     * provider's error table (status and body code), then by its status alone.
     */
    public static AdapterResult of(Exchange call, ProviderErrors errors) {
        Integer replied = call.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class);
        Throwable failure = call.getException();
        if (failure != null && replied != null) {
            // A reply arrived and the adapter failed on it: unreadable, whatever the exception says.
            Throwable root = rootOf(failure);
            return new AdapterResult(null, ErrorCategory.UNPARSEABLE_RESPONSE, replied, null, null, null, null, null, null,
                    null, null, truncate("adapter could not read the reply: " + root.getClass().getSimpleName(), 500),
                    excerpt(call), null, null, false, null);
        }
        if (failure != null) {
            return ofException(failure);
        }
        Integer status = Optional.ofNullable(call.getProperty(AdapterContract.HTTP_STATUS, Integer.class))
                .orElse(call.getMessage().getHeader(Exchange.HTTP_RESPONSE_CODE, Integer.class));
        // The adapter's word, else the reply's: retry-after-ms (Azure OpenAI, milliseconds) before Retry-After.
        String retryAfter = Optional.ofNullable(call.getProperty(AdapterContract.RETRY_AFTER, String.class))
                .orElseGet(() -> RetryAfter.fromReply(call.getMessage().getHeader(RetryAfter.MILLIS_HEADER, String.class),
                        call.getMessage().getHeader("Retry-After", String.class)));
        String requestId = Optional.ofNullable(call.getProperty(AdapterContract.PROVIDER_REQUEST_ID, String.class))
                .or(() -> Optional.ofNullable(call.getMessage().getHeader("x-request-id", String.class)))
                .orElse(call.getMessage().getHeader("request-id", String.class));
        String declared = call.getProperty(AdapterContract.OUTCOME, String.class);
        String outcome = null;
        ErrorCategory category = null;
        if (AdapterContract.SUCCEEDED.equals(declared) || AdapterContract.PENDING.equals(declared)
                || AdapterContract.ABSENT.equals(declared) || AdapterContract.FETCH.equals(declared)) {
            outcome = declared;
        } else if (declared != null) {
            category = ErrorCategory.fromWire(declared).orElse(ErrorCategory.UNPARSEABLE_RESPONSE);
        } else {
            category = status == null ? ErrorCategory.UNPARSEABLE_RESPONSE : ErrorCategory.ofHttpStatus(status);
        }
        String message = call.getProperty(AdapterContract.ERROR_MESSAGE, String.class);
        String excerpt = category == null ? null : excerpt(call);
        if (declared == null && status != null && status >= 400) {
            Optional<ProviderErrors.Verdict> verdict = errors.classify(
                    call.getProperty(AdapterContract.PROVIDER, "provider", String.class), status, excerpt);
            if (verdict.isPresent()) {
                category = verdict.get().category();
                message = message != null ? message : verdict.get().message();
            }
        }
        if (category != null && message == null) {
            message = declared != null && ErrorCategory.fromWire(declared).isEmpty()
                    ? "adapter named an unknown outcome '" + truncate(declared, 40) + "'"
                    : status != null ? "provider answered HTTP " + status : "adapter set no outcome";
        }
        BigDecimal amount = amount(call);
        AdapterResult result = new AdapterResult(outcome, category, status, retryAfter, requestId,
                call.getProperty(AdapterContract.PROVIDER_TASK, String.class),
                call.getProperty(AdapterContract.OUTPUT_URL, String.class),
                call.getProperty(AdapterContract.OUTPUT_BASE64, String.class),
                outputBytes(call),
                call.getProperty(AdapterContract.OUTPUT_TEXT, String.class),
                call.getProperty(AdapterContract.OUTPUT_MEDIA_TYPE, String.class),
                message == null ? null : truncate(message, 500),
                excerpt, amount, amount == null ? null : unit(call), declared != null, state(call));
        if (result.succeeded() && result.outputUrl() == null && result.outputBase64() == null && result.outputBytes() == null
                && result.outputText() == null) {
            return result.failedAs(ErrorCategory.UNPARSEABLE_RESPONSE, "adapter reported success without an output");
        }
        return result;
    }

    public AdapterResult failedAs(ErrorCategory newCategory, String newMessage) {
        return new AdapterResult(null, newCategory, httpStatus, retryAfter, providerRequestId, providerTask, null, null,
                null, null, null, truncate(newMessage, 500), excerpt, billedAmount, billedUnit, declared, providerState);
    }

    /** Was the request (possibly) on the wire when it broke? Refused or unresolved connections were not. */
    static boolean sentBeforeFailing(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof DirectConsumerNotAvailableException || t instanceof ConnectException
                    || t instanceof UnknownHostException || t instanceof NoRouteToHostException
                    || t.getClass().getSimpleName().equals("ConnectTimeoutException")) {
                return false;
            }
            if (t instanceof SocketTimeoutException) {
                return true;
            }
        }
        return true;
    }

    private static Throwable rootOf(Throwable failure) {
        Throwable t = failure;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    private static String excerpt(Exchange call) {
        Object body = call.getMessage().getBody();
        if (body == null) {
            return null;
        }
        String text;
        try {
            if (body instanceof InputStream in) {
                text = new String(in.readNBytes(EXCERPT_CHARS * 4), StandardCharsets.UTF_8);
            } else if (body instanceof byte[] bytes) {
                text = new String(bytes, 0, Math.min(bytes.length, EXCERPT_CHARS * 4), StandardCharsets.UTF_8);
            } else {
                text = call.getMessage().getBody(String.class);
            }
        } catch (IOException e) {
            return null;
        }
        // Credentials a provider echoes back are masked before the head is stored for operators.
        return text == null ? null : truncate(io.jobgate.common.SecretMask.mask(text), EXCERPT_CHARS);
    }

    /** The decoded output: as {@link JsonParts#decoded} leaves it, or bytes an adapter's own bean set. */
    private static OutputBytes outputBytes(Exchange call) {
        Object bytes = call.getProperty(AdapterContract.OUTPUT_BYTES);
        return bytes instanceof byte[] array ? OutputBytes.of(array) : (OutputBytes) bytes;
    }

    private static BigDecimal amount(Exchange call) {
        String amount = call.getProperty(AdapterContract.BILLED_UNITS, String.class);
        try {
            return amount == null ? null : new BigDecimal(amount.trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The adapter's record of its task; one too long to keep is not kept (its lookups then build what they need). */
    private static String state(Exchange call) {
        String state = call.getProperty(AdapterContract.PROVIDER_STATE, String.class);
        return state == null || state.isBlank() || state.length() > AdapterContract.MAX_PROVIDER_STATE ? null : state;
    }

    private static String unit(Exchange call) {
        String unit = call.getProperty(AdapterContract.BILLED_UNIT, String.class);
        return unit == null || unit.isBlank() ? "units" : unit.trim();
    }

    public static String truncate(String text, int chars) {
        return text.length() <= chars ? text : text.substring(0, chars);
    }
}
