package io.jobgate.api;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.jobgate.common.Json;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.workers.WorkerTasks;
import io.vertx.core.Context;
import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.RoutingContext;
import org.apache.camel.CamelContext;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A worker's long poll ({@code POST /v1/workers/{member}/leases} with {@code "wait_seconds": N}, docs/workers.md): when
 * its member has no task to lease, the call waits until one does, or N seconds, holding no thread and no database
 * connection meanwhile — a held call ({@link HeldRequests}), so thousands of idle workers cost an entry in a set each.
 *
 * <p>Which polls wait: this instance keeps, per member (and revision its workers run), how many tasks it believes
 * there are to lease: raised by each task written here and set by the periodic count, lowered as polls go to lease
 * them, and set to none when a lease finds fewer than it asked for (unless a task was written meanwhile). A poll (its
 * key and body checked here as the route checks them; anything else goes to the route, which answers or refuses it)
 * goes to the route only while that count covers it, taking its share; every other waits. So workers that finish a
 * task and ask again do not each cost a statement that finds nothing. A parked poll whose time is up answers an empty
 * list itself, with no statement; until a member's first lease the count is unknown, and polls go to the route.
 *
 * <p>What wakes waiters: a task written on this instance ({@code PullAdapter}'s submit) at once; and, while anyone
 * waits, one statement every {@code jobgate.workers.lease-waits-period-ms} counts the waited-on members' tasks to
 * lease (written by another instance, or leased under a lease that ran out). Either wakes the oldest waiters of the
 * member, as many as the tasks cover; a woken poll goes to the route and leases. Beyond
 * {@code jobgate.workers.max-waiting-leases} waiters a poll goes to the route at once.
 *
 * <p>Most often no poll goes to the route at all: a task written here is leased, as it is written, to the
 * longest-waiting poll whose worker may render it ({@link #take}, the member's submit), and that poll is answered with
 * it — no lease call, no wake, no scan.
 */
public final class LeaseWaits extends ServiceSupport implements HeldRequests.Holder, io.jobgate.workers.WaitingWorkers {

    private static final Logger LOG = LoggerFactory.getLogger(LeaseWaits.class);

    /** The longest wait a poll may ask for, in seconds. */
    public static final int MAX_SECONDS = 30;

    private static final Pattern PATH = Pattern.compile("/v1/workers/([^/]+)/leases");
    /** A member's count before its first lease: polls go to the route. */
    private static final int UNKNOWN = Integer.MIN_VALUE;
    private static final String NO_LEASES = "{\"leases\":[]}";
    /** A poll with less time left than this is not handed a task as it is written (it leases through the route, or times out). */
    private static final long HANDOFF_MARGIN_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Why a wait ended, the label of {@code jobgate_worker_lease_waits_ended_total}. */
    enum Ended {
        TASKS, HANDED, TIMED_OUT, DISCONNECTED, OVER_CAP, STOPPED;

        String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private final CamelContext context;
    private final ProviderCatalog providers;
    private final WorkerTasks tasks;
    private final io.jobgate.workers.WorkersSeen seen;
    private final int maxWaiting;
    private final Duration period;
    private final Consumer<String> ended;
    private final Map<String, Member> members = new ConcurrentHashMap<>();
    private final AtomicInteger waiting = new AtomicInteger();
    private volatile ScheduledExecutorService checks;
    private volatile boolean failing;

    /**
     * @param maxWaiting polls that may wait at once on this instance
     * @param period     how often PostgreSQL is asked which waited-on members have tasks
     * @param ended      told why each wait ended (metrics)
     */
    public LeaseWaits(CamelContext context, ProviderCatalog providers, WorkerTasks tasks, io.jobgate.workers.WorkersSeen seen,
                      int maxWaiting, Duration period, Consumer<String> ended) {
        this.context = context;
        this.providers = providers;
        this.tasks = tasks;
        this.seen = seen;
        this.maxWaiting = maxWaiting;
        this.period = period;
        this.ended = ended;
    }

    /** Polls waiting now on this instance. */
    public int waiting() {
        return waiting.get();
    }

    /** Before the route's lease of a worker running {@code revision} (null: the stable one): what it saw, for {@link #leased}. */
    public long beforeLease(String member, String revision) {
        return member(member, revision).woken.get();
    }

    /**
     * After the route's lease, begun at {@code seen} ({@link #beforeLease}): fewer tasks than asked means none is left,
     * unless a task was written meanwhile (then the member is not idle: the next poll leases at once).
     */
    public void leased(String member, String revision, long seen, int asked, int got) {
        Member m = member(member, revision);
        if (got < asked && m.woken.get() == seen) {
            m.available.set(0); // none left (a task written since then raised the count, and is not lost)
        }
    }

    /**
     * {@code count} tasks of {@code member} wait to be leased: the member is not idle, the oldest waiters lease them —
     * of each revision its workers run, since the tasks' revisions are not known here (a worker of another revision
     * finds none, and waits again).
     */
    public void tasksWaiting(String member, int count) {
        for (Member m : members.values()) {
            if (m.name.equals(member)) {
                m.woken.incrementAndGet();
                m.available.updateAndGet(a -> a == UNKNOWN ? UNKNOWN : a + count);
                wake(m);
            }
        }
    }

    /** The periodic count: {@code count} tasks of {@code member} to lease now, whatever this instance believed. */
    private void counted(String member, int count) {
        for (Member m : members.values()) {
            if (m.name.equals(member)) {
                m.woken.incrementAndGet();
                m.available.set(count);
                wake(m);
            }
        }
    }

    /** Releases the oldest waiters while the count covers them, each taking its share. */
    private void wake(Member m) {
        Waiter w;
        while ((w = m.waiters.peekFirst()) != null && m.take(w.max)) {
            if (!w.release(Ended.TASKS)) {
                m.waiters.remove(w); // ended meanwhile (its time, its client): its share goes to the next
                m.available.addAndGet(w.max);
            }
        }
    }

    /** What this instance knows of the member's tasks for workers of {@code revision} (null: its stable revisions). */
    private Member member(String name, String revision) {
        return members.computeIfAbsent(name + "\u0000" + (revision == null ? "" : revision), k -> new Member(name, revision));
    }

    /**
     * The longest-waiting poll of {@code member} here whose worker may render a task of {@code revisionLabel}: a
     * worker naming that revision, or one naming none when it is one of the member's stable revisions (any worker when
     * the task's revision is unknown), as the lease call chooses ({@link WorkersApi#labels}).
     */
    @Override
    public Poll take(String member, String revisionLabel) {
        if (!open()) {
            return null;
        }
        var provider = WorkersApi.pullMember(providers, member);
        if (provider.isEmpty()) {
            return null;
        }
        // The member's waiters whose workers may render the task, each revision's once.
        List<Member> serving = new java.util.ArrayList<>();
        for (Member m : members.values()) {
            if (m.name.equals(member) && (revisionLabel == null || WorkersApi.labels(provider.get(), m.revision).contains(revisionLabel))) {
                serving.add(m);
            }
        }
        // A poll about to time out is passed over: answered after its client gave up, its task would wait for its lease to run out.
        long soonest = System.nanoTime() + HANDOFF_MARGIN_NANOS;
        Waiter oldest = null;
        for (Member m : serving) {
            Waiter first = m.waiters.peekFirst();
            if (first != null && first.until - soonest > 0 && (oldest == null || first.since < oldest.since)) {
                oldest = first;
            }
        }
        if (oldest != null && oldest.take()) {
            return oldest;
        }
        // Taken meanwhile by its time, its client or another task: look once more, else the task waits to be leased.
        for (Member m : serving) {
            for (Waiter w : m.waiters) {
                if (w.until - soonest > 0 && w.take()) {
                    return w;
                }
            }
        }
        return null;
    }

    @Override
    protected void doStart() {
        checks = context.getExecutorServiceManager().newSingleThreadScheduledExecutor(this, "lease-waits");
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
        for (Member m : members.values()) {
            Waiter w;
            while ((w = m.waiters.pollFirst()) != null) {
                w.release(Ended.STOPPED);
            }
        }
    }

    /** Waiting is possible: this service and the context run (not starting, not stopping). */
    private boolean open() {
        return isStarted() && context.getStatus().isStarted();
    }

    /** The Vert.x handler, on the request's event loop: parks a valid poll of an idle member, passes on all else. */
    @Override
    public void handle(RoutingContext rc) {
        Matcher path = rc.request().method() == HttpMethod.POST ? PATH.matcher(rc.request().path()) : null;
        if (path == null || !path.matches() || !open()) {
            rc.next(); // any other call, or stopping
            return;
        }
        String name = path.group(1);
        WorkersApi.LeaseRequest poll = poll(name, rc);
        if (poll == null || poll.waitSeconds() == 0 || member(name, poll.revision()).take(poll.max())) {
            rc.next(); // the route answers: it leases (its share taken), or refuses what is wrong
            return;
        }
        if (waiting.incrementAndGet() > maxWaiting) {
            waiting.decrementAndGet();
            ended.accept(Ended.OVER_CAP.label());
            rc.next();
            return;
        }
        Member m = member(name, poll.revision());
        Waiter waiter = new Waiter(m, rc, rc.vertx().getOrCreateContext(), poll.max(), poll.workerId(), poll.waitSeconds());
        m.waiters.addLast(waiter);
        waiter.timer = rc.vertx().setTimer(poll.waitSeconds() * 1000L, t -> waiter.release(Ended.TIMED_OUT));
        rc.response().closeHandler(v -> waiter.release(Ended.DISCONNECTED));
        if (!open()) {
            waiter.release(Ended.STOPPED); // a stop's release that ran before this one was there
        } else {
            wake(m); // a task written between the look above and the park: its wake found no waiter yet
        }
    }

    /** The poll, if its key is its member's and its body one the route takes; else null (the route answers). */
    private WorkersApi.LeaseRequest poll(String name, RoutingContext rc) {
        try {
            if (!WorkersApi.pullMember(providers, name).map(p -> WorkersApi.keyMatches(p, rc.request().getHeader("Authorization")))
                    .orElse(false)) {
                return null;
            }
            var body = rc.body();
            return body == null || body.buffer() == null ? null
                    : WorkersApi.LeaseRequest.of(Json.parseObject(body.buffer().getBytes()));
        } catch (RuntimeException refused) {
            return null;
        }
    }

    /**
     * On the scheduler's thread: one statement for every member someone waits on here, and the waiting workers recorded
     * as seen (a worker waiting is alive, though its calls reach no statement; one statement for those past its
     * throttle).
     */
    private void check() {
        try {
            Map<String, Set<String>> waitedOn = new java.util.HashMap<>();
            for (Member m : members.values()) {
                for (Waiter w : m.waiters) {
                    waitedOn.computeIfAbsent(m.name, n -> new HashSet<>()).add(w.workerId);
                }
            }
            if (waitedOn.isEmpty()) {
                return;
            }
            seen.sawWaiting(waitedOn);
            Map<String, Integer> counts = tasks.leasableAmong(waitedOn.keySet());
            waitedOn.keySet().forEach(name -> counted(name, counts.getOrDefault(name, 0)));
            if (failing) {
                failing = false;
                LOG.info("lease waits: PostgreSQL answers again");
            }
        } catch (RuntimeException e) {
            if (!failing) {
                failing = true; // once per outage: the waiters still end with their time
                LOG.warn("lease waits: cannot ask PostgreSQL which members have tasks ({}); asking again every {} ms",
                        e.getMessage(), period.toMillis());
            }
        }
    }

    /** What this instance knows of a member, for the workers of one revision: whether its tasks ran out, and the polls waiting for more. */
    private static final class Member {
        final String name;
        /** The revision its workers name; null: the member's stable ones. */
        final String revision;
        /** Counts the wakes: a task written, or the periodic count. */
        final AtomicLong woken = new AtomicLong();
        /** The tasks this instance believes there are to lease and no poll has gone to take; {@link #UNKNOWN} at first. */
        final AtomicInteger available = new AtomicInteger(UNKNOWN);
        final ConcurrentLinkedDeque<Waiter> waiters = new ConcurrentLinkedDeque<>();

        Member(String name, String revision) {
            this.name = name;
            this.revision = revision;
        }

        /** Takes a poll's share of the count ({@code max} at most): false when the count is none. */
        boolean take(int max) {
            while (true) {
                int a = available.get();
                if (a == UNKNOWN) {
                    return true;
                }
                if (a <= 0) {
                    return false;
                }
                if (available.compareAndSet(a, a - Math.min(a, max))) {
                    return true;
                }
            }
        }
    }

    /** One parked poll; released once, by whichever comes first (or taken by a task and then answered with it). */
    private final class Waiter implements Poll {
        final Member member;
        final RoutingContext rc;
        final Context loop;
        final int max;
        final String workerId;
        final AtomicBoolean released = new AtomicBoolean();
        /** When it parked (nanoTime): the oldest poll is handed a task first. */
        final long since = System.nanoTime();
        /** When its time is up (nanoTime). */
        final long until;
        /** Set and read on the event loop only. */
        long timer = -1;

        Waiter(Member member, RoutingContext rc, Context loop, int max, String workerId, int waitSeconds) {
            this.until = since + TimeUnit.SECONDS.toNanos(waitSeconds);
            this.member = member;
            this.rc = rc;
            this.loop = loop;
            this.max = max;
            this.workerId = workerId;
        }

        @Override
        public String workerId() {
            return workerId;
        }

        /**
         * Ends its wait, once: by a task being written (then {@link #leased} or {@link #giveBack} answers it) or by
         * {@link #release}. False when something else ended it first.
         */
        boolean take() {
            if (!released.compareAndSet(false, true)) {
                return false;
            }
            member.waiters.remove(this);
            waiting.decrementAndGet();
            return true;
        }

        @Override
        public void leased(String answer) {
            ended.accept(Ended.HANDED.label());
            loop.runOnContext(v -> {
                if (settle()) {
                    rc.response().setStatusCode(200).putHeader("Content-Type", HttpReply.JSON).end(answer);
                }
                // else its client went: the task's lease runs out unrenewed, and the task is leased again
            });
        }

        @Override
        public void giveBack() {
            ended.accept(Ended.TASKS.label());
            loop.runOnContext(v -> {
                if (settle()) {
                    rc.next(); // the route leases what there is
                }
            });
        }

        /** On the event loop, once the wait is over: its timer and close handler gone; false when the client went. */
        private boolean settle() {
            if (timer >= 0) {
                rc.vertx().cancelTimer(timer);
            }
            rc.response().closeHandler(null);
            return !rc.response().closed();
        }

        boolean release(Ended why) {
            if (!take()) {
                return false;
            }
            ended.accept(why.label());
            loop.runOnContext(v -> {
                if (!settle() || why == Ended.DISCONNECTED) {
                    return;
                }
                if (why == Ended.TIMED_OUT) {
                    // Nothing came: answered here, as the route would (no statement for a poll that found nothing).
                    rc.response().setStatusCode(200).putHeader("Content-Type", HttpReply.JSON).end(NO_LEASES);
                } else {
                    rc.next(); // the route leases now
                }
            });
            return true;
        }
    }
}
