-- A relay's claim names its owner (as leases and poller claims do, V7/V8): when the relay's process
-- dies, the sweeper releases its claims at once (the owner is in gateway_instances_gone) instead of
-- letting them run out; the events are published again (consumers take duplicates, at least once).
ALTER TABLE outbox ADD COLUMN claimed_by text;
CREATE INDEX outbox_claimed_by ON outbox (claimed_by) WHERE published_at IS NULL AND claimed_by IS NOT NULL;
