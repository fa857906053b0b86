package io.jobgate.infra;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.camel.CamelContext;
import org.apache.camel.StartupListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a start's time went, for operators: one line once the gateway is ready (its routes run, so
 * {@code /observe/health} answers 200), e.g. {@code jobgate ready in 3412 ms since the JVM started
 * (JVM and Camel Main 1100 ms, wiring 900 ms, Camel routes and HTTP server 1400 ms; parts side by
 * side: postgres 700 ms, schema 30 ms, broker 800 ms, s3 600 ms)}. The parts' figures overlap: they
 * start on threads of their own while the gateway is wired ({@link BackgroundStart}).
 */
public final class StartupTimes implements StartupListener {

    private static final Logger LOG = LoggerFactory.getLogger(StartupTimes.class);
    /** Only the JVM's first gateway can count from the JVM's start (tests start several in one JVM). */
    private static final AtomicBoolean FIRST_IN_JVM = new AtomicBoolean(true);

    private final boolean fromJvmStart = FIRST_IN_JVM.getAndSet(false);
    private final long wiringStartedNanos = System.nanoTime();
    private final long wiringStartedUptime = ManagementFactory.getRuntimeMXBean().getUptime();
    private final Map<String, Long> parts = new LinkedHashMap<>();
    private volatile long wiredNanos;
    private volatile long readyMillis = -1;

    private StartupTimes() {
    }

    /** Counts from now (the start of the gateway's wiring) and reports once the context has fully started. */
    public static StartupTimes install(CamelContext context) throws Exception {
        StartupTimes times = new StartupTimes();
        context.addStartupListener(times);
        return times;
    }

    /** A part's start took this long (on whichever thread it started). */
    public void part(String name, long millis) {
        synchronized (parts) {
            parts.put(name, millis);
        }
    }

    /** The gateway's own wiring ended: what follows is Camel's (routes, HTTP server, consumers). */
    public void wired() {
        wiredNanos = System.nanoTime();
    }

    /** Milliseconds from the JVM's start (or, for a later gateway in the same JVM, from its wiring) to ready; -1 before. */
    public long readyMillis() {
        return readyMillis;
    }

    @Override
    public void onCamelContextStarted(CamelContext context, boolean alreadyStarted) {
        // Reported at onCamelContextFullyStarted, once every route runs.
    }

    @Override
    public void onCamelContextFullyStarted(CamelContext context, boolean alreadyStarted) {
        long now = System.nanoTime();
        long wiring = ((wiredNanos == 0 ? now : wiredNanos) - wiringStartedNanos) / 1_000_000;
        long camel = wiredNanos == 0 ? 0 : (now - wiredNanos) / 1_000_000;
        long sinceWiring = (now - wiringStartedNanos) / 1_000_000;
        readyMillis = fromJvmStart ? wiringStartedUptime + sinceWiring : sinceWiring;
        List<String> figures = new ArrayList<>();
        synchronized (parts) {
            parts.forEach((name, millis) -> figures.add(name + " " + millis + " ms"));
        }
        // The last line of a start: ready, where the API is and what to try, then where the time went.
        LOG.info("jobgate ready in {} ms: {}; timings since {} ({}wiring {} ms, Camel routes and HTTP server {} ms{})",
                readyMillis, whereAndNext(context), fromJvmStart ? "the JVM started" : "its wiring began",
                fromJvmStart ? "JVM and Camel Main " + wiringStartedUptime + " ms, " : "", wiring, camel,
                figures.isEmpty() ? "" : "; parts side by side: " + String.join(", ", figures));
    }

    /** Where a newcomer goes next: the API's address (when this instance serves it) and a first command. */
    static String whereAndNext(CamelContext context) {
        String port = context.getPropertiesComponent().resolveProperty("camel.server.port").orElse("8080");
        String base = "http://localhost:" + port;
        boolean api = !"false".equals(context.getPropertiesComponent().resolveProperty("jobgate.runs.api").orElse("true"));
        if (!api) {
            return "no API on this instance (roles without api), health at " + base + "/observe/health";
        }
        return "API at " + base + "/v1 (its calls: " + base + "/openapi.json, health: " + base + "/observe/health)"
                + "; try 'java -jar target/jobgate.jar demo' in another terminal";
    }
}
