package io.jobgate.api;

import io.jobgate.common.ApiProblem;
import io.jobgate.common.Digests;
import io.jobgate.tenant.DemoCredentials;
import org.apache.camel.CamelContext;
import org.apache.camel.component.platform.http.main.MainHttpServer;

/**
 * Who may open the operator console ({@code /console}, docs/console.md): the admin key only, as the admin API takes it
 * (the password of HTTP Basic, which a browser asks for, or a bearer token); a tenant's key never. Unlike the
 * management endpoints, a request from this machine needs the key too. And the console answers beyond this machine only
 * once the admin key is one of your own: with the shipped demo key ({@code dev-admin-key}) it is refused there, whatever
 * else is allowed ({@code jobgate.demo}). With {@code jobgate.management.allow-loopback} false (a reverse proxy on the
 * same host, where every request looks local) every request counts as from beyond.
 */
public final class ConsoleAccess {

    /** What a request to the console gets. */
    public enum Verdict {
        ALLOWED,
        /** No key, or not the admin's: 401, and the browser asks for it. */
        UNAUTHORIZED,
        /** From beyond this machine while the admin key is the shipped demo key (or none is set): 403. */
        LOOPBACK_ONLY
    }

    static final String PATH = "/console";

    private ConsoleAccess() {
    }

    /** Installs the check on the main HTTP server, before it listens. */
    public static void install(CamelContext context, String adminKeySha256, boolean allowLoopback) {
        HttpEdges.onServer(context, server -> guard(server, adminKeySha256, allowLoopback));
    }

    private static void guard(MainHttpServer server, String adminKeySha256, boolean allowLoopback) {
        ManagementAccess.guardPath(server, PATH + "/*", rc -> switch (decide(ManagementAccess.loopback(rc),
                rc.request().getHeader("Authorization"), adminKeySha256, allowLoopback)) {
            case ALLOWED -> null;
            case UNAUTHORIZED -> ApiProblem.of(401, "unauthorized",
                    "The console needs the admin key: sign in with any user name and the admin key as the password.")
                    .withHeader("WWW-Authenticate", "Basic realm=\"jobgate console\", charset=\"UTF-8\"");
            case LOOPBACK_ONLY -> ApiProblem.of(403, "console_loopback_only",
                    "The console answers beyond this machine only with an admin key of your own "
                            + "(jobgate.admin.api-key-sha256): the shipped demo key opens it on this machine only.");
        });
    }

    /** The rule, apart from the HTTP server. */
    public static Verdict decide(boolean loopback, String authorization, String adminKeySha256, boolean allowLoopback) {
        boolean beyond = !(loopback && allowLoopback);
        if (beyond && (adminKeySha256 == null || DemoCredentials.shipped(adminKeySha256))) {
            return Verdict.LOOPBACK_ONLY;
        }
        return Digests.sha256Matches(ManagementAccess.presentedKey(authorization), adminKeySha256) ? Verdict.ALLOWED
                : Verdict.UNAUTHORIZED;
    }
}
