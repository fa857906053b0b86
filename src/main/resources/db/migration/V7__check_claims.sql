-- A poller's claim on a due provider check names its owner; it lasts the lookup's own deadline
-- plus a margin (next_check_at), so the claim of a poller that died is taken over within seconds.
ALTER TABLE jobs ADD COLUMN check_claimed_by text;
