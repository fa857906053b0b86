package io.jobgate.support;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.UniqueId;
import org.junit.platform.engine.support.descriptor.AbstractTestDescriptor;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestIdentifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class HangWatchdogTest {

    @TempDir
    Path reports;

    @Test
    void aClassPastItsLimitIsReportedWithItsThreadsAndTheSessionsBlockedThenTheRunEnds() throws Exception {
        AtomicInteger ended = new AtomicInteger();
        HangWatchdog watchdog = new HangWatchdog(Duration.ofMillis(300), reports, ended::incrementAndGet);
        Object monitor = new Object();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            synchronized (monitor) {
                held.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "holds-the-monitor");
        Thread waiter = new Thread(() -> {
            synchronized (monitor) {
                monitor.notifyAll();
            }
        }, "waits-for-the-monitor");
        try (Connection locker = TestDatabase.connect(); Connection blocked = TestDatabase.connect();
                Statement s = locker.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS hang_watchdog_probe (id int)");
            locker.setAutoCommit(false);
            s.execute("LOCK TABLE hang_watchdog_probe IN ACCESS EXCLUSIVE MODE");
            int lockerPid = pid(locker);
            Thread blockedQuery = new Thread(() -> {
                try (Statement b = blocked.createStatement()) {
                    b.execute("SELECT count(*) FROM hang_watchdog_probe");
                } catch (Exception e) {
                    // the connection is closed under it at the end of the test
                }
            }, "blocked-query");
            holder.start();
            held.await();
            waiter.start();
            blockedQuery.start();
            await().until(() -> waiter.getState() == Thread.State.BLOCKED);
            await().until(() -> Db.count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    + "AND query LIKE 'SELECT count(*) FROM hang_watchdog_probe%'") == 1);

            watchdog.executionStarted(classOf(Hung.class));
            watchdog.executionStarted(classOf(Finished.class));
            watchdog.executionFinished(classOf(Finished.class), TestExecutionResult.successful());

            Path report = reports.resolve(Hung.class.getName() + ".txt");
            await().atMost(Duration.ofSeconds(10)).until(() -> ended.get() == 1);
            String text = Files.readString(report);
            assertThat(text).startsWith("HUNG: " + Hung.class.getName() + " ran past 300 ms");
            assertThat(text).contains("\"waits-for-the-monitor\" BLOCKED on java.lang.Object@")
                    .contains("owned by \"holds-the-monitor\"");
            assertThat(text).containsPattern("state=active \\| wait_event_type=Lock \\| wait_event=relation \\| blocked_by=\\{"
                    + lockerPid + "\\} .*query=SELECT count\\(\\*\\) FROM hang_watchdog_probe");
            assertThat(reports.resolve(Finished.class.getName() + ".txt")).as("a class that finished in time").doesNotExist();
            locker.rollback();
        } finally {
            release.countDown();
        }
        assertThat(ended.get()).isEqualTo(1);
    }

    private static int pid(Connection c) throws Exception {
        try (Statement s = c.createStatement(); var rs = s.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            return rs.getInt(1);
        }
    }

    private static TestIdentifier classOf(Class<?> type) {
        return TestIdentifier.from(new AbstractTestDescriptor(UniqueId.root("class", type.getName()), type.getSimpleName(),
                ClassSource.from(type)) {
            @Override
            public TestDescriptor.Type getType() {
                return TestDescriptor.Type.CONTAINER;
            }
        });
    }

    static final class Hung {
    }

    static final class Finished {
    }
}
