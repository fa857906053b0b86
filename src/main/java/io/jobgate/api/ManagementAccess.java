package io.jobgate.api;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import io.vertx.ext.web.RoutingContext;
import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.main.MainHttpServer;
import org.apache.camel.component.platform.http.vertx.auth.AuthenticationConfig;

/**
 * Who may use the management endpoints under {@code /observe}. Health ({@code /observe/health},
 * {@code /live}, {@code /ready}) is open: orchestrators and load balancers probe it. Everything else
 * (metrics, Jolokia, info) is for operators: a request from this machine (loopback) passes unless
 * {@code jobgate.management.allow-loopback} is false — behind a reverse proxy on the same host every
 * request looks local —, any other needs the admin key, as a bearer token or as the password of HTTP
 * Basic (what Prometheus and Hawtio can send). What Jolokia may do once in is its policy's
 * ({@code jolokia-access.xml}).
 */
public final class ManagementAccess {

    /** What a request to the management endpoints gets. */
    public enum Verdict { OPEN, ALLOWED, REFUSED }

    static final String PATH = "/observe";

    private ManagementAccess() {
    }

    /** Installs the check on the main HTTP server, before it listens (after the start/stop gate). */
    public static void install(CamelContext context, String adminKeySha256, boolean allowLoopback) {
        HttpEdges.onServer(context, server -> guard(server, adminKeySha256, allowLoopback));
    }

    private static void guard(MainHttpServer server, String adminKeySha256, boolean allowLoopback) {
        guardPath(server, PATH + "/*", rc -> decide(rc.request().path(), loopback(rc), rc.request().getHeader("Authorization"),
                adminKeySha256, allowLoopback) == Verdict.REFUSED
                ? ApiProblem.of(401, "unauthorized", "The management endpoints need the admin key (Authorization: Bearer <admin key>).")
                        .withHeader("WWW-Authenticate", "Bearer realm=\"jobgate management\"")
                : null);
    }

    /**
     * Puts {@code refusal} in front of every request to {@code path} on the server, before it listens: a request it
     * answers with a problem is refused so, one it answers with null goes on. Through the server's authentication hook,
     * with no Vert.x auth provider (the rule decides itself).
     */
    static void guardPath(MainHttpServer server, String path, java.util.function.Function<RoutingContext, ApiProblem> refusal) {
        var entry = new AuthenticationConfig.AuthenticationConfigEntry();
        entry.setPath(path);
        entry.setAuthenticationProviderFactory(vertx -> null);
        entry.setAuthenticationHandlerFactory(new AuthenticationConfig.AuthenticationHandlerFactory() {
            @Override
            public <T extends io.vertx.ext.auth.authentication.AuthenticationProvider> io.vertx.ext.web.handler.AuthenticationHandler
                    createAuthenticationHandler(T provider) {
                return rc -> {
                    ApiProblem refused = refusal.apply(rc);
                    if (refused != null) {
                        HttpEdges.answer(rc, refused);
                    } else {
                        rc.next();
                    }
                };
            }
        });
        var auth = server.getConfiguration().getAuthenticationConfig();
        auth.getEntries().add(entry);
        auth.setEnabled(true);
    }

    /** Whether the request comes from this machine. */
    static boolean loopback(RoutingContext rc) {
        var remote = rc.request().remoteAddress();
        try {
            return remote != null && java.net.InetAddress.getByName(remote.hostAddress()).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    /** The rule, apart from the HTTP server: health is open, the rest needs loopback (if allowed) or the admin key. */
    public static Verdict decide(String path, boolean loopback, String authorization, String adminKeySha256, boolean allowLoopback) {
        if (path.equals(PATH + "/health") || path.startsWith(PATH + "/health/")) {
            return Verdict.OPEN;
        }
        if (loopback && allowLoopback) {
            return Verdict.ALLOWED;
        }
        String key = presentedKey(authorization);
        if (Digests.sha256Matches(key, adminKeySha256)) {
            return Verdict.ALLOWED;
        }
        return Verdict.REFUSED;
    }

    /** The key of {@code Bearer <key>}, or the password of {@code Basic base64(user:key)}. */
    static String presentedKey(String authorization) {
        if (authorization == null) {
            return null;
        }
        if (authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return authorization.substring(7).trim();
        }
        if (authorization.regionMatches(true, 0, "Basic ", 0, 6)) {
            try {
                String pair = new String(Base64.getDecoder().decode(authorization.substring(6).trim()), StandardCharsets.UTF_8);
                int colon = pair.indexOf(':');
                return colon < 0 ? null : pair.substring(colon + 1);
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        return null;
    }
}
