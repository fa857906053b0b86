package io.jobgate.job;

import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The provider gates (table {@code provider_gates}, one row per provider, shared by every instance):
 * a 429 — from a submit or a lookup alike — closes its provider's gate until its {@code Retry-After};
 * workers and pollers ask nothing of a closed provider.
 */
public final class ProviderGates {

    private final JdbcTemplate jdbc;
    private final TransactionTemplate transactions;
    private final Clock clock;

    private volatile java.util.function.Consumer<Instant> dispatchDueAt = at -> { };

    public ProviderGates(JdbcTemplate jdbc, TransactionTemplate transactions, Clock clock) {
        this.jdbc = jdbc;
        this.transactions = transactions;
        this.clock = clock;
    }

    /** Told when waiting dispatch events were moved to a new due time (the relay's timer). */
    public void onDispatchDue(java.util.function.Consumer<Instant> dispatchDueAt) {
        this.dispatchDueAt = dispatchDueAt;
    }

    /**
     * Closes the gate of {@code provider} until {@code until} for every job (never shortens a longer
     * close). The provider's dispatch events not yet relayed become due at the reopening, so a
     * backlog waits in the outbox instead of cycling through the broker and the workers only to be
     * snoozed one by one. A pool job's event is left due: its start places it again (another member when this one's
     * gate stays closed beyond its max-wait) rather than wait here.
     *
     * @return how many waiting dispatch events were moved to the reopening
     */
    public int close(String provider, Instant until, String reason) {
        jdbc.update("""
                INSERT INTO provider_gates (provider, closed_until, closed_reason, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (provider) DO UPDATE
                   SET closed_until = greatest(provider_gates.closed_until, EXCLUDED.closed_until),
                       closed_reason = EXCLUDED.closed_reason, updated_at = EXCLUDED.updated_at""",
                provider, Timestamp.from(until), reason, Timestamp.from(clock.instant()));
        // Outbox rows before job rows, the lock order of the relay and finalize.
        Integer moved = transactions.execute(tx -> jdbc.queryForObject("""
                WITH moved AS (
                    UPDATE outbox o SET available_at = ?
                      FROM jobs j
                     WHERE o.published_at IS NULL AND o.event_type = 'dispatch' AND o.available_at < ?
                       AND j.job_id = o.job_id AND j.provider = ? AND j.pool IS NULL AND j.finalized_at IS NULL
                    RETURNING o.job_id),
                shown AS (
                    UPDATE jobs j SET next_attempt_at = ?
                      FROM moved m WHERE j.job_id = m.job_id AND j.status = ? AND j.next_attempt_at < ?)
                SELECT count(*) FROM moved""",
                Integer.class, Timestamp.from(until), Timestamp.from(until), provider, Timestamp.from(until),
                JobStatus.RETRY_WAIT.wire(), Timestamp.from(until)));
        if (moved != null && moved > 0) {
            dispatchDueAt.accept(until);
        }
        return moved == null ? 0 : moved;
    }

    /**
     * Opens the gate of {@code provider} if it is closed for a reason starting with {@code reasonPrefix}
     * (a readiness check's close; a 429's close is left to run out), and makes what its close had
     * postponed to the reopening due now.
     *
     * @return whether the gate was opened
     */
    public boolean openIfClosedFor(String provider, String reasonPrefix) {
        Timestamp now = Timestamp.from(clock.instant());
        Boolean opened = transactions.execute(tx -> {
            List<Timestamp> closed = jdbc.query("""
                    SELECT closed_until FROM provider_gates
                     WHERE provider = ? AND closed_until > ? AND starts_with(coalesce(closed_reason, ''), ?) FOR UPDATE""",
                    (rs, i) -> rs.getTimestamp(1), provider, now, reasonPrefix);
            if (closed.isEmpty()) {
                return false;
            }
            jdbc.update("UPDATE provider_gates SET closed_until = '-infinity', closed_reason = NULL, updated_at = ? WHERE provider = ?",
                    now, provider);
            // Outbox rows before job rows, the lock order of the relay and finalize.
            jdbc.update("""
                    WITH moved AS (
                        UPDATE outbox o SET available_at = ?
                          FROM jobs j
                         WHERE o.published_at IS NULL AND o.event_type = 'dispatch' AND o.available_at = ?
                           AND j.job_id = o.job_id AND j.provider = ? AND j.finalized_at IS NULL
                        RETURNING o.job_id)
                    UPDATE jobs j SET next_attempt_at = ?
                      FROM moved m WHERE j.job_id = m.job_id AND j.status = ? AND j.next_attempt_at = ?""",
                    now, closed.get(0), provider, now, JobStatus.RETRY_WAIT.wire(), closed.get(0));
            return true;
        });
        if (Boolean.TRUE.equals(opened)) {
            dispatchDueAt.accept(now.toInstant());
        }
        return Boolean.TRUE.equals(opened);
    }

    /** Until when each gate of {@code providers} that is closed now is closed (one statement for a pool's members). */
    public java.util.Map<String, Instant> closedUntil(java.util.Collection<String> providers) {
        java.util.Map<String, Instant> closed = new java.util.HashMap<>();
        if (providers.isEmpty()) {
            return closed;
        }
        jdbc.query(con -> {
            java.sql.PreparedStatement s = con.prepareStatement("SELECT provider, closed_until FROM provider_gates"
                    + " WHERE provider = ANY (?) AND closed_until > ?");
            s.setArray(1, con.createArrayOf("text", providers.toArray()));
            s.setTimestamp(2, Timestamp.from(clock.instant()));
            return s;
        }, (org.springframework.jdbc.core.RowCallbackHandler) rs -> closed.put(rs.getString(1), rs.getTimestamp(2).toInstant()));
        return closed;
    }

    /** Until when the gate of {@code provider} is closed, if it is closed now. */
    public Optional<Instant> closedUntil(String provider) {
        Instant now = clock.instant();
        return jdbc.query("SELECT closed_until FROM provider_gates WHERE provider = ? AND closed_until > ?",
                (rs, i) -> rs.getTimestamp(1).toInstant(), provider, Timestamp.from(now)).stream().findFirst();
    }
}
