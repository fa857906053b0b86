package io.jobgate.api;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.Error;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaLocation;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SchemaRegistryConfig;
import com.networknt.schema.SpecificationVersion;
import io.jobgate.support.ApiClient.Response;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The served /openapi.json as a checker of real answers: for a call (method, path template) and the
 * answer the gateway gave, finds the response the document declares for its status (the status, else
 * its class {@code 4XX}, else {@code default}), checks the media type, and validates the body with an
 * independent JSON Schema 2020-12 validator (networknt). Failing on any mismatch.
 *
 * <p>Checked closed-world: every object schema of the document that lists {@code properties} and says
 * nothing of others gets {@code unevaluatedProperties: false} here (never in the served document, which
 * stays open to members added later), so a member the gateway answers and the document does not
 * describe fails too.
 *
 * <p>What the document allows a client to send is asked of the document as served (open where it says
 * nothing of other members): {@link #allowsParameter} and {@link #allowsRequest} give its verdict on a value,
 * which the test then holds the server's answer to.
 */
final class OpenApiContract {

    private static final String BASE = "https://jobgate.invalid/openapi.json";
    /** The served document as it is, for verdicts on what a client may send. */
    private static final String SERVED = "https://jobgate.invalid/served/openapi.json";
    private static final Pattern PARAM = Pattern.compile("\\{[^}]*}");

    final JsonNode document;
    private final SchemaRegistry registry;
    private final SchemaRegistry served;
    /** "operationId status" of every answer checked. */
    final Set<String> checked = new TreeSet<>();

    OpenApiContract(JsonNode served) {
        this.document = served;
        JsonNode strict = served.deepCopy();
        close(strict.path("components").path("schemas"));
        this.registry = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12, b -> b
                .schemas(Map.of(BASE, strict.toString()))
                .schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));
        this.served = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12, b -> b
                .schemas(Map.of(SERVED, served.toString()))
                .schemaRegistryConfig(SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()));
    }

    /** The path of {@code template} as the document spells it ({@code /v1/jobs/{jobId}}). */
    private String documentPath(String template) {
        for (Iterator<String> it = document.path("paths").fieldNames(); it.hasNext(); ) {
            String path = it.next();
            if (PARAM.matcher(path).replaceAll("{}").equals(PARAM.matcher(template).replaceAll("{}"))) {
                return path;
            }
        }
        throw new AssertionError("the document has no path " + template);
    }

    /** A JSON pointer as a URI fragment: ~ and / escaped (RFC 6901), then what a fragment may not hold. */
    private static String pointer(String... tokens) {
        StringBuilder p = new StringBuilder("#");
        for (String token : tokens) {
            p.append('/').append(java.net.URLEncoder.encode(token.replace("~", "~0").replace("/", "~1"),
                    java.nio.charset.StandardCharsets.UTF_8).replace("+", "%20").replace("%7E", "~"));
        }
        return p.toString();
    }

    /** Does the document let a client send {@code value} as the parameter {@code name} of the call? */
    boolean allowsParameter(String method, String template, String in, String name, JsonNode value) {
        JsonNode parameters = operation(method, template).path("parameters");
        for (int i = 0; i < parameters.size(); i++) {
            JsonNode p = parameters.get(i);
            if (p.path("in").asText().equals(in) && p.path("name").asText().equalsIgnoreCase(name)) {
                return served.getSchema(SchemaLocation.of(SERVED + pointer("paths", documentPath(template), method.toLowerCase(),
                        "parameters", Integer.toString(i), "schema"))).validate(value).isEmpty();
            }
        }
        throw new AssertionError("the document declares no " + in + " parameter " + name + " of " + method + " " + template);
    }

    /** Does the document let a client send {@code body} as the call's JSON request body? */
    boolean allowsRequest(String method, String template, JsonNode body) {
        JsonNode schema = operation(method, template).path("requestBody").path("content").path("application/json").path("schema");
        assertThat(schema.path("$ref").asText()).as("%s %s declares a JSON request body", method, template)
                .startsWith("#/components/schemas/");
        return served.getSchema(SchemaLocation.of(SERVED + schema.path("$ref").asText())).validate(body).isEmpty();
    }

    private static void close(JsonNode node) {
        if (node.isObject()) {
            ObjectNode o = (ObjectNode) node;
            if (o.has("properties") && !o.has("additionalProperties") && !o.has("unevaluatedProperties")) {
                o.put("unevaluatedProperties", false);
            }
        }
        if (node.isContainerNode()) {
            node.forEach(OpenApiContract::close);
        }
    }

    /** The operation the document declares for a method and a path template ({@code /v1/jobs/{jobId}}). */
    JsonNode operation(String method, String template) {
        JsonNode paths = document.path("paths");
        for (Iterator<String> it = paths.fieldNames(); it.hasNext(); ) {
            String path = it.next();
            if (PARAM.matcher(path).replaceAll("{}").equals(PARAM.matcher(template).replaceAll("{}"))) {
                JsonNode op = paths.path(path).path(method.toLowerCase());
                assertThat(op.isObject()).as("the document declares %s %s", method, template).isTrue();
                return op;
            }
        }
        throw new AssertionError("the document has no path " + template);
    }

    /** Checks an answer against what the document declares for it; returns the answer. */
    Response check(String method, String template, Response r) {
        JsonNode op = operation(method, template);
        String id = op.path("operationId").asText();
        JsonNode responses = op.path("responses");
        String status = Integer.toString(r.status());
        String key = responses.has(status) ? status : responses.has(status.charAt(0) + "XX") ? status.charAt(0) + "XX" : "default";
        JsonNode declared = responses.path(key);
        assertThat(declared.isObject()).as("%s declares an answer %s (got %s)", id, status, r.text()).isTrue();
        if (r.status() < 400) {
            assertThat(key).as("%s: a success answer %s is declared by its own status, not by %s: %s", id, status, key, r.text())
                    .isEqualTo(status);
        }
        JsonNode content = declared.path("content");
        if (content.isMissingNode() || content.isEmpty()) {
            assertThat(r.text()).as("%s %s declares no body", id, status).isEmpty();
        } else {
            String type = r.contentType() == null ? "" : r.contentType().split(";")[0].trim();
            String media = content.has(type) ? type : content.has("*/*") ? "*/*" : null;
            assertThat(media).as("%s %s: Content-Type %s is one the document declares (%s)", id, status, type, content.fieldNames())
                    .isNotNull();
            if (type.endsWith("json")) {
                validate(content.path(media).path("schema"), r.json(), id + " " + status);
            }
        }
        checked.add(id + " " + status);
        return r;
    }

    /** Checks a request body against the operation's declared request body schema. */
    void checkRequest(String method, String template, JsonNode body) {
        JsonNode op = operation(method, template);
        JsonNode schema = op.path("requestBody").path("content").path("application/json").path("schema");
        assertThat(schema.isObject()).as("%s declares a JSON request body", op.path("operationId").asText()).isTrue();
        validate(schema, body, op.path("operationId").asText() + " request");
    }

    /** Validates against a component schema ({@code Job}, {@code WebhookEvent}, ...). */
    void checkSchema(String name, JsonNode instance) {
        assertThat(document.path("components").path("schemas").has(name)).as("schema %s", name).isTrue();
        validate(com.fasterxml.jackson.databind.node.JsonNodeFactory.instance.objectNode().put("$ref", "#/components/schemas/" + name), instance, name);
    }

    private void validate(JsonNode schemaNode, JsonNode instance, String what) {
        String ref = schemaNode.path("$ref").asText("");
        assertThat(ref).as("%s: the document's schemas are named components ($ref), got %s", what, schemaNode)
                .startsWith("#/components/schemas/");
        Schema schema = registry.getSchema(SchemaLocation.of(BASE + ref));
        List<Error> errors = schema.validate(instance);
        List<String> messages = new ArrayList<>();
        errors.forEach(e -> messages.add(e.toString()));
        assertThat(messages).as("%s: %s against %s", what, instance, ref).isEmpty();
    }
}
