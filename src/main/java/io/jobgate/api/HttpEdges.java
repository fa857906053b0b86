package io.jobgate.api;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import io.vertx.ext.web.RoutingContext;
import org.apache.camel.CamelContext;
import org.apache.camel.ServiceStatus;
import org.apache.camel.component.platform.http.vertx.VertxPlatformHttpRouter;
import org.apache.camel.model.Model;
import org.apache.camel.model.rest.RestDefinition;
import org.apache.camel.model.rest.VerbDefinition;

/**
 * The HTTP server's answers where no route answers. The server listens before the routes exist and
 * after they stopped: a client that takes a bare 404 as final would drop a job it never got
 * accepted. So while the gateway starts or stops every such request gets {@code 503} (problem+json,
 * {@code Retry-After}); once it runs, a path of the API whose route is not there (stopped,
 * suspended) gets {@code 503} too, an unknown path {@code 404 not_found} and a known path with
 * another method {@code 405 method_not_allowed} — all problem documents, never HTML.
 */
public final class HttpEdges implements org.apache.camel.StartupListener {

    /** Where the OpenAPI document of the API is served. */
    public static final String OPENAPI = "/openapi.json";

    private final CamelContext context;
    private volatile String openApi;
    private volatile List<Api> apiPaths;
    private volatile boolean installed;
    /** Set once the gateway ran: a closed gate then means stopping, not starting. */
    private volatile boolean served;

    private HttpEdges(CamelContext context) {
        this.context = context;
    }

    /**
     * Installs the gate and the answers. The gate is the server's own first handler (set up before
     * it listens, through its authentication hook — the only handler the server installs ahead of
     * listening): until the gateway runs, and again once it stops, it answers 503 itself. The
     * answers where no route answers come once the router exists.
     */
    public static void install(CamelContext context) throws Exception {
        HttpEdges edges = new HttpEdges(context);
        context.addStartupListener(edges);
        onServer(context, edges::gate);
    }

    /**
     * Runs {@code setUp} on the main HTTP server as soon as it exists, before it listens: now if it
     * is there, else when Camel adds it.
     */
    static void onServer(CamelContext context, java.util.function.Consumer<org.apache.camel.component.platform.http.main.MainHttpServer> setUp) {
        org.apache.camel.component.platform.http.main.MainHttpServer server =
                context.hasService(org.apache.camel.component.platform.http.main.MainHttpServer.class);
        if (server != null) {
            setUp.accept(server);
        } else {
            context.getLifecycleStrategies().add(new org.apache.camel.support.LifecycleStrategySupport() {
                @Override
                public void onServiceAdd(CamelContext ctx, org.apache.camel.Service service, org.apache.camel.Route route) {
                    if (service instanceof org.apache.camel.component.platform.http.main.MainHttpServer added) {
                        setUp.accept(added);
                    }
                }
            });
        }
    }

    private void gate(org.apache.camel.component.platform.http.main.MainHttpServer server) {
        var entry = new org.apache.camel.component.platform.http.vertx.auth.AuthenticationConfig.AuthenticationConfigEntry();
        entry.setPath("/*");
        entry.setAuthenticationProviderFactory(vertx -> null); // nobody is authenticated here: it only gates
        entry.setAuthenticationHandlerFactory(new org.apache.camel.component.platform.http.vertx.auth.AuthenticationConfig.AuthenticationHandlerFactory() {
            @Override
            public <T extends io.vertx.ext.auth.authentication.AuthenticationProvider> io.vertx.ext.web.handler.AuthenticationHandler
                    createAuthenticationHandler(T provider) {
                return rc -> {
                    if (installed && context.getStatus().isStarted()) {
                        rc.next();
                    } else {
                        answer(rc, closed());
                    }
                };
            }
        });
        var auth = server.getConfiguration().getAuthenticationConfig();
        auth.getEntries().add(entry);
        auth.setEnabled(true);
    }

    @Override
    public void onCamelContextStarting(CamelContext context, boolean alreadyStarted) {
        tryInstall();
    }

    @Override
    public void onCamelContextStarted(CamelContext context, boolean alreadyStarted) {
        tryInstall();
        if (!installed) {
            throw new IllegalStateException("no platform-http router: is camel.server.enabled set?");
        }
        served = true;
    }

    private synchronized void tryInstall() {
        if (installed) {
            return;
        }
        // Bound by the server under a name of its port; the API's server is the main one.
        VertxPlatformHttpRouter router = context.getRegistry().findByType(VertxPlatformHttpRouter.class).stream()
                .filter(VertxPlatformHttpRouter::isMainServer).findFirst().orElse(null);
        if (router == null) {
            return;
        }
        // Last of all routes (Camel's are ordered before it whenever they are added): what none answers.
        router.route().order(Integer.MAX_VALUE).handler(this::noRoute);
        // The API's own description, made from the REST DSL once and served to anyone (it holds no secret).
        router.get(OPENAPI).order(Integer.MAX_VALUE - 1).handler(rc -> rc.response().setStatusCode(200)
                .putHeader("Content-Type", "application/json").end(openApi()));
        // First of all failure handlers: a body the HTTP layer could not decode (a form or multipart
        // type it parses itself) or any other failure of the layer is a problem document too, not a
        // plain "Bad Request" with a stack trace at ERROR.
        router.route().order(Integer.MIN_VALUE).failureHandler(HttpEdges::failed);
        installed = true;
    }

