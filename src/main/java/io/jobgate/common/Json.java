package io.jobgate.common;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;

/** One configured Jackson mapper for the whole gateway. */
public final class Json {

    public static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_READING_DUP_TREE_KEY)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .build();

    /**
     * Sorted keys: the same logical document always gives the same bytes (request digests). A tree
     * is written as it is, its members sorted as they go out (the bytes a copy into sorted Maps gave,
     * which stored digests were made with; JsonTest compares the two), without that copy.
     */
    private static final ObjectMapper CANONICAL = JsonMapper.builder()
            .enable(JsonNodeFeature.WRITE_PROPERTIES_SORTED)
            .build();

    private Json() {
    }

    public static String write(Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write JSON", e);
        }
    }

    public static String canonical(JsonNode node) {
        try {
            return CANONICAL.writeValueAsString(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write JSON", e);
        }
    }

    /** Parses a request body; anything that is not one JSON object is {@code malformed_json}. */
    public static JsonNode parseObject(byte[] body) {
        if (body == null || body.length == 0) {
            throw ApiProblem.of(400, "malformed_json", "The request body must be a JSON object; it was empty.");
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        } catch (java.io.IOException e) {
            throw ApiProblem.of(400, "malformed_json", "The request body is not valid JSON: " + firstLine(e.getMessage()));
        }
        if (node == null || !node.isObject()) {
            throw ApiProblem.of(400, "malformed_json", "The request body must be a JSON object.");
        }
        return node;
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "parse error";
        }
        int nl = message.indexOf('\n');
        String line = nl < 0 ? message : message.substring(0, nl);
        return line.length() > 200 ? line.substring(0, 200) : line;
    }
}
