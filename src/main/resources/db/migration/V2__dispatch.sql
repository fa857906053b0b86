-- jobgate schema, part 2: the outbox relay (fair dispatch, status events) and dispatch slots.

-- A job holds a dispatch slot from the moment its dispatch event is claimed until it waits for a
-- retry or ends; running counts are derived from this column, so a crash never leaks a slot.
ALTER TABLE jobs ADD COLUMN dispatched_at timestamptz;
CREATE INDEX jobs_dispatched ON jobs (tenant_id) WHERE dispatched_at IS NOT NULL AND finalized_at IS NULL;

-- Round robin over tenants: the tenant that waited longest since its last dispatch goes first.
ALTER TABLE tenant_accounts ADD COLUMN last_dispatch_at timestamptz;

-- Claims: a relay marks the events it is publishing; a claim that outlives its relay expires and
-- the event is published again (at least once). Status events carry their payload.
ALTER TABLE outbox ADD COLUMN claimed_until timestamptz;
ALTER TABLE outbox ADD COLUMN claim_token uuid;
ALTER TABLE outbox ADD COLUMN payload jsonb;
ALTER TABLE outbox ADD CONSTRAINT outbox_event_type CHECK (event_type IN ('dispatch', 'status'));
DROP INDEX outbox_due;
CREATE INDEX outbox_dispatch_due ON outbox (tenant_id, available_at, event_id)
    WHERE published_at IS NULL AND event_type = 'dispatch';
CREATE INDEX outbox_status_due ON outbox (event_id) WHERE published_at IS NULL AND event_type = 'status';
CREATE INDEX outbox_job ON outbox (job_id);