    private void noRoute(RoutingContext rc) {
        ServiceStatus status = context.getStatus();
        String path = rc.request().path();
        if (!status.isStarted()) {
            answer(rc, closed());
            return;
        }
        List<Api> matching = api().stream().filter(a -> a.path().matcher(path).matches()).toList();
        if (matching.isEmpty()) {
            answer(rc, ApiProblem.of(404, "not_found", "No resource at " + path + "."));
        } else if (matching.stream().noneMatch(a -> a.method().equalsIgnoreCase(rc.request().method().name()))) {
            answer(rc, ApiProblem.of(405, "method_not_allowed", rc.request().method() + " is not allowed on " + path + ".")
                    .withHeader("Allow", String.join(", ", matching.stream().map(a -> a.method().toUpperCase()).toList())));
        } else {
            answer(rc, unavailable("not_available")); // its route is not running (stopped, suspended)
        }
    }

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(HttpEdges.class);

    /** A failure of the HTTP layer itself, before or around a route; a client error is logged in one line. */
    static void failed(RoutingContext rc) {
        if (rc.response().ended() || rc.response().headWritten()) {
            return; // an answer already went out: nothing left to say
        }
        int status = rc.statusCode();
        String contentType = rc.request().getHeader("Content-Type");
        Throwable failure = rc.failure();
        ApiProblem problem;
        if (status == 413) {
            problem = ApiProblem.of(413, "request_too_large", "The request body is over the gateway's limit.");
        } else if (status >= 400 && status < 500) {
            // The layer decodes only form and multipart bodies itself: an upload sent as one (curl's
            // --data-binary default) or with a broken body. Uploads are raw bytes with their own type.
            problem = ApiProblem.of(415, "unsupported_media_type", "The body could not be read as '"
                    + (contentType == null ? "(no Content-Type)" : contentType) + "'. Send an upload as raw bytes with its "
                    + "media type (e.g. Content-Type: image/png) and a job as application/json.");
        } else {
            LOG.error("Unexpected failure of the HTTP layer on {} {}", rc.request().method(), rc.request().path(), failure);
            problem = ApiProblem.of(500, "internal_error", "The gateway failed to process the request. "
                    + "Retrying with the same Idempotency-Key is safe: it never makes a second job.");
        }
        if (problem.status() < 500) {
            LOG.info("HTTP request refused before any route: {} {} Content-Type={} code={} ({})", rc.request().method(),
                    rc.request().path(), contentType, problem.code(), failure == null ? "status " + status : failure.getClass().getSimpleName());
        }
        answer(rc, problem);
    }

    private String openApi() {
        String doc = openApi;
        if (doc == null) {
            doc = Json.write(OpenApiDocument.of(context));
            openApi = doc;
        }
        return doc;
    }

    /** While the gateway is not running: starting, or (once it ran) stopping. */
    private ApiProblem closed() {
        return unavailable(served ? "shutting_down" : "starting");
    }

    private static ApiProblem unavailable(String code) {
        String detail = switch (code) {
            case "starting" -> "The gateway is starting; retry in a moment.";
            case "shutting_down" -> "The gateway is stopping; retry with the same Idempotency-Key, another instance may take it.";
            default -> "This resource is not available right now; retry in a moment.";
        };
        return ApiProblem.of(503, code, detail).withHeader("Retry-After", "1");
    }

    /** One resource of the REST DSL: its method and its path as a pattern ({param} matches one segment). */
    private record Api(String method, Pattern path) {
    }

    private List<Api> api() {
        List<Api> known = apiPaths;
        if (known == null) {
            known = new ArrayList<>();
            Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
            for (RestDefinition rest : model.getRestDefinitions()) {
                // A disabled REST DSL (an instance without the role api) is not this instance's API:
                // its paths are unknown here (404), not a route that is down for a moment (503).
                if (disabled(rest.getDisabled())) {
                    continue;
                }
                String base = rest.getPath() == null ? "" : rest.getPath();
                for (VerbDefinition verb : rest.getVerbs()) {
                    if (disabled(verb.getDisabled())) {
                        continue;
                    }
                    String template = base + (verb.getPath() == null ? "" : verb.getPath());
                    known.add(new Api(verb.asVerb(), Pattern.compile(template.replaceAll("\\{[^/]+}", "[^/]+"))));
                }
            }
            known.add(new Api("get", Pattern.compile(Pattern.quote(OPENAPI))));
            apiPaths = known;
        }
        return known;
    }

    private boolean disabled(String setting) {
        return setting != null && Boolean.TRUE.equals(org.apache.camel.support.CamelContextHelper.parseBoolean(context, setting));
    }

    static void answer(RoutingContext rc, ApiProblem problem) {
        var response = rc.response().setStatusCode(problem.status()).putHeader("Content-Type", HttpReply.PROBLEM_JSON);
        problem.headers().forEach(response::putHeader);
        response.end(Json.write(ProblemResponder.document(problem, rc.request().path())));
    }
}
