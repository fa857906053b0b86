package io.jobgate.relay;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;

import org.apache.camel.support.service.ServiceSupport;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes this instance's relay when another instance admitted a job: admission transactions send a
 * PostgreSQL notification on {@link #CHANNEL} (delivered at commit) with their instance id, and each
 * instance listens on a connection of its own. An instance's own admissions already wake its relay
 * in-process, so their notifications are skipped. The relay's poll stays the fallback: a
 * notification lost while the listener reconnects costs at most one poll period.
 */
public final class RelayNotifications extends ServiceSupport {

    private static final Logger LOG = LoggerFactory.getLogger(RelayNotifications.class);

    public static final String CHANNEL = "jobgate_dispatch";

    /** Read at each connect: an embedded database's URL is known only once it started. */
    private final java.util.function.Supplier<String> url;
    private final String user;
    private final String password;
    private final String instanceId;
    private final Runnable wake;
    private volatile boolean running;
    private volatile Thread listener;
    private volatile Connection connection;

    public RelayNotifications(java.util.function.Supplier<String> url, String user, String password, String instanceId, Runnable wake) {
        this.url = url;
        this.user = user;
        this.password = password;
        this.instanceId = instanceId;
        this.wake = wake;
    }

    @Override
    protected void doStart() {
        running = true;
        listener = new Thread(this::listen, "jobgate-relay-listener");
        listener.setDaemon(true);
        listener.start();
    }

    @Override
    protected void doStop() throws InterruptedException {
        running = false;
        closeQuietly(connection); // ends a wait for notifications
        Thread t = listener;
        if (t != null) {
            t.interrupt();
            t.join(5_000);
        }
    }

    private void listen() {
        while (running) {
            try (Connection c = DriverManager.getConnection(url.get(), user, password); Statement st = c.createStatement()) {
                connection = c;
                st.execute("LISTEN " + CHANNEL);
                PGConnection pg = c.unwrap(PGConnection.class);
                while (running) {
                    PGNotification[] received = pg.getNotifications(1_000);
                    if (received != null && Arrays.stream(received).anyMatch(n -> !instanceId.equals(n.getParameter()))) {
                        wake.run();
                    }
                }
            } catch (SQLException e) {
                if (running) {
                    LOG.warn("relay notifications interrupted ({}); listening again in 1 s, the relay polls meanwhile", e.getMessage());
                    try {
                        Thread.sleep(1_000);
                    } catch (InterruptedException interrupted) {
                        return;
                    }
                }
            }
        }
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // stopping
            }
        }
    }
}
