-- jobgate schema, part 2: the outbox relay (fair dispatch, status events) and dispatch slots.

-- A job holds a dispatch slot from the moment its dispatch event is claimed until it waits for a
-- retry or ends. The running counters below change only in the same statement or transaction
-- that sets or clears dispatched_at, so they always equal the count of jobs holding a slot.
ALTER TABLE jobs ADD COLUMN dispatched_at timestamptz;
CREATE INDEX jobs_dispatched ON jobs (tenant_id) WHERE dispatched_at IS NOT NULL AND finalized_at IS NULL;

-- Round robin over tenants: the tenant that waited longest since its last dispatch goes first.
ALTER TABLE tenant_accounts ADD COLUMN last_dispatch_at timestamptz;
ALTER TABLE tenant_accounts ADD COLUMN running_jobs integer NOT NULL DEFAULT 0 CHECK (running_jobs >= 0);

-- The gateway-wide window of jobs holding a dispatch slot (one row; apart from the admission row
-- so relay rounds and admissions do not queue on one lock).
CREATE TABLE dispatch_window (
    id      smallint PRIMARY KEY CHECK (id = 1),
    running integer  NOT NULL DEFAULT 0 CHECK (running >= 0)
);
INSERT INTO dispatch_window (id, running) VALUES (1, 0);

-- Claims: a relay marks the events it is publishing; a claim that outlives its relay expires and
-- the event is published again (at least once). Status events carry their payload.
ALTER TABLE outbox ADD COLUMN claimed_until timestamptz;
ALTER TABLE outbox ADD COLUMN claim_token uuid;
ALTER TABLE outbox ADD COLUMN payload jsonb;
ALTER TABLE outbox ADD CONSTRAINT outbox_event_type CHECK (event_type IN ('dispatch', 'status'));
DROP INDEX outbox_due;
CREATE INDEX outbox_dispatch_due ON outbox (tenant_id, available_at, event_id)
    WHERE published_at IS NULL AND event_type = 'dispatch';
-- Claims that expired (a relay died after claiming): few, and found without walking a backlog.
CREATE INDEX outbox_dispatch_reclaim ON outbox (tenant_id, available_at, event_id)
    WHERE published_at IS NULL AND event_type = 'dispatch' AND claimed_until IS NOT NULL;
CREATE INDEX outbox_status_due ON outbox (event_id) WHERE published_at IS NULL AND event_type = 'status';
CREATE INDEX outbox_job ON outbox (job_id);
