package io.jobgate.hawtio;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Base64;
import java.util.Comparator;
import java.util.stream.Stream;

import org.eclipse.jetty.ee10.webapp.WebAppContext;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandler;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;
import org.eclipse.jetty.util.Callback;

/**
 * {@code java -jar jobgate.jar hawtio [--port 8081] [--host 127.0.0.1] [--gateway http://127.0.0.1:8080]}:
 * the Hawtio console (the hawtio war, built with its code editor inside: src/build/hawtio-webapp.sh)
 * in an embedded Jetty 12, showing the gateway's routes through its Jolokia ({@link JolokiaForward}).
 * Offline: every script and editor asset comes from the jar.
 */
public final class HawtioCommand {

    /** The environment variable with the admin key, for a gateway that does not trust this host. */
    public static final String ADMIN_KEY_ENV = "JOBGATE_ADMIN_API_KEY";

    /** What the command was given. */
    public record Options(String host, int port, URI gateway, String adminKey) {

        static Options parse(String[] args, String adminKey) {
            String host = "127.0.0.1";
            int port = 8081;
            URI gateway = URI.create("http://127.0.0.1:8080");
            for (int i = 0; i < args.length; i += 2) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value after " + args[i]);
                }
                switch (args[i]) {
                    case "--port" -> port = Integer.parseInt(args[i + 1]);
                    case "--host" -> host = args[i + 1];
                    case "--gateway" -> gateway = URI.create(args[i + 1].replaceAll("/+$", ""));
                    default -> throw new IllegalArgumentException("unknown option " + args[i]);
                }
            }
            return new Options(host, port, gateway, adminKey);
        }

        String jolokiaUrl() {
            return gateway + "/observe/jolokia";
        }
    }

    private HawtioCommand() {
    }

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args, System.getenv(ADMIN_KEY_ENV));
        Running running = start(options);
        Runtime.getRuntime().addShutdownHook(new Thread(running::close));
        System.out.println("Hawtio on http://" + options.host() + ":" + running.port() + "/hawtio/ showing "
                + options.jolokiaUrl() + (options.adminKey() == null ? "" : " (with the admin key)") + "; Ctrl-C stops it");
        running.server().join();
    }

    /** A started console: its server, the port it listens on, and its work folder (deleted on close). */
    public record Running(Server server, int port, Path work) implements AutoCloseable {
        @Override
        public void close() {
            try {
                server.stop();
            } catch (Exception e) {
                System.err.println("hawtio: stopping Jetty: " + e);
            }
            try (Stream<Path> files = Files.walk(work)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException ignored) {
                // a temporary folder left behind
            }
        }
    }

    public static Running start(Options options) throws Exception {
        // The console trusts whoever reaches it (so it listens on loopback by default, docs/hawtio.md);
        // its proxy to other Jolokia agents stays off: it shows this gateway only.
        System.setProperty("hawtio.authenticationEnabled", System.getProperty("hawtio.authenticationEnabled", "false"));
        System.setProperty("hawtio.disableProxy", "true");
        Path work = Files.createTempDirectory("jobgate-hawtio");
        Path war = copy("/hawtio/hawtio.war", work.resolve("hawtio.war"));
        Path override = copy("/hawtio/override-web.xml", work.resolve("override-web.xml"));

        WebAppContext webapp = new WebAppContext();
        webapp.setContextPath("/hawtio");
        webapp.setWar(war.toString());
        webapp.setOverrideDescriptor(override.toString());
        Files.createDirectories(work.resolve("jetty"));
        webapp.setTempDirectory(work.resolve("jetty").toFile());
        webapp.setInitParameter(JolokiaForward.TARGET, options.jolokiaUrl());
        if (options.adminKey() != null && !options.adminKey().isBlank()) {
            // HTTP Basic with the key as password: what the gateway's ManagementAccess accepts.
            webapp.setInitParameter(JolokiaForward.AUTHORIZATION, "Basic " + Base64.getEncoder()
                    .encodeToString(("hawtio:" + options.adminKey().trim()).getBytes(StandardCharsets.UTF_8)));
        }

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(options.host());
        connector.setPort(options.port());
        server.addConnector(connector);
        server.setHandler(new ContextHandlerCollection(webapp, new ContextHandler(new ToConsole(), "/")));
        server.start();
        if (!webapp.isAvailable()) {
            server.stop();
            throw new IllegalStateException("the Hawtio web application did not start (see the log above)");
        }
        return new Running(server, connector.getLocalPort(), work);
    }

    private static Path copy(String resource, Path to) throws IOException {
        try (InputStream in = HawtioCommand.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException(resource + " is not in the jar (built by src/build/hawtio-webapp.sh)");
            }
            Files.copy(in, to, StandardCopyOption.REPLACE_EXISTING);
        }
        return to;
    }

    /** {@code /} and anything outside the console: to the console. */
    private static final class ToConsole extends Handler.Abstract {
        @Override
        public boolean handle(Request request, Response response, Callback callback) {
            Response.sendRedirect(request, response, callback, "/hawtio/");
            return true;
        }
    }
}
