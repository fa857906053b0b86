package io.jobgate.hawtio;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * Hawtio's own Jolokia ({@code /hawtio/jolokia}, replaced through {@code hawtio/override-web.xml})
 * forwarded to the gateway's {@code /observe/jolokia}. So the console opens on the gateway's MBeans
 * with no connection to set up in the browser, and the admin key, when the gateway needs it, stays
 * in this process: the browser never sees it. What may be read or run is the gateway's policy.
 */
public final class JolokiaForward extends HttpServlet {

    /** Context init parameters the command sets: where Jolokia is, and the Authorization to send. */
    static final String TARGET = "jobgate.jolokia-url";
    static final String AUTHORIZATION = "jobgate.jolokia-authorization";

    private transient HttpClient http;
    private String target;
    private String authorization;

    @Override
    public void init() {
        target = getServletContext().getInitParameter(TARGET);
        authorization = getServletContext().getInitParameter(AUTHORIZATION);
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String method = request.getMethod();
        if (!method.equals("GET") && !method.equals("POST")) {
            response.sendError(HttpServletResponse.SC_METHOD_NOT_ALLOWED);
            return;
        }
        // A page of another site in the operator's browser could post here (the console has no login):
        // browsers name the page's origin, and only the console's own pages may act through it.
        String origin = request.getHeader("Origin");
        if (origin != null && !sameOrigin(origin, request)) {
            response.sendError(HttpServletResponse.SC_FORBIDDEN, "cross-origin request refused");
            return;
        }
        // The raw path after /jolokia: Jolokia's GET syntax escapes inside the path.
        String rest = request.getRequestURI().substring(request.getContextPath().length() + request.getServletPath().length());
        String query = request.getQueryString();
        HttpRequest.Builder forward = HttpRequest.newBuilder(URI.create(target + rest + (query == null ? "" : "?" + query)))
                .timeout(Duration.ofSeconds(30));
        if (method.equals("POST")) {
            forward.POST(HttpRequest.BodyPublishers.ofByteArray(request.getInputStream().readAllBytes()));
            if (request.getContentType() != null) {
                forward.header("Content-Type", request.getContentType());
            }
        }
        if (authorization != null && !authorization.isEmpty()) {
            forward.header("Authorization", authorization);
        }
        HttpResponse<byte[]> answer;
        try {
            answer = http.send(forward.build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            response.sendError(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
            return;
        } catch (IOException e) {
            response.sendError(HttpServletResponse.SC_BAD_GATEWAY, "the gateway's Jolokia (" + target + ") does not answer: " + e);
            return;
        }
        response.setStatus(answer.statusCode());
        answer.headers().firstValue("Content-Type").ifPresent(response::setContentType);
        response.getOutputStream().write(answer.body());
    }

    static boolean sameOrigin(String origin, HttpServletRequest request) {
        String host = request.getHeader("Host");
        return host != null && (origin.equalsIgnoreCase("http://" + host) || origin.equalsIgnoreCase("https://" + host));
    }
}
