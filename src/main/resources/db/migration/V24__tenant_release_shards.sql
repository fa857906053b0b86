-- Mixed load (issue 12): admission while a backlog drains. Every job's finalize (and every released
-- dispatch slot) used to decrement its tenant's tenant_accounts row, the row admission locks for its
-- quota check and the relay's round locks to take a running slot: the worker's transaction held it
-- from its last statement to its commit, and the relay's claim (and through it admission) waited.
-- Now the tenant row does for its counters what V10 made row 1 of gateway_capacity and
-- dispatch_window do: it keeps what admission (open_jobs, queued_bytes), a redrive (the same) and
-- the relay (running_jobs) add, under their own locks as before; releases (finalize, a released
-- slot) go to one of the tenant's 8 release rows in tenant_releases, which only releases touch, so a
-- release waits on no admission and no relay round, and they on no release.
--
-- A counter's value is the tenant row's plus the sum of its release rows (view tenant_counters).
-- The tenant row only grows and a release row is only ever negative (releases only: an increase
-- never goes to a release row), so a release row read from an older snapshot than the tenant row's
-- misses releases only: the sum errs high, on the side of refusing (V10's argument). Admission locks
-- the tenant row (its latest version) and adds the release rows as its statement's snapshot has them;
-- the relay's round reads both from one snapshot, as it read the tenant row before. No one folds the
-- release rows back into the tenant row: a fold would move a release from a row read late to one read
-- early and could make a reader count it twice (too low, the wrong side). bigint: at one admission
-- per millisecond a tenant's row would take 290 million years to overflow.
ALTER TABLE tenant_accounts ALTER COLUMN open_jobs TYPE bigint, ALTER COLUMN running_jobs TYPE bigint;
COMMENT ON COLUMN tenant_accounts.open_jobs IS 'jobs opened (admitted, redriven); open now: tenant_counters';
COMMENT ON COLUMN tenant_accounts.queued_bytes IS 'source bytes reserved; reserved now: tenant_counters';
COMMENT ON COLUMN tenant_accounts.running_jobs IS 'dispatch slots taken; held now: tenant_counters';

CREATE TABLE tenant_releases (
    tenant_id    text     NOT NULL REFERENCES tenants (tenant_id),
    shard        smallint NOT NULL CHECK (shard BETWEEN 1 AND 8),
    open_jobs    bigint   NOT NULL DEFAULT 0 CHECK (open_jobs <= 0),
    queued_bytes bigint   NOT NULL DEFAULT 0 CHECK (queued_bytes <= 0),
    running_jobs bigint   NOT NULL DEFAULT 0 CHECK (running_jobs <= 0),
    PRIMARY KEY (tenant_id, shard)
);
COMMENT ON TABLE tenant_releases IS 'what finalize and released slots gave back, per tenant, 8 rows each (V24)';

-- The rows are created with the tenant's account row, whoever inserts it (a release that finds its
-- row missing creates it: a tenant's, not its account's, so a release of a tenant without an account
-- row, as some tests make, is kept rather than refused).
CREATE FUNCTION tenant_releases_create() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tenant_releases (tenant_id, shard)
    SELECT NEW.tenant_id, s FROM generate_series(1, 8) s ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER tenant_accounts_releases AFTER INSERT ON tenant_accounts
    FOR EACH ROW EXECUTE FUNCTION tenant_releases_create();
INSERT INTO tenant_releases (tenant_id, shard) SELECT a.tenant_id, s FROM tenant_accounts a CROSS JOIN generate_series(1, 8) s;

-- The counters as they are now: what every reader other than admission's lock and the relay's round
-- (which add the release rows themselves) reads.
CREATE VIEW tenant_counters AS
SELECT a.tenant_id,
       a.open_jobs + r.open_jobs AS open_jobs,
       a.queued_bytes + r.queued_bytes AS queued_bytes,
       a.running_jobs + r.running_jobs AS running_jobs
  FROM tenant_accounts a
 CROSS JOIN LATERAL (SELECT coalesce(sum(s.open_jobs), 0)::bigint AS open_jobs,
                            coalesce(sum(s.queued_bytes), 0)::bigint AS queued_bytes,
                            coalesce(sum(s.running_jobs), 0)::bigint AS running_jobs
                       FROM tenant_releases s WHERE s.tenant_id = a.tenant_id) r;
