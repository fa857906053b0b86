package io.jobgate.adapter;

import java.nio.charset.StandardCharsets;

import org.apache.camel.Exchange;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link JsonParts#field}: a reply's values by JSON Pointer, read from its bytes, set as the named properties. */
class JsonPartsFieldTest {

    private final JsonParts parts = new JsonParts();

    @Test
    void eachPointerNamesTheValueItsPropertyGetsAndAMissingOneSetsNothing() throws Exception {
        String base64 = "iVBORw0KGgo".repeat(100_000);
        Exchange exchange = reply("{\"created\": 1, \"data\": [{\"b64_json\": \"" + base64 + "\"}],"
                + " \"usage\": {\"total_tokens\": 1076, \"detail\": {\"a\": 1}}, \"note\": null}");
        exchange.setProperty("field.JobgateOutputBase64", "/data/0/b64_json");
        exchange.setProperty("field.tokens", "/usage/total_tokens");
        exchange.setProperty("field.detail", "/usage/detail");
        exchange.setProperty("field.revised", "/data/0/revised_prompt");
        exchange.setProperty("field.note", "/note");

        parts.field(exchange);

        assertThat(exchange.getProperty("JobgateOutputBase64", String.class)).isEqualTo(base64);
        assertThat(exchange.getProperty("tokens", String.class)).isEqualTo("1076");
        assertThat(exchange.getProperty("detail", String.class)).isEqualTo("{\"a\":1}");
        assertThat(exchange.getProperties()).doesNotContainKeys("revised", "note");
    }

    @Test
    void escapedAndNonAsciiTextReadsAsJsonSaysIt() throws Exception {
        Exchange exchange = reply("{\"data\": [{\"b64_json\": \"ab\\/cd\\u00e9\"}, {\"text\": \"caf\u00e9 \u2014 ok\"}]}");
        exchange.setProperty("field.escaped", "/data/0/b64_json");
        exchange.setProperty("field.plain", "/data/1/text");

        parts.field(exchange);

        assertThat(exchange.getProperty("escaped", String.class)).isEqualTo("ab/cd\u00e9");
        assertThat(exchange.getProperty("plain", String.class)).isEqualTo("caf\u00e9 \u2014 ok");
    }

    @Test
    void aReplyThatIsNotJsonFailsTheAdapterAsUnreadable() {
        Exchange exchange = reply("<html>bad gateway</html>");
        exchange.setProperty("field.JobgateOutputBase64", "/data/0/b64_json");

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> parts.field(exchange))
                .isInstanceOf(java.io.IOException.class);
    }

    private static Exchange reply(String body) {
        Exchange exchange = new DefaultExchange(new DefaultCamelContext());
        exchange.getMessage().setBody(body.getBytes(StandardCharsets.UTF_8));
        return exchange;
    }
}
