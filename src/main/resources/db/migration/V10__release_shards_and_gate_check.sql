-- Throughput (issue 12). Every job's finalize used to decrement the one gateway_capacity row that
-- every admission locks, and the one dispatch_window row every relay round updates: a hot row
-- touched twice per job, its lock held while the worker's JVM did the rest of its transaction.
-- Now row 1 of each table keeps what admission (gateway_capacity) and the relay (dispatch_window)
-- add, under their own locks as before; releases (finalize, a released dispatch slot) go to one of
-- 16 shard rows (id 2..17) that only releases touch, so they wait on neither. The value is the sum
-- of the rows; a shard is negative (releases only), row 1 never is. Readers: admission locks row 1
-- and adds the shards (a stale read of a shard is higher, never lower: it only errs on the side of
-- refusing), the relay round (one at a time, advisory lock) reads the sum.
ALTER TABLE gateway_capacity DROP CONSTRAINT gateway_capacity_id_check;
ALTER TABLE gateway_capacity DROP CONSTRAINT gateway_capacity_in_flight_check;
ALTER TABLE gateway_capacity ALTER COLUMN in_flight TYPE bigint;
ALTER TABLE gateway_capacity ADD CONSTRAINT gateway_capacity_rows CHECK (id BETWEEN 1 AND 17);
ALTER TABLE gateway_capacity ADD CONSTRAINT gateway_capacity_admitted CHECK (id <> 1 OR in_flight >= 0);
INSERT INTO gateway_capacity (id, in_flight) SELECT g, 0 FROM generate_series(2, 17) g;

ALTER TABLE dispatch_window DROP CONSTRAINT dispatch_window_id_check;
ALTER TABLE dispatch_window DROP CONSTRAINT dispatch_window_running_check;
ALTER TABLE dispatch_window ALTER COLUMN running TYPE bigint;
ALTER TABLE dispatch_window ADD CONSTRAINT dispatch_window_rows CHECK (id BETWEEN 1 AND 17);
ALTER TABLE dispatch_window ADD CONSTRAINT dispatch_window_taken CHECK (id <> 1 OR running >= 0);
INSERT INTO dispatch_window (id, running) SELECT g, 0 FROM generate_series(2, 17) g;

-- The provider gate of a worker's start in one round trip: lock the gate row (created on first
-- use), then count the provider's calls in flight. VOLATILE: the count is a statement of its own
-- with a fresh snapshot taken after the lock, so it sees every call started by a transaction that
-- held the lock before (what two statements from the JVM did, with a round trip under the lock).
CREATE FUNCTION provider_gate_state(p_provider text) RETURNS TABLE (closed_until timestamptz, in_flight bigint)
    LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    closed timestamptz;
BEGIN
    INSERT INTO provider_gates AS g (provider) VALUES (p_provider)
    ON CONFLICT (provider) DO UPDATE SET provider = EXCLUDED.provider
    RETURNING g.closed_until INTO closed;
    RETURN QUERY SELECT CASE WHEN closed = '-infinity' THEN NULL ELSE closed END,
                        (SELECT count(*) FROM jobs j WHERE j.provider = p_provider AND j.status = 'submitting');
END $$;
