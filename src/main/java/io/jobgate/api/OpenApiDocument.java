package io.jobgate.api;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.type.TypeReference;
import io.jobgate.common.Json;
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
 * parameters are all it needs for paths.
 *
 * <p>The bodies are data, not code: {@code openapi/components.json} holds the JSON Schemas (2020-12,
 * OpenAPI 3.1's dialect) of every request and answer; {@code openapi/operations.json} says, per REST DSL
 * route id, which schema the request takes and which each answer status has, and the {@code webhooks}
 * the gateway sends. Every error answer is an RFC 9457 problem document (docs/api.md has the table of
 * codes). {@code OpenApiContractTest} validates real answers of a running gateway against this document.
 */
public final class OpenApiDocument {

    private static final Pattern PATH_PARAM = Pattern.compile("\\{([^/}]+)}");
    /** Path parameters that are ids of ours: UUIDs. */
    private static final Set<String> UUID_PARAMS = Set.of("jobId", "endpointId", "taskId");
    static final String COMPONENTS = "openapi/components.json";
    static final String OPERATIONS = "openapi/operations.json";
    private static final String SCHEMAS = "#/components/schemas/";

    private OpenApiDocument() {
    }

    /** The document for the REST DSL as this instance serves it (a disabled REST DSL has no paths here). */
    public static Map<String, Object> of(CamelContext context) {
        Map<String, Object> schemas = read(COMPONENTS);
        Map<String, Object> bodies = read(OPERATIONS);
        Map<String, Object> operations = map(bodies.get("operations"));
        Map<String, Object> examples = map(bodies.get("examples"));

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("openapi", "3.1.0");
        doc.put("info", obj("title", "jobgate", "version", "v1",
                "description", "A durable job boundary for AI generation providers: POST a job, poll it, fetch its output."));
        doc.put("jsonSchemaDialect", "https://json-schema.org/draft/2020-12/schema");
        doc.put("servers", List.of(obj("url", "http://localhost:8080", "description", "The quick start's gateway (README)")));
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
                item.put(verb.asVerb().toLowerCase(), operation(path, verb, map(operations.get(verb.getId())), examples, schemas));
            }
        }
        doc.put("paths", paths);
        doc.put("webhooks", webhooks(map(bodies.get("webhooks")), schemas));
        Map<String, Object> components = new LinkedHashMap<>();
        components.put("securitySchemes", obj(
                "tenantKey", obj("type", "http", "scheme", "bearer", "description", "A tenant's API key."),
                "adminKey", obj("type", "http", "scheme", "bearer", "description", "The operator's admin key."),
                "workerKey", obj("type", "http", "scheme", "bearer", "description", "A pull member's worker key (docs/workers.md).")));
        components.put("schemas", schemas);
        doc.put("components", components);
        doc.put("security", List.of(obj("tenantKey", List.of())));
        return doc;
    }

    private static Map<String, Object> operation(String path, VerbDefinition verb, Map<String, Object> bodies,
                                                 Map<String, Object> examples, Map<String, Object> schemas) {
        Map<String, Object> op = new LinkedHashMap<>();
        op.put("operationId", verb.getId());
        if (verb.getDescription() != null) {
            op.put("summary", verb.getDescription());
        }
        List<Map<String, Object>> parameters = new ArrayList<>();
        Map<String, Object> paramSchemas = map(bodies.get("params"));
        Matcher m = PATH_PARAM.matcher(path);
        while (m.find()) {
            Map<String, Object> schema = UUID_PARAMS.contains(m.group(1)) ? obj("type", "string", "format", "uuid") : obj("type", "string");
            parameters.add(parameter(m.group(1), "path", true, null, schema));
        }
        for (ParamDefinition param : verb.getParams()) {
            if (param.getType() == RestParamType.query || param.getType() == RestParamType.header) {
                Object schema = paramSchemas.containsKey(param.getName()) ? paramSchemas.get(param.getName()) : obj("type", "string");
                parameters.add(parameter(param.getName(), param.getType().name(), Boolean.TRUE.equals(param.getRequired()),
                        param.getDescription(), schema));
            }
        }
        if (!parameters.isEmpty()) {
            op.put("parameters", parameters);
        }
        Map<String, Object> request = map(bodies.get("request"));
        if (!request.isEmpty()) {
            op.put("requestBody", requestBody(verb.getId(), request, examples, schemas));
        }
        if (path.matches(".*/providers/\\{[^}]+}/webhook")) {
            op.put("security", List.of()); // the provider's signature authenticates it, not a tenant key
        } else if (path.startsWith("/v1/admin/")) {
            op.put("security", List.of(obj("adminKey", List.of())));
        } else if (path.startsWith("/v1/workers/")) {
            op.put("security", List.of(obj("workerKey", List.of())));
        }
        Map<String, Object> responses = new LinkedHashMap<>();
        Map<String, Object> answers = map(bodies.get("responses"));
        if (answers.isEmpty()) {
            responses.put("2XX", obj("description", "The answer (docs/api.md describes each)."));
        }
        answers.forEach((status, spec) -> responses.put(status, response(verb.getId(), map(spec), schemas)));
        responses.put("default", obj("description", "A refusal or fault: an RFC 9457 problem document with a stable code.",
                "content", obj(HttpReply.PROBLEM_JSON, obj("schema", ref("Problem", verb.getId(), schemas)))));
        op.put("responses", responses);
        return op;
    }

    private static Map<String, Object> requestBody(String id, Map<String, Object> request, Map<String, Object> examples,
                                                   Map<String, Object> schemas) {
        Map<String, Object> body = new LinkedHashMap<>();
        if (request.get("description") != null) {
            body.put("description", request.get("description"));
        }
        body.put("required", !Boolean.TRUE.equals(request.get("optional")));
        body.put("content", content(id, request, schemas, examples));
        return body;
    }

    private static Map<String, Object> response(String id, Map<String, Object> spec, Map<String, Object> schemas) {
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("description", spec.getOrDefault("description", ""));
        Map<String, Object> headers = map(spec.get("headers"));
        if (!headers.isEmpty()) {
            Map<String, Object> described = new LinkedHashMap<>();
            headers.forEach((name, text) -> described.put(name, obj("description", text, "schema", obj("type", "string"))));
            answer.put("headers", described);
        }
        if (spec.containsKey("schema") || spec.containsKey("binary")) {
            answer.put("content", content(id, spec, schemas, obj()));
        }
        return answer;
    }

    /** application/json with a schema of components.json, raw bytes of the media types listed, or both (a call that takes either). */
    private static Map<String, Object> content(String id, Map<String, Object> spec, Map<String, Object> schemas,
                                               Map<String, Object> examples) {
        Map<String, Object> content = new LinkedHashMap<>();
        if (spec.get("schema") instanceof String name) {
            Map<String, Object> media = new LinkedHashMap<>();
            media.put("schema", ref(name, id, schemas));
            if (spec.get("examples") instanceof String set) {
                media.put("examples", examples.get(set));
            }
            content.put(HttpReply.JSON, media);
        }
        if (spec.get("binary") instanceof List<?> types) {
            // Raw bytes: format binary, what client generators read as a file or byte array.
            types.forEach(t -> content.put((String) t, obj("schema", obj("type", "string", "format", "binary"))));
        }
        return content;
    }

    private static Map<String, Object> webhooks(Map<String, Object> hooks, Map<String, Object> schemas) {
        Map<String, Object> webhooks = new LinkedHashMap<>();
        hooks.forEach((name, value) -> {
            Map<String, Object> spec = map(value);
            Map<String, Object> post = new LinkedHashMap<>();
            post.put("operationId", name);
            post.put("summary", "A job changed status");
            post.put("description", spec.get("description"));
            List<Map<String, Object>> parameters = new ArrayList<>();
            map(spec.get("headers")).forEach((header, text) -> parameters.add(parameter(header, "header", true, (String) text,
                    obj("type", "string"))));
            post.put("parameters", parameters);
            post.put("requestBody", obj("required", true, "content",
                    obj(HttpReply.JSON, obj("schema", ref((String) spec.get("schema"), name, schemas)))));
            post.put("security", List.of());
            post.put("responses", obj("2XX", obj("description", "Received. Anything else (a 3xx too, or no answer in time) is sent again later.")));
            webhooks.put(name, obj("post", post));
        });
        return webhooks;
    }

    private static Map<String, Object> ref(String name, String user, Map<String, Object> schemas) {
        if (!schemas.containsKey(name)) {
            throw new IllegalStateException(OPERATIONS + ": " + user + " names the schema '" + name + "', which " + COMPONENTS + " lacks");
        }
        return obj("$ref", SCHEMAS + name);
    }

    private static Map<String, Object> parameter(String name, String in, boolean required, String description, Object schema) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("name", name);
        p.put("in", in);
        p.put("required", required);
        if (description != null) {
            p.put("description", description);
        }
        p.put("schema", schema);
        return p;
    }

    static Map<String, Object> read(String resource) {
        try (InputStream in = OpenApiDocument.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + resource);
            }
            return Json.MAPPER.readValue(in, new TypeReference<LinkedHashMap<String, Object>>() { });
        } catch (IOException e) {
            throw new UncheckedIOException(resource, e);
        }
    }

    /** An object whose members keep their order: the same document, byte for byte, on every run. */
    private static Map<String, Object> obj(Object... keysAndValues) {
        Map<String, Object> o = new LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            o.put((String) keysAndValues[i], keysAndValues[i + 1]);
        }
        return o;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return value instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
    }

    private static boolean disabled(CamelContext context, String setting) {
        return setting != null && Boolean.TRUE.equals(CamelContextHelper.parseBoolean(context, setting));
    }
}
