-- A provider's concurrency limit as slot rows instead of a lock on its gate row: a worker starting a
-- call claims a free slot with FOR UPDATE SKIP LOCKED (V10's provider_gate_state locked the one gate
-- row and counted the provider's submitting jobs under it, so every start of a provider queued
-- behind the others' commits). A slot holds the lease token of the job whose call it carries and is
-- freed by the transition that takes the job out of 'submitting', in the same transaction, so the
-- count of held slots is the count of calls in flight, across instances, crash included.
-- Rows are made per provider as its limit needs them (slot < max_concurrency is claimable).
CREATE TABLE provider_slots (
    provider    text        NOT NULL,
    slot        int         NOT NULL CHECK (slot >= 0),
    lease_token uuid,
    job_id      uuid,
    taken_at    timestamptz,
    PRIMARY KEY (provider, slot),
    CHECK ((lease_token IS NULL) = (job_id IS NULL))
);

-- Calls in flight now (an upgrade with jobs mid-call): their slots, so the limit holds across it.
INSERT INTO provider_slots (provider, slot, lease_token, job_id, taken_at)
SELECT provider, (row_number() OVER (PARTITION BY provider ORDER BY job_id) - 1)::int, lease_token, job_id, updated_at
  FROM jobs WHERE status = 'submitting' AND lease_token IS NOT NULL;

DROP FUNCTION provider_gate_state(text);
-- Only provider_gate_state's count read it; one index fewer for every status change to maintain.
DROP INDEX jobs_submitting;
