package io.jobgate.ops;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.apache.camel.CamelContext;
import org.apache.camel.health.HealthCheck;
import org.apache.camel.health.HealthCheckResultBuilder;
import org.apache.camel.impl.health.AbstractHealthCheck;

/**
 * A health check whose probe (a database query, a broker session, a bucket's head) runs on a thread
 * of its own every {@link #PERIOD}, never on the caller's: {@code /observe/health} is answered on the
 * HTTP server's event loop, and a probe of a server that is down waits for its timeouts (the pool's
 * 10 s for a connection, then the query's): while PostgreSQL was down, each health request held the
 * event loop for about 20 s, and every API request of this instance with it. Answered from the last
 * probe's result; a probe that has not finished for {@link #PERIOD} + {@link #STUCK} is itself the
 * answer (DOWN: the thing it asks does not answer).
 */
public abstract class BackgroundHealthCheck extends AbstractHealthCheck {

    /** How often each check probes. */
    static final Duration PERIOD = Duration.ofSeconds(2);
    /** How long a probe may run before its check answers DOWN without it. */
    static final Duration STUCK = Duration.ofSeconds(8);

    /** The probes of every check: a few daemon threads (a stuck probe holds one, the others go on). */
    private static final ScheduledExecutorService PROBES = Executors.newScheduledThreadPool(4, r -> {
        Thread t = new Thread(r, "health-probe");
        t.setDaemon(true);
        return t;
    });

    /** How long a request waits for the first probe (only the first requests after a start). */
    static final Duration FIRST_WAIT = Duration.ofSeconds(2);

    private final java.util.concurrent.CountDownLatch firstProbe = new java.util.concurrent.CountDownLatch(1);
    private volatile HealthCheck.Result last;
    private volatile long lastAtNanos;
    private volatile long probingSinceNanos;
    private volatile ScheduledFuture<?> schedule;
    private volatile boolean contextRan;
    private volatile long startedNanos;

    protected BackgroundHealthCheck(String group, String id) {
        super(group, id);
    }

    /** The probe, off the event loop: sets the builder's state, message, error and details. */
    protected abstract void probe(HealthCheckResultBuilder builder);

    /**
     * Starts probing now: once the gateway has started (its broker, bucket and routes are there), or
     * at the first request. Until the first probe has finished a request waits for it, at most
     * {@link #FIRST_WAIT}: once per check, at start.
     */
    public final synchronized BackgroundHealthCheck startProbing() {
        if (schedule == null) {
            startedNanos = System.nanoTime();
            schedule = PROBES.scheduleWithFixedDelay(this::probeOnce, 0, PERIOD.toMillis(), TimeUnit.MILLISECONDS);
        }
        return this;
    }

    private void probeOnce() {
        CamelContext context = getCamelContext();
        if (context != null && context.isStarted()) {
            contextRan = true;
        }
        // Not before it ran: a context not started yet counts as stopped too.
        if (contextRan && (context.isStopping() || context.isStopped())) {
            ScheduledFuture<?> s = schedule;
            if (s != null) {
                s.cancel(false); // its gateway is gone: nothing left to probe
            }
            return;
        }
        probingSinceNanos = System.nanoTime();
        HealthCheckResultBuilder builder = HealthCheckResultBuilder.on(this);
        try {
            probe(builder);
        } catch (RuntimeException e) {
            builder.message("the probe failed: " + e.getMessage()).error(e).down();
        }
        if (builder.state() == null) {
            builder.unknown();
        }
        last = builder.build();
        lastAtNanos = System.nanoTime();
        probingSinceNanos = 0;
        firstProbe.countDown();
    }

    @Override
    protected final void doCall(HealthCheckResultBuilder builder, Map<String, Object> options) {
        startProbing();
        long firstLeft = FIRST_WAIT.toNanos() - (System.nanoTime() - startedNanos);
        if (last == null && firstLeft > 0) {
            try {
                firstProbe.await(firstLeft, TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        HealthCheck.Result result = last;
        long since = probingSinceNanos;
        if (since != 0 && System.nanoTime() - since > STUCK.toNanos()) {
            builder.message("no answer for " + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - since) + " s").down();
            return;
        }
        if (result == null) {
            // The first probe has not finished within FIRST_WAIT: whatever it asks does not answer.
            builder.message("first probe not finished").down();
            return;
        }
        builder.state(result.getState());
        result.getMessage().ifPresent(builder::message);
        result.getError().ifPresent(builder::error);
        builder.details(result.getDetails());
        builder.detail("probed.ms.ago", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastAtNanos));
    }
}
