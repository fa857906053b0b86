package io.jobgate.api;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.camel.CamelContext;
import org.apache.camel.model.Model;
import org.apache.camel.model.rest.ParamDefinition;
import org.apache.camel.model.rest.RestDefinition;
import org.apache.camel.model.rest.RestParamType;
import org.apache.camel.model.rest.VerbDefinition;
import org.apache.camel.support.CamelContextHelper;

/**
 * The OpenAPI 3.1 document of the HTTP API, served at {@code /openapi.json}, made from the REST DSL
 * itself (routes/api.camel.yaml): the calls it lists are the calls the routes serve, never a copy
 * kept by hand. Built here rather than by camel-openapi-java (not among the packages known to resolve
 * here, and a swagger-core tree beside our pinned Jackson): the REST DSL's verbs, descriptions and
 * parameters are all it needs.
 * Every error answer is an RFC 9457 problem document (docs/api.md has the table of codes).
 */
public final class OpenApiDocument {

    private static final Pattern PATH_PARAM = Pattern.compile("\\{([^/}]+)}");

    private OpenApiDocument() {
    }

    /** The document for the REST DSL as this instance serves it (a disabled REST DSL has no paths here). */
    public static Map<String, Object> of(CamelContext context) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("openapi", "3.1.0");
        doc.put("info", Map.of("title", "jobgate", "version", "v1",
                "description", "A durable job boundary for AI generation providers: POST a job, poll it, fetch its output."));
        Map<String, Object> paths = new TreeMap<>();
        Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
        for (RestDefinition rest : model.getRestDefinitions()) {
            if (disabled(context, rest.getDisabled())) {
                continue;
            }
            String base = rest.getPath() == null ? "" : rest.getPath();
            for (VerbDefinition verb : rest.getVerbs()) {
                if (disabled(context, verb.getDisabled())) {
                    continue;
                }
                String path = base + (verb.getPath() == null ? "" : verb.getPath());
                @SuppressWarnings("unchecked")
                Map<String, Object> item = (Map<String, Object>) paths.computeIfAbsent(path, p -> new TreeMap<>());
                item.put(verb.asVerb().toLowerCase(), operation(path, verb));
            }
        }
        doc.put("paths", paths);
        doc.put("components", components());
        doc.put("security", List.of(Map.of("tenantKey", List.of())));
        return doc;
    }

    private static Map<String, Object> operation(String path, VerbDefinition verb) {
        Map<String, Object> op = new LinkedHashMap<>();
        op.put("operationId", verb.getId());
        if (verb.getDescription() != null) {
            op.put("summary", verb.getDescription());
        }
        List<Map<String, Object>> parameters = new ArrayList<>();
        Matcher m = PATH_PARAM.matcher(path);
        while (m.find()) {
            parameters.add(parameter(m.group(1), "path", true, null));
        }
        for (ParamDefinition param : verb.getParams()) {
            if (param.getType() == RestParamType.query || param.getType() == RestParamType.header) {
                parameters.add(parameter(param.getName(), param.getType().name(), Boolean.TRUE.equals(param.getRequired()),
                        param.getDescription()));
            }
        }
        if (!parameters.isEmpty()) {
            op.put("parameters", parameters);
        }
        if (path.contains("/webhook")) {
            op.put("security", List.of()); // the provider's signature authenticates it, not a tenant key
        } else if (path.startsWith("/v1/admin/")) {
            op.put("security", List.of(Map.of("adminKey", List.of())));
        }
        Map<String, Object> responses = new LinkedHashMap<>();
        responses.put("2XX", Map.of("description", "The answer (docs/api.md describes each)."));
        responses.put("default", Map.of("description", "A refusal or fault: an RFC 9457 problem document with a stable code.",
                "content", Map.of("application/problem+json", Map.of("schema", Map.of("$ref", "#/components/schemas/Problem")))));
        op.put("responses", responses);
        return op;
    }

    private static Map<String, Object> parameter(String name, String in, boolean required, String description) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("name", name);
        p.put("in", in);
        p.put("required", required);
        if (description != null) {
            p.put("description", description);
        }
        p.put("schema", Map.of("type", "string"));
        return p;
    }

    private static Map<String, Object> components() {
        Map<String, Object> problem = new LinkedHashMap<>();
        problem.put("type", "object");
        problem.put("required", List.of("type", "title", "status", "code", "detail"));
        Map<String, Object> members = new LinkedHashMap<>();
        members.put("type", Map.of("type", "string", "description", "urn:jobgate:problem:<code>"));
        members.put("title", Map.of("type", "string"));
        members.put("status", Map.of("type", "integer", "description", "The HTTP status."));
        members.put("code", Map.of("type", "string", "description", "The stable code (docs/api.md, Errors)."));
        members.put("detail", Map.of("type", "string"));
        members.put("instance", Map.of("type", "string"));
        problem.put("properties", members);
        return Map.of(
                "securitySchemes", Map.of(
                        "tenantKey", Map.of("type", "http", "scheme", "bearer", "description", "A tenant's API key."),
                        "adminKey", Map.of("type", "http", "scheme", "bearer", "description", "The operator's admin key.")),
                "schemas", Map.of("Problem", problem));
    }

    private static boolean disabled(CamelContext context, String setting) {
        return setting != null && Boolean.TRUE.equals(CamelContextHelper.parseBoolean(context, setting));
    }
}
