package io.jobgate.api;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.regex.Pattern;

import io.jobgate.common.ApiProblem;
import io.jobgate.job.JobStore;
import io.jobgate.tenant.Tenant;
import io.jobgate.tenant.TenantDirectory;
import io.vertx.core.Context;
import io.vertx.ext.web.RoutingContext;
import org.apache.camel.CamelContext;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /v1/jobs/{id}?wait=N}: the read answers as soon as the job is done (terminal, and a summary it
 * asked for too: {@link JobStore#terminalAmong}), or after N
 * seconds with the job as it is then, holding no thread while it waits.
 *
 * <p>A held call ({@link HeldRequests} says why ahead of the route): it checks the caller's key and job on a worker (a refused key, another
 * tenant's or no job, a terminal job, a bad {@code wait}: no waiting, the route answers as ever),
 * then parks the request — a timer on its event loop, an entry in a set — and passes it on to the
 * route when the job ended, the time is up, or the gateway stops. The route then reads the job and
 * answers exactly what {@code GET /v1/jobs/{id}} answers.
 *
 * <p>What wakes a waiter: one statement every {@code jobgate.api.waiting-reads-period-ms} asks
 * PostgreSQL which of this instance's waited-on jobs are terminal (primary-key lookups, all waiters in
 * one array), so a job ended by any instance — a worker in another process, a webhook, the sweeper, a
 * cancel — wakes its waiters within one period. No query while nobody waits. A waiter whose client
 * went away is dropped; beyond {@code jobgate.api.max-waiting-reads} waiters on this instance a read
 * answers at once (the job as it is), never refused.
 */
public final class WaitingReads extends ServiceSupport implements HeldRequests.Holder {

    private static final Logger LOG = LoggerFactory.getLogger(WaitingReads.class);

    /** The longest wait a read may ask for, in seconds. */
    public static final int MAX_SECONDS = 30;

    /** The path of {@code GET /v1/jobs/{jobId}} (the other calls under it have more segments). */
    private static final Pattern PATH = Pattern.compile("/v1/jobs/[^/]+");

    /** 1 to 30, plain digits (no sign, no leading zero, no unit). */
    private static final Pattern SECONDS = Pattern.compile("[1-9]|[12][0-9]|30");

    /** Why a wait ended, the label of {@code jobgate_api_waiting_reads_ended_total}. */
    enum Ended {
        FINAL, TIMED_OUT, DISCONNECTED, OVER_CAP, STOPPED;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final CamelContext context;
    private final TenantDirectory tenants;
    private final JobStore jobs;
    private final int maxWaiting;
    private final Duration period;
    private final Consumer<String> ended;
    private final Set<Waiter> waiters = ConcurrentHashMap.newKeySet();
    private final AtomicInteger waiting = new AtomicInteger();
    private volatile ScheduledExecutorService checks;
    private volatile boolean failing;

    /**
     * @param maxWaiting reads that may wait at once on this instance
     * @param period     how often PostgreSQL is asked which waited-on jobs ended
     * @param ended      told why each wait ended (metrics)
     */
    public WaitingReads(CamelContext context, TenantDirectory tenants, JobStore jobs, int maxWaiting, Duration period,
                        Consumer<String> ended) {
        this.context = context;
        this.tenants = tenants;
        this.jobs = jobs;
        this.maxWaiting = maxWaiting;
        this.period = period;
        this.ended = ended;
    }

    /**
     * The {@code wait} query parameter as the route reads it (a header; a list when repeated): empty
     * when absent, else its seconds; anything but one value of 1 to 30 is {@code 422 invalid_input}.
     */
    public static java.util.OptionalInt seconds(Object header) {
        if (header == null) {
            return java.util.OptionalInt.empty();
        }
        List<String> values = header instanceof java.util.Collection<?> many
                ? many.stream().map(String::valueOf).toList() : List.of(header.toString());
        int seconds = parse(values);
        if (seconds < 0) {
            throw ApiProblem.of(422, "invalid_input", "'wait' must be one whole number of seconds from 1 to " + MAX_SECONDS
                    + " (or left out to read the job at once).").with("field", "wait");
        }
        return seconds == 0 ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(seconds);
    }

    /** 0: no {@code wait}; -1: not one value of 1 to 30; else the seconds. */
    static int parse(List<String> values) {
        if (values.isEmpty()) {
            return 0;
        }
        if (values.size() != 1 || values.get(0) == null || !SECONDS.matcher(values.get(0)).matches()) {
            return -1;
        }
        return Integer.parseInt(values.get(0));
    }

    /** Reads waiting now on this instance. */
    public int waiting() {
        return waiting.get();
    }

    @Override
    protected void doStart() {
        checks = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "waiting-reads");
        checks.scheduleWithFixedDelay(this::check, period.toMillis(), period.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    protected void doStop() {
        releaseAll();
        if (checks != null) {
            context.getExecutorServiceManager().shutdown(checks);
            checks = null;
        }
    }

    @Override
    public void releaseAll() {
        for (Waiter w : waiters) {
            w.release(Ended.STOPPED);
        }
    }

    /** Waiting is possible: this service and the context run (not starting, not stopping). */
    private boolean open() {
        return isStarted() && context.getStatus().isStarted();
    }

    /** The Vert.x handler, on the request's event loop: waits only where the route would answer the job at once. */
    @Override
    public void handle(RoutingContext rc) {
        if (rc.request().method() != io.vertx.core.http.HttpMethod.GET || !PATH.matcher(rc.request().path()).matches()) {
            rc.next(); // any other call of any route
            return;
        }
        int seconds = parse(rc.queryParam("wait"));
        if (seconds <= 0 || !open()) {
            rc.next(); // no wait, or a bad one (the route answers 422), or stopping: the route as ever
            return;
        }
        String authorization = rc.request().getHeader("Authorization");
        String id = rc.pathParam("jobId");
        Context loop = rc.vertx().getOrCreateContext();
        rc.vertx().executeBlocking(() -> waitFor(authorization, id), false).onComplete(open -> {
            if (open.failed() || open.result() == null) {
                rc.next(); // a refused key, no such job of this tenant, a terminal job, a fault: the route answers
            } else {
                park(rc, loop, open.result(), seconds);
            }
        });
    }

    /** On a worker: the job to wait for, or null where the route answers at once (its 401 and 404 included). */
    private UUID waitFor(String authorization, String id) {
        Tenant tenant;
        UUID jobId;
        try {
            tenant = tenants.authenticate(authorization);
            jobId = UUID.fromString(id);
        } catch (RuntimeException refused) {
            return null;
        }
        // Not when it is done: terminal, and a summary it asked for done too (JobStore.terminalAmong).
        return jobs.find(tenant.id(), jobId).filter(job -> !job.status().terminal() || jobs.terminalAmong(List.of(jobId)).isEmpty())
                .map(job -> jobId).orElse(null);
    }

    /** On the event loop: holds the request until its job ends, its time is up, its client goes or the gateway stops. */
    private void park(RoutingContext rc, Context loop, UUID jobId, int seconds) {
        if (rc.response().closed()) {
            ended.accept(Ended.DISCONNECTED.label());
            return;
        }
        if (waiting.incrementAndGet() > maxWaiting) {
            waiting.decrementAndGet();
            ended.accept(Ended.OVER_CAP.label());
            rc.next(); // answered at once, as it is
            return;
        }
        Waiter waiter = new Waiter(rc, loop, jobId);
        waiters.add(waiter);
        waiter.timer = rc.vertx().setTimer(seconds * 1000L, t -> waiter.release(Ended.TIMED_OUT));
        rc.response().closeHandler(v -> waiter.release(Ended.DISCONNECTED));
        if (!open()) {
            waiter.release(Ended.STOPPED); // the stop's release may have run before this waiter was there
        }
    }

    /** On the scheduler's thread: one statement for every waiter of this instance. */
    private void check() {
        if (waiters.isEmpty()) {
            return;
        }
        try {
            Set<UUID> ids = new HashSet<>();
            for (Waiter w : waiters) {
                ids.add(w.jobId);
            }
            Set<UUID> terminal = new HashSet<>(jobs.terminalAmong(ids));
            if (failing) {
                failing = false;
                LOG.info("waiting reads: PostgreSQL answers again");
            }
            if (terminal.isEmpty()) {
                return;
            }
            for (Waiter w : waiters) {
                if (terminal.contains(w.jobId)) {
                    w.release(Ended.FINAL);
                }
            }
        } catch (RuntimeException e) {
            if (!failing) {
                failing = true; // once per outage: the waiters still end with their time
                LOG.warn("waiting reads: cannot ask PostgreSQL which jobs ended ({}); asking again every {} ms",
                        e.getMessage(), period.toMillis());
            }
        }
    }

    /** One parked read; released once, by whichever comes first. */
    private final class Waiter {
        final RoutingContext rc;
        final Context loop;
        final UUID jobId;
        final AtomicBoolean released = new AtomicBoolean();
        /** Set and read on the event loop only. */
        long timer = -1;

        Waiter(RoutingContext rc, Context loop, UUID jobId) {
            this.rc = rc;
            this.loop = loop;
            this.jobId = jobId;
        }

        void release(Ended why) {
            if (!released.compareAndSet(false, true)) {
                return;
            }
            waiters.remove(this);
            waiting.decrementAndGet();
            ended.accept(why.label());
            loop.runOnContext(v -> {
                if (timer >= 0) {
                    rc.vertx().cancelTimer(timer);
                }
                rc.response().closeHandler(null);
                if (why != Ended.DISCONNECTED && !rc.response().closed()) {
                    rc.next(); // the route reads the job now and answers it
                }
            });
        }
    }
}
