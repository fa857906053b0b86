package io.jobgate.console;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

import io.jobgate.api.HttpReply;
import io.jobgate.common.ApiProblem;
import org.apache.camel.Exchange;

/**
 * The console's actions as the browser sends them (docs/console.md, "Actions"): a form, confirmed first on the page,
 * posted by htmx. Only the console's own pages can post one: a request must say it comes from htmx ({@code HX-Request},
 * a header no cross-site form can set without a preflight the gateway never grants) and, where the browser says where it
 * comes from ({@code Origin}, {@code Sec-Fetch-Site}), from this origin; else {@code 403 cross_site_refused}, as a
 * browser sends the operator's Basic credentials to any site's form. Who acts is the form's operator, else the name
 * the operator signed in with. Done, the page is loaded again ({@code HX-Redirect}) and shows what changed.
 */
public final class ConsoleActions {

    private final OperatorActions actions;
    private final Failures failures;

    public ConsoleActions(OperatorActions actions, Failures failures) {
        this.actions = actions;
        this.failures = failures;
    }

    /** {@code POST /console/jobs/{jobId}/cancel}. */
    public void cancel(Exchange exchange) {
        Map<String, String> form = form(exchange);
        UUID id = JobsAdmin.jobId(exchange);
        done(exchange, actions.cancel(id, who(exchange, form)), "/console/jobs/" + id);
    }

    /** {@code POST /console/jobs/{jobId}/redrive}, {@code force=true} past the job's lifetime cap too. */
    public void redrive(Exchange exchange) {
        Map<String, String> form = form(exchange);
        UUID id = JobsAdmin.jobId(exchange);
        done(exchange, actions.redrive(id, who(exchange, form), "true".equals(form.get("force"))), "/console/jobs/" + id);
    }

    /** {@code POST /console/jobs/{jobId}/reconcile}. */
    public void reconcile(Exchange exchange) {
        Map<String, String> form = form(exchange);
        UUID id = JobsAdmin.jobId(exchange);
        done(exchange, actions.reconcile(id, who(exchange, form)), "/console/jobs/" + id);
    }

    /** {@code POST /console/deliveries/redrive}, {@code tenant} for one tenant's. */
    public void redriveDeliveries(Exchange exchange) {
        Map<String, String> form = form(exchange);
        String tenant = form.get("tenant");
        done(exchange, actions.redriveDeliveries(tenant == null || tenant.isBlank() ? null : tenant.strip(), who(exchange, form)),
                "/console/failures");
    }

    /** {@code POST /console/failures/redrive}: the failed jobs of one group ({@code category, message, since}) redriven. */
    public void redriveGroup(Exchange exchange) {
        Map<String, String> form = form(exchange);
        java.time.Instant since = ConsolePages.since(form.get("since"));
        done(exchange, failures.redriveGroup(form.get("category"), form.get("message"), since, who(exchange, form)),
                "/console/failures");
    }

    /** {@code POST /console/canaries/{provider}/{act}}: stop, promote or restart. */
    public void canary(Exchange exchange) {
        Map<String, String> form = form(exchange);
        String provider = exchange.getIn().getHeader("provider", String.class);
        String act = exchange.getIn().getHeader("act", String.class);
        done(exchange, actions.canary(provider, act, who(exchange, form)), "/console");
    }

    /** The form's fields, once the request is known to come from the console's own page. */
    private static Map<String, String> form(Exchange exchange) {
        sameOrigin(exchange);
        Map<String, String> fields = new HashMap<>();
        String body = exchange.getIn().getBody(String.class);
        if (body != null && !body.isBlank()) {
            for (String pair : body.split("&")) {
                int eq = pair.indexOf('=');
                String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                fields.put(name, eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        for (String name : new String[] {"operator", "reason", "force", "tenant", "category", "message", "since"}) {
            // Where the HTTP layer read the form into headers already.
            String value = exchange.getIn().getHeader(name, String.class);
            if (value != null && !fields.containsKey(name)) {
                fields.put(name, value);
            }
        }
        return fields;
    }

    static void sameOrigin(Exchange exchange) {
        String htmx = exchange.getIn().getHeader("HX-Request", String.class);
        String fetchSite = exchange.getIn().getHeader("Sec-Fetch-Site", String.class);
        String origin = exchange.getIn().getHeader("Origin", String.class);
        String host = exchange.getIn().getHeader("Host", String.class);
        boolean ours = "true".equals(htmx)
                && (fetchSite == null || fetchSite.equals("same-origin"))
                && (origin == null || (host != null && hostOf(origin).equalsIgnoreCase(host)));
        if (!ours) {
            throw ApiProblem.of(403, "cross_site_refused", "An action is taken from the console's own page only.");
        }
    }

    private static String hostOf(String origin) {
        try {
            URI uri = URI.create(origin);
            return uri.getPort() < 0 ? String.valueOf(uri.getHost()) : uri.getHost() + ":" + uri.getPort();
        } catch (IllegalArgumentException e) {
            return "";
        }
    }

    private static OperatorActions.Who who(Exchange exchange, Map<String, String> form) {
        String operator = form.get("operator");
        if (operator == null || operator.isBlank()) {
            operator = ConsolePages.signedInAs(exchange);
        }
        return new OperatorActions.Who(operator, form.get("reason"));
    }

    private static void done(Exchange exchange, String outcome, String then) {
        HttpReply.write(exchange, 200, "text/html; charset=utf-8", "<p role=\"status\">Done: " + escape(outcome) + "</p>",
                Map.of("HX-Redirect", then, "Cache-Control", "no-store"));
    }

    static String escape(String text) {
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
