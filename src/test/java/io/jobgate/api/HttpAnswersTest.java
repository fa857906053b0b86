package io.jobgate.api;

import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.support.ApiClient.Response;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.LogCapture;
import io.jobgate.support.Samples;
import org.apache.camel.BeanInject;
import org.apache.camel.CamelContext;
import org.apache.camel.Route;
import org.junit.jupiter.api.Test;

import static io.jobgate.support.TestTenants.ACME;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the HTTP server answers a newcomer: /openapi.json lists exactly the calls the routes serve and
 * the docs' table of calls lists; an unknown path, a wrong method and a body the HTTP layer cannot
 * decode are problem documents (the last without a stack trace in the log).
 */
class HttpAnswersTest extends GatewayTestBase {

    /** A path template with its parameters' names blanked: {jobId} and {job_id} are one path. */
    static final Pattern PARAM = Pattern.compile("\\{[^}]*}");


    @BeanInject
    CamelContext context;

    @Override
    protected Map<String, String> settings() throws Exception {
        // A small HTTP body limit, so the layer's own 413 is reached with a small body.
        return Map.of("camel.server.max-body-size", Integer.toString(BODY_LIMIT));
    }

    static String call(String method, String path) {
        return method.toUpperCase() + " " + PARAM.matcher(path).replaceAll("{}");
    }

    /** The calls the OpenAPI document lists, as "METHOD /path/{}". */
    Set<String> openApiCalls() {
        Response r = api.get(null, "/openapi.json");
        assertThat(r.status()).as(r.text()).isEqualTo(200);
        assertThat(r.contentType()).isEqualTo("application/json");
        JsonNode doc = r.json();
        assertThat(doc.path("openapi").asText()).startsWith("3.");
        Set<String> calls = new TreeSet<>();
        doc.path("paths").fields().forEachRemaining(path -> path.getValue().fieldNames()
                .forEachRemaining(method -> calls.add(call(method, path.getKey()))));
        return calls;
    }

    /** The calls the running routes serve: the REST DSL's routes, from their endpoints (rest://post:/v1:/jobs). */
    Set<String> routeCalls() {
        Set<String> calls = new TreeSet<>();
        for (Route route : context.getRoutes()) {
            String uri = java.net.URLDecoder.decode(route.getEndpoint().getEndpointUri(), java.nio.charset.StandardCharsets.UTF_8);
            Matcher m = Pattern.compile("rest://([a-z]+):([^:]*):([^?]*)").matcher(uri);
            if (m.lookingAt()) {
                calls.add(call(m.group(1), m.group(2) + m.group(3)));
            }
        }
        return calls;
    }

    /** The calls docs/api.md's table lists under /v1, as "METHOD /path/{}". */
    static Set<String> documentedCalls() throws Exception {
        String doc = Files.readString(Path.of("docs/api.md"));
        Set<String> calls = new TreeSet<>();
        Matcher m = Pattern.compile("^\\| `([A-Z/]+) (/[^`?\\s]*)", Pattern.MULTILINE).matcher(doc);
        while (m.find()) {
            for (String method : m.group(1).split("/")) {
                calls.add(call(method, m.group(2)));
            }
        }
        return calls;
    }

    @Test
    void openApiListsTheCallsTheRoutesServeAndTheDocsTableLists() throws Exception {
        Set<String> described = openApiCalls();
        assertThat(described).as("the REST DSL's calls").isNotEmpty().isEqualTo(routeCalls());

        Set<String> documented = documentedCalls();
        Set<String> documentedApi = new TreeSet<>(documented.stream().filter(c -> c.contains(" /v1/")).toList());
        assertThat(documentedApi).as("docs/api.md's table of calls under /v1").isEqualTo(described);
        assertThat(documented).as("the table lists the description itself").contains("GET /openapi.json");
    }

    @Test
    void anUnknownPathIsAProblemDocument() {
        Response r = api.get(ACME, "/v1/no-such-thing");
        assertThat(r.status()).isEqualTo(404);
        assertThat(r.contentType()).isEqualTo("application/problem+json");
        assertThat(r.code()).isEqualTo("not_found");
        assertThat(api.get(null, "/index.html").code()).as("outside the API too").isEqualTo("not_found");
    }

    @Test
    void aWrongMethodIsAProblemDocumentWithTheMethodsAllowed() {
        Response jobs = api.send(api.request("/v1/jobs", ACME).DELETE().build());
        assertThat(jobs.status()).isEqualTo(405);
        assertThat(jobs.contentType()).isEqualTo("application/problem+json");
        assertThat(jobs.code()).isEqualTo("method_not_allowed");
        assertThat(List.of(jobs.header("Allow").split(",\\s*"))).containsExactlyInAnyOrder("GET", "POST");

        Response openApi = api.send(api.request("/openapi.json", null).POST(HttpRequest.BodyPublishers.noBody()).build());
        assertThat(openApi.status()).isEqualTo(405);
        assertThat(openApi.header("Allow")).isEqualTo("GET");
    }

    static final int BODY_LIMIT = 512 * 1024;

    @Test
    void aBodyOverTheHttpLayersLimitIsAProblemDocument() {
        Response r = api.upload(ACME, "image/png", new byte[BODY_LIMIT + 1024]);
        assertThat(r.status()).as(r.text()).isEqualTo(413);
        assertThat(r.contentType()).isEqualTo("application/problem+json");
        assertThat(r.code()).isEqualTo("request_too_large");
    }

    @Test
    void anUploadTheHttpLayerCannotDecodeIsAProblemDocumentWithoutAStackTrace() {
        // curl --data-binary without -H Content-Type sends a form type, which the HTTP layer parses itself.
        byte[] png = new byte[100_000]; // a PNG's start and more than a form field may hold
        System.arraycopy(Samples.png(2, 2), 0, png, 0, 8);
        List<String> lines;
        Response r;
        try (LogCapture log = new LogCapture()) {
            r = api.upload(ACME, "application/x-www-form-urlencoded", png);
            lines = log.linesWithLevel();
        }
        assertThat(r.status()).as(r.text()).isEqualTo(415);
        assertThat(r.contentType()).isEqualTo("application/problem+json");
        assertThat(r.code()).isEqualTo("unsupported_media_type");
        assertThat(r.json().path("detail").asText()).contains("Content-Type");
        assertThat(lines).as("a client's mistake is no ERROR and carries no exception")
                .noneMatch(l -> l.startsWith("ERROR") || l.startsWith("WARN")).noneMatch(l -> l.contains("io.netty"));

        Response multipart = api.upload(ACME, "multipart/form-data; boundary=x", png);
        assertThat(multipart.contentType()).isEqualTo("application/problem+json");
        assertThat(multipart.status()).isBetween(400, 499);
    }
}
