package io.jobgate.preset;

import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The server-side prompt of a preset. {@code {{field}}} marks where a declared input goes; each
 * value is wrapped in a delimiter naming the field, with angle brackets in user text escaped so it
 * cannot close its delimiter or open another (OWASP LLM01: keep data apart from instructions).
 */
public final class PromptTemplate {

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\{\\s*([a-z][a-z0-9_]*)\\s*}}");

    private final String text;

    private PromptTemplate(String text) {
        this.text = text;
    }

    /** Parses a template; every placeholder must name a declared field. */
    public static PromptTemplate of(String text, Set<String> fields) {
        Matcher m = PLACEHOLDER.matcher(text);
        while (m.find()) {
            if (!fields.contains(m.group(1))) {
                throw new IllegalStateException("template names undeclared field '" + m.group(1) + "'");
            }
        }
        return new PromptTemplate(text);
    }

    public String render(JsonNode inputs) {
        Matcher m = PLACEHOLDER.matcher(text);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String field = m.group(1);
            JsonNode value = inputs.path(field);
            m.appendReplacement(out, Matcher.quoteReplacement(delimited(field, value)));
        }
        m.appendTail(out);
        return out.toString();
    }

    private static String delimited(String field, JsonNode value) {
        StringBuilder b = new StringBuilder("<input name=\"").append(field).append("\">");
        appendValue(b, value);
        return b.append("</input>").toString();
    }

    private static void appendValue(StringBuilder b, JsonNode value) {
        if (value.isMissingNode() || value.isNull()) {
            return;
        }
        if (value.isArray()) {
            for (JsonNode row : value) {
                b.append("\n- ");
                appendValue(b, row);
            }
            return;
        }
        if (value.isObject()) {
            Iterator<Map.Entry<String, JsonNode>> it = value.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                b.append(e.getKey()).append('=');
                appendValue(b, e.getValue());
                if (it.hasNext()) {
                    b.append("; ");
                }
            }
            return;
        }
        b.append(escape(value.asText()));
    }

    static String escape(String userText) {
        return userText.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
    }

    public String text() {
        return text;
    }
}
