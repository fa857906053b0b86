-- Why a job waits (docs/providers.md, "Pools"): written by the transition that puts it back to wait — a start that
-- found its provider's gate closed or full, a pool job that can only wait for its member (every member its tenant may
-- use closed beyond its max-wait, or failover off for its tenant) — and by admission for a pool job placed on a closed
-- member. The job's view shows it while the job is queued or in retry_wait; NULL: it waits for nothing in particular
-- (its turn, or the backoff after a failure, which next_attempt_at and its attempts say).
ALTER TABLE jobs ADD COLUMN waiting_reason text;
