package io.jobgate.infra;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether an instance is alive, answered by PostgreSQL itself: the instance holds a session advisory
 * lock on a connection of its own for its whole life and lists its owner names (the worker's lease
 * owner, the poller's claim owner) in {@code gateway_instances} with the lock's key. When the process
 * dies (SIGKILL, the OOM killer) its sockets close and PostgreSQL drops the lock at once, so a listed
 * owner without its lock ({@code gateway_instances_gone}) is dead, and its leases and claims are
 * taken over within a sweep instead of after they run out. A lost connection is opened again and
 * the lock taken again; meanwhile others may take the leases over, which the lease tokens make safe.
 */
public final class InstanceLiveness implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(InstanceLiveness.class);
    /** The advisory lock class of liveness locks (the view gateway_instances_gone names it too). */
    static final int LOCK_CLASS = 27239;

    private final DataSource dataSource;
    private final Set<String> owners = ConcurrentHashMap.newKeySet();
    private final ScheduledExecutorService watch = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "jobgate-liveness");
        t.setDaemon(true);
        return t;
    });
    private volatile int key;
    private volatile Connection held;

    private InstanceLiveness(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * The name one of this process's owners of leases or claims writes into the tables: the host,
     * then {@code prefix} ("" for the worker, "reconciler-", "relay-") and a suffix new at each start,
     * so a restarted process never passes for the one that died.
     */
    public static String ownerName(String prefix) {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            host = "gateway";
        }
        return host + "/" + prefix + java.util.UUID.randomUUID().toString().substring(0, 8);
    }

    /** Takes this instance's lock; from then on it counts as alive. */
    public static InstanceLiveness start(DataSource dataSource) throws SQLException {
        InstanceLiveness liveness = new InstanceLiveness(dataSource);
        liveness.key = ThreadLocalRandom.current().nextInt();
        liveness.lock();
        liveness.watch.scheduleWithFixedDelay(liveness::keepLock, 5, 5, TimeUnit.SECONDS);
        return liveness;
    }

    /** Lists {@code owner} as this instance's: its leases or claims are taken over as soon as the instance dies. */
    public void register(String owner) throws SQLException {
        owners.add(owner);
        try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement("""
                INSERT INTO gateway_instances (owner, lock_key) VALUES (?, ?)
                ON CONFLICT (owner) DO UPDATE SET lock_key = EXCLUDED.lock_key, started_at = now()""")) {
            s.setString(1, owner);
            s.setInt(2, key);
            s.executeUpdate();
        }
    }

    private synchronized void lock() throws SQLException {
        Connection c = dataSource.getConnection();
        try (PreparedStatement s = c.prepareStatement("SELECT pg_try_advisory_lock(?, ?)")) {
            while (true) {
                s.setInt(1, LOCK_CLASS);
                s.setInt(2, key);
                try (ResultSet rs = s.executeQuery()) {
                    rs.next();
                    if (rs.getBoolean(1)) {
                        break;
                    }
                }
                key = ThreadLocalRandom.current().nextInt(); // another live instance has this key
            }
        } catch (SQLException | RuntimeException e) {
            c.close();
            throw e;
        }
        held = c;
    }

    /** Checks the lock's connection; a lost one is replaced and the lock (and the owners' key) taken again. */
    private synchronized void keepLock() {
        try {
            if (held != null && held.isValid(5)) {
                return;
            }
            LOG.warn("liveness connection lost: taking the instance's lock again (leases may meanwhile be taken over)");
            closeHeld();
            lock();
            for (String owner : owners) {
                register(owner);
            }
        } catch (SQLException | RuntimeException e) {
            LOG.warn("liveness lock not taken again yet: {}", e.toString());
        }
    }

    /**
     * Ends the lock's session: the lock released first (a pooled connection must not carry it back
     * into the pool), then the connection evicted from the pool, so it is closed for good.
     */
    private void closeHeld() {
        Connection c = held;
        held = null;
        if (c == null) {
            return;
        }
        try (PreparedStatement s = c.prepareStatement("SELECT pg_advisory_unlock_all()")) {
            s.execute();
        } catch (SQLException e) {
            LOG.debug("releasing the liveness lock: {}", e.toString());
        }
        try {
            if (dataSource instanceof com.zaxxer.hikari.HikariDataSource pool) {
                pool.evictConnection(c);
            } else {
                c.close();
            }
        } catch (SQLException e) {
            LOG.debug("closing the liveness connection: {}", e.toString());
        }
    }

    /** A clean stop: the owners are no longer listed (their leases were handed back) and the lock goes. */
    @Override
    public synchronized void close() {
        watch.shutdownNow();
        if (!owners.isEmpty()) {
            try (Connection c = dataSource.getConnection(); PreparedStatement s = c.prepareStatement(
                    "DELETE FROM gateway_instances WHERE owner = ANY (?) AND lock_key = ?")) {
                s.setArray(1, c.createArrayOf("text", owners.toArray()));
                s.setInt(2, key);
                s.executeUpdate();
            } catch (SQLException e) {
                LOG.debug("unlisting the instance's owners: {}", e.toString());
            }
        }
        closeHeld();
    }
}
