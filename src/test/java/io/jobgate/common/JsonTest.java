package io.jobgate.common;

import java.nio.charset.StandardCharsets;
import java.util.List;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The canonical form behind request fingerprints must not change: a replay of a key admitted before
 * an upgrade is told from a reused key by comparing digests. The tree is now written with its members
 * sorted as they go out; it must give the bytes of the former way (a copy into sorted Maps).
 */
class JsonTest {

    /** How canonical JSON was made before (the reference the stored digests come from). */
    private static final ObjectMapper FORMER = JsonMapper.builder()
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .build();

    private static String former(String body) throws Exception {
        return FORMER.writeValueAsString(FORMER.treeToValue(Json.parseObject(body.getBytes(StandardCharsets.UTF_8)), Object.class));
    }

    @Test
    void canonicalFormIsTheFormerOne() throws Exception {
        List<String> bodies = List.of(
                "{\"preset_id\": \"invoice-clean\", \"aspect_class\": \"portrait\", \"inputs\": {\"supplier_name\": \"Bench GmbH\","
                        + " \"invoice_id\": \"B-1\", \"currency\": \"EUR\", \"line_items\": [{\"description\": \"Load\", \"quantity\": 1,"
                        + " \"unit_price\": 10}]}}",
                "{\"b\": 1, \"a\": {\"z\": [3, 2, {\"y\": null, \"x\": true}], \"Z\": false, \"\": \"empty\", \"_\": \"u\"}}",
                "{\"n\": [0, -0, 1.0, 1.50, -2.25e3, 1e-7, 12345678901234567890, 3.14159265358979323846264338327950288, 1E+2,"
                        + " 9223372036854775807, -9223372036854775808, 2147483648, 0.000]}",
                "{\"s\": \"quote \\\" backslash \\\\ slash / tab \\t nl \\n ctl \\u0001 uml \u00e4 \u20ac emoji \ud83d\ude00 <>&'\"}",
                "{\"\u00e9\": 1, \"e\": 2, \"E\": 3, \"\u00c9\": 4, \"10\": 5, \"9\": 6, \"a b\": {}, \"arr\": [], \"nested\": [[[]], [{}]]}",
                "{}");
        for (String body : bodies) {
            assertThat(Json.canonical(Json.parseObject(body.getBytes(StandardCharsets.UTF_8)))).as(body).isEqualTo(former(body));
        }
    }

    @Test
    void memberOrderDoesNotChangeTheCanonicalForm() {
        assertThat(Json.canonical(Json.parseObject("{\"a\": 1, \"b\": {\"d\": 2, \"c\": [1, 2]}}".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(Json.canonical(Json.parseObject("{\"b\": {\"c\": [1, 2], \"d\": 2}, \"a\": 1}".getBytes(StandardCharsets.UTF_8))))
                .isEqualTo("{\"a\":1,\"b\":{\"c\":[1,2],\"d\":2}}");
    }
}
