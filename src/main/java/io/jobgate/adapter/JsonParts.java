package io.jobgate.adapter;

import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Collectors;

import org.apache.camel.Exchange;

import io.jobgate.common.Json;

/**
 * Adapter helper (bean {@code jsonParts}) for providers whose requests are JSON that carries the job's
 * source inline and free text, which a route's simple expressions cannot write safely:
 * <ul>
 * <li>{@link #sourceBase64}: the source upload's bytes ({@code JobgateSource}) as base64 in the property
 *     {@code JobgateSourceBase64} (absent without a source);</li>
 * <li>{@link #transcript}: a summary job's source, its transcription job's transcript, as its plain text in a JSON
 *     string literal, in {@code JobgateTranscriptJson};</li>
 * <li>{@link #quote}: each property {@code quote.<name>} as a JSON string literal, quotes included, in the
 *     property {@code <name>Json}; a list (a JSON path's matches) is its elements' text joined, null is {@code ""};</li>
 * <li>{@link #field}: for each property {@code field.<name>} holding a JSON Pointer ({@code /data/0/b64_json}),
 *     the reply body's value there as text in the property {@code <name>} (nothing set where the reply has none).
 *     Read from the body's bytes with Jackson's byte parser: for megabytes of base64 (an image), JSONPath's
 *     reader went char by char, three to four times the CPU;</li>
 * <li>{@link #retryDelay}: a {@code google.protobuf.Duration} in its JSON form ({@code "22s"}, {@code "1.5s"}), as
 *     Google APIs' {@code google.rpc.RetryInfo.retryDelay} sends it, from the property {@code retryDelay} (a string
 *     or a JSON path's matches, the first taken), as the contract's {@code JobgateRetryAfter}: whole seconds as
 *     delta-seconds, a fraction as milliseconds rounded up ({@code 1500ms}); nothing set when unreadable.</li>
 * </ul>
 */
public final class JsonParts {

    public static final String SOURCE_BASE64 = "JobgateSourceBase64";

    public void sourceBase64(Exchange exchange) {
        byte[] source = exchange.getProperty(AdapterContract.SOURCE, byte[].class);
        if (source != null) {
            exchange.setProperty(SOURCE_BASE64, Base64.getEncoder().encodeToString(source));
        }
    }

    /** The transcript a summary summarises: its text as a JSON string literal, quotes included. */
    public static final String TRANSCRIPT_JSON = "JobgateTranscriptJson";

    /**
     * A summary job's source is its transcription job's transcript (JSON, as the transcription adapter wrote it):
     * its plain text, as a JSON string literal, in {@code JobgateTranscriptJson} (absent when it has none).
     */
    public void transcript(Exchange exchange) {
        byte[] source = exchange.getProperty(AdapterContract.SOURCE, byte[].class);
        String text = source == null ? null : TranscriptText.of(source);
        if (text != null && !text.isBlank()) {
            exchange.setProperty(TRANSCRIPT_JSON, Json.write(text));
        }
    }

    public void quote(Exchange exchange) {
        prefixed(exchange, "quote.").forEach((name, value) -> exchange.setProperty(name + "Json", Json.write(text(value))));
    }

    /** The exchange's properties named {@code prefix<name>}, by {@code <name>} (a copy: the caller may set properties). */
    private static Map<String, Object> prefixed(Exchange exchange, String prefix) {
        Map<String, Object> found = new HashMap<>();
        exchange.getProperties().forEach((name, value) -> {
            if (name.startsWith(prefix)) {
                found.put(name.substring(prefix.length()), value);
            }
        });
        return found;
    }

    private static String text(Object value) {
        if (value == null) {
            return "";
        }
        if (value instanceof Collection<?> items) {
            return items.stream().filter(java.util.Objects::nonNull).map(Object::toString).collect(Collectors.joining());
        }
        return value.toString();
    }

    public void field(Exchange exchange) throws java.io.IOException {
        Map<String, Object> pointers = prefixed(exchange, "field.");
        pointers.values().removeIf(java.util.Objects::isNull);
        if (pointers.isEmpty()) {
            return;
        }
        byte[] body = exchange.getMessage().getBody(byte[].class);
        if (body == null || body.length == 0) {
            return;
        }
        for (Map.Entry<String, Object> pointer : pointers.entrySet()) {
            String value = valueAt(body, com.fasterxml.jackson.core.JsonPointer.compile(pointer.getValue().toString()));
            if (value != null) {
                exchange.setProperty(pointer.getKey(), value);
            }
        }
    }

    /**
     * The value at {@code pointer} as text (a container as its JSON), null when absent or null. Only that value is
     * read: the parser skips the rest, and a plain string (no escapes: base64 has none) is copied from the bytes
     * in one go, where Jackson's own reading of megabytes of text went byte by byte into growing buffers.
     */
    static String valueAt(byte[] json, com.fasterxml.jackson.core.JsonPointer pointer) throws java.io.IOException {
        try (com.fasterxml.jackson.core.JsonParser parser = new com.fasterxml.jackson.core.filter.FilteringParserDelegate(
                Json.MAPPER.getFactory().createParser(json), new com.fasterxml.jackson.core.filter.JsonPointerBasedFilter(pointer),
                com.fasterxml.jackson.core.filter.TokenFilter.Inclusion.ONLY_INCLUDE_ALL, false)) {
            com.fasterxml.jackson.core.JsonToken token = parser.nextToken();
            if (token == null || token == com.fasterxml.jackson.core.JsonToken.VALUE_NULL) {
                // Nothing there; read to the end all the same, so a reply that is not JSON fails as unreadable.
                while (parser.nextToken() != null) {
                    parser.skipChildren();
                }
                return null;
            }
            if (token == com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
                String plain = plainString(json, (int) parser.currentTokenLocation().getByteOffset());
                return plain != null ? plain : parser.getText();
            }
            if (token.isStructStart()) {
                return Json.MAPPER.readTree(parser).toString();
            }
            return parser.getText();
        }
    }

    /** The string literal whose opening quote is at {@code quote}, if it has no escape; else null. */
    private static String plainString(byte[] json, int quote) {
        if (quote < 0 || quote >= json.length || json[quote] != '"') {
            return null;
        }
        for (int i = quote + 1; i < json.length; i++) {
            byte b = json[i];
            if (b == '"') {
                return new String(json, quote + 1, i - quote - 1, java.nio.charset.StandardCharsets.UTF_8);
            }
            if (b == '\\') {
                return null;
            }
        }
        return null;
    }

    public void retryDelay(Exchange exchange) {
        Object value = exchange.getProperty("retryDelay");
        if (value instanceof Collection<?> items) {
            value = items.stream().filter(java.util.Objects::nonNull).findFirst().orElse(null);
        }
        String retryAfter = value == null ? null : ofDuration(value.toString());
        if (retryAfter != null) {
            exchange.setProperty(AdapterContract.RETRY_AFTER, retryAfter);
        }
    }

    /** {@code "22s"} as {@code 22}, {@code "1.5s"} as {@code 1500ms} (never sooner than asked); null when not a duration. */
    static String ofDuration(String duration) {
        String value = duration.trim();
        if (!value.matches("[0-9]{1,9}(\\.[0-9]{1,9})?s")) {
            return null;
        }
        java.math.BigDecimal seconds = new java.math.BigDecimal(value.substring(0, value.length() - 1));
        if (seconds.stripTrailingZeros().scale() <= 0) {
            return seconds.toBigInteger().toString();
        }
        return seconds.movePointRight(3).setScale(0, java.math.RoundingMode.CEILING).toPlainString() + RetryAfter.MILLIS_SUFFIX;
    }
}
