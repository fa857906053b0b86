-- Instance liveness (infra/InstanceLiveness). Each instance holds a session advisory lock
-- (class 27239, its lock_key) on a connection of its own for its whole life, and lists here the
-- owner names it leases and claims under. PostgreSQL drops the lock when the process dies, so a
-- listed owner whose lock is gone is dead: the sweeper takes its leases and the poller its claims
-- at once, instead of after they run out. Owners not listed (older versions) keep the expiry rule.
CREATE TABLE gateway_instances (
    owner      text        PRIMARY KEY,
    lock_key   integer     NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

CREATE VIEW gateway_instances_gone AS
SELECT i.owner
  FROM gateway_instances i
 WHERE NOT EXISTS (
        SELECT 1 FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND l.classid::bigint = 27239 AND l.objid::bigint = (i.lock_key::bigint & 4294967295));

-- The leases and claims of one owner, found without walking the jobs.
CREATE INDEX jobs_lease_owner ON jobs (lease_owner) WHERE lease_token IS NOT NULL;
CREATE INDEX jobs_check_claimed_by ON jobs (check_claimed_by) WHERE check_claimed_by IS NOT NULL;
