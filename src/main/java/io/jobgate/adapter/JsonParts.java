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
 * <li>{@link #decoded}: for the property {@code decoded.<name>} holding a JSON Pointer, the reply's base64 string
 *     there decoded as it streams in (the body read once, as a stream: the HTTP endpoint's
 *     {@code disableStreamCache=true}), into the property {@code <name>} as {@link OutputBytes}, in memory within
 *     the answers' budget or in a file beyond it; nothing set where the reply has none. One per reply;</li>
 * <li>{@link #retryDelay}: a {@code google.protobuf.Duration} in its JSON form ({@code "22s"}, {@code "1.5s"}), as
 *     Google APIs' {@code google.rpc.RetryInfo.retryDelay} sends it, from the property {@code retryDelay} (a string
 *     or a JSON path's matches, the first taken), as the contract's {@code JobgateRetryAfter}: whole seconds as
 *     delta-seconds, a fraction as milliseconds rounded up ({@code 1500ms}); nothing set when unreadable.</li>
 * </ul>
 */
public final class JsonParts {

    /** What {@link #decoded} outputs count against (the worker's answers in memory). */
    private final OutputBytes.Budget budget;

    public JsonParts() {
        this(OutputBytes.UNLIMITED);
    }

    public JsonParts(OutputBytes.Budget budget) {
        this.budget = budget;
    }

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
     * The reply's base64 string at the pointer of the one property {@code decoded.<name>}, decoded into {@code <name>}
     * as {@link OutputBytes} while the body streams in: neither the reply nor its text is ever held whole. The output
     * counts against the budget until its answer's holder discards it (the worker, when its exchange is done: the
     * adapter's own exchange ends before the answer is finished); the body is closed right after, which reads an HTTP reply to its end: its connection goes back to the pool at once.
     */
    public void decoded(Exchange exchange) throws java.io.IOException {
        Map<String, Object> pointers = prefixed(exchange, "decoded.");
        pointers.values().removeIf(java.util.Objects::isNull);
        if (pointers.isEmpty()) {
            return;
        }
        if (pointers.size() > 1) {
            throw new IllegalArgumentException("one decoded.<name> per reply (its body is read once): " + pointers.keySet());
        }
        Map.Entry<String, Object> pointer = pointers.entrySet().iterator().next();
        java.io.InputStream body = exchange.getMessage().getBody(java.io.InputStream.class);
        if (body == null) {
            return;
        }
        long length = exchange.getMessage().getHeader("Content-Length", 0L, Long.class);
        HeadKept reply = new HeadKept(body, AdapterResult.EXCERPT_CHARS * 4);
        try (reply) {
            OutputBytes output = decode(reply, com.fasterxml.jackson.core.JsonPointer.compile(pointer.getValue().toString()),
                    budget, length / 4 * 3);
            if (output != null) {
                exchange.setProperty(pointer.getKey(), output);
            }
        } catch (java.io.IOException | RuntimeException e) {
            exchange.getMessage().setBody(reply.head()); // an unreadable reply's start, for the operator's excerpt
            throw e;
        }
        exchange.getMessage().setBody(new byte[0]);
    }

    /** A reply read through, its first bytes kept on the way. */
    private static final class HeadKept extends java.io.FilterInputStream {
        private final byte[] head;
        private int kept;

        HeadKept(java.io.InputStream in, int bytes) {
            super(in);
            this.head = new byte[bytes];
        }

        @Override
        public int read() throws java.io.IOException {
            int b = super.read();
            if (b >= 0 && kept < head.length) {
                head[kept++] = (byte) b;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws java.io.IOException {
            int n = super.read(b, off, len);
            if (n > 0 && kept < head.length) {
                int keep = Math.min(n, head.length - kept);
                System.arraycopy(b, off, head, kept, keep);
                kept += keep;
            }
            return n;
        }

        byte[] head() {
            return java.util.Arrays.copyOf(head, kept);
        }
    }

    /**
     * The base64 string at {@code pointer} in the JSON on {@code in}, decoded into {@link OutputBytes} counted against
     * {@code budget}; null when the reply has none there (or a JSON null). Reads up to the end of that value only.
     *
     * @throws java.io.IOException not JSON, not base64 there, or the reply broke off (nothing is kept)
     */
    static OutputBytes decode(java.io.InputStream in, com.fasterxml.jackson.core.JsonPointer pointer, OutputBytes.Budget budget,
                              long expected) throws java.io.IOException {
        try (com.fasterxml.jackson.core.JsonParser parser = new com.fasterxml.jackson.core.filter.FilteringParserDelegate(
                Json.MAPPER.getFactory().createParser(in), new com.fasterxml.jackson.core.filter.JsonPointerBasedFilter(pointer),
                com.fasterxml.jackson.core.filter.TokenFilter.Inclusion.ONLY_INCLUDE_ALL, false)) {
            com.fasterxml.jackson.core.JsonToken token = parser.nextToken();
            if (token == null || token == com.fasterxml.jackson.core.JsonToken.VALUE_NULL) {
                return null;
            }
            if (token != com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
                throw new com.fasterxml.jackson.core.JsonParseException(parser, "not a base64 string at " + pointer + " but " + token);
            }
            OutputBytes.Sink sink = new OutputBytes.Sink(budget, expected);
            try {
                parser.readBinaryValue(BASE64, sink);
                sink.close();
            } catch (IllegalArgumentException e) {
                sink.abandon();
                throw new java.io.IOException("the reply's value at " + pointer + " is not base64: " + e.getMessage(), e);
            } catch (java.io.IOException | RuntimeException e) {
                sink.abandon();
                throw e;
            }
            return sink.output();
        }
    }

    /** Standard base64, padded or not (what providers send: no line feeds, which JSON would escape anyway). */
    private static final com.fasterxml.jackson.core.Base64Variant BASE64 = com.fasterxml.jackson.core.Base64Variants.MIME_NO_LINEFEEDS
            .withReadPadding(com.fasterxml.jackson.core.Base64Variant.PaddingReadBehaviour.PADDING_ALLOWED);

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
