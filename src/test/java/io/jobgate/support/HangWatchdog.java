package io.jobgate.support;

import java.io.IOException;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * A test class that runs past {@code jobgate.test.hang-minutes} (10 unless set) is hung: this listener
 * writes what every thread is doing and what the test database's sessions wait on to
 * {@code target/test-hangs/<class>.txt} (and to the class's output), then ends the JVM. The build then
 * fails within minutes with the reason on record, instead of at CI's outer time limit with nothing: a run
 * once waited 80 minutes in one class and printed only its name.
 * Registered for the whole test run through {@code META-INF/services}, in surefire's and failsafe's JVMs.
 */
public final class HangWatchdog implements TestExecutionListener {

    /** The exit status of a JVM ended by this watchdog (surefire reports the fork as crashed). */
    static final int HUNG = 97;

    private final Duration limit;
    private final Path reports;
    private final Runnable end;
    private final Map<String, ScheduledFuture<?>> running = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "test-hang-watchdog");
        t.setDaemon(true);
        return t;
    });

    /** As the JUnit Platform loads it: the limit from the system property, the JVM halted at a hang. */
    public HangWatchdog() {
        this(Duration.ofMinutes(Long.getLong("jobgate.test.hang-minutes", 10)),
                Path.of(System.getProperty("jobgate.test.hang-dir", "target/test-hangs")), () -> Runtime.getRuntime().halt(HUNG));
    }

    HangWatchdog(Duration limit, Path reports, Runnable end) {
        this.limit = limit;
        this.reports = reports;
        this.end = end;
    }

    @Override
    public void executionStarted(TestIdentifier test) {
        className(test).ifPresent(name -> running.put(test.getUniqueId(),
                timer.schedule(() -> hung(name), limit.toMillis(), TimeUnit.MILLISECONDS)));
    }

    @Override
    public void executionFinished(TestIdentifier test, TestExecutionResult result) {
        ScheduledFuture<?> watch = running.remove(test.getUniqueId());
        if (watch != null) {
            watch.cancel(false);
        }
    }

    private static java.util.Optional<String> className(TestIdentifier test) {
        return test.getSource().filter(ClassSource.class::isInstance).map(s -> ((ClassSource) s).getClassName());
    }

    private void hung(String className) {
        String report = report(className, limit);
        System.err.println(report);
        try {
            Files.createDirectories(reports);
            Files.writeString(reports.resolve(className + ".txt"), report);
        } catch (IOException | RuntimeException e) {
            System.err.println("HangWatchdog: could not write the report: " + e);
        }
        end.run();
    }

    /** What a hung run is doing: every thread's full stack and locks, and the database's sessions. */
    static String report(String className, Duration limit) {
        StringBuilder out = new StringBuilder();
        out.append("HUNG: ").append(className).append(" ran past ").append(limit.toSeconds() >= 60 ? limit.toMinutes() + " min" : limit.toMillis() + " ms").append(" at ")
                .append(Instant.now()).append("; the JVM is ended (exit ").append(HUNG).append(")\n\n== threads\n");
        for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
            thread(out, t);
        }
        out.append("\n== database sessions\n");
        sessions(out);
        return out.toString();
    }

    private static void thread(StringBuilder out, ThreadInfo t) {
        out.append('"').append(t.getThreadName()).append("\" ").append(t.isDaemon() ? "daemon " : "")
                .append(t.getThreadState());
        if (t.getLockName() != null) {
            out.append(" on ").append(t.getLockName());
        }
        if (t.getLockOwnerName() != null) {
            out.append(" owned by \"").append(t.getLockOwnerName()).append('"');
        }
        out.append('\n');
        StackTraceElement[] stack = t.getStackTrace();
        for (int i = 0; i < stack.length; i++) {
            out.append("\tat ").append(stack[i]).append('\n');
            for (MonitorInfo m : t.getLockedMonitors()) {
                if (m.getLockedStackDepth() == i) {
                    out.append("\t- locked ").append(m).append('\n');
                }
            }
        }
        for (LockInfo l : t.getLockedSynchronizers()) {
            out.append("\t- holds ").append(l).append('\n');
        }
        out.append('\n');
    }

    /** The sessions of the test database that are not idle, with what blocks them; bounded by timeouts. */
    private static void sessions(StringBuilder out) {
        String url = TestDatabase.urlIfStarted();
        if (url == null) {
            out.append("(no test database was started)\n");
            return;
        }
        Properties p = new Properties();
        p.setProperty("user", TestDatabase.user());
        p.setProperty("password", TestDatabase.password());
        p.setProperty("connectTimeout", "5");
        p.setProperty("socketTimeout", "10");
        try (Connection c = DriverManager.getConnection(url, p); Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pid, usename, datname, state, wait_event_type, wait_event, "
                        + "pg_blocking_pids(pid) AS blocked_by, now() - xact_start AS in_transaction, left(query, 400) AS query "
                        + "FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() "
                        + "AND state <> 'idle' ORDER BY xact_start")) {
            ResultSetMetaData columns = rs.getMetaData();
            while (rs.next()) {
                for (int i = 1; i <= columns.getColumnCount(); i++) {
                    out.append(i == 1 ? "" : " | ").append(columns.getColumnLabel(i)).append('=').append(rs.getString(i));
                }
                out.append('\n');
            }
        } catch (Exception e) {
            out.append("(could not read pg_stat_activity: ").append(e).append(")\n");
        }
    }
}
