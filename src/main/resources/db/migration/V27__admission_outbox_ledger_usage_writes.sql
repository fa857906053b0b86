-- Admission (issue 12): work every admitted job paid for on the outbox, the ledger and the usage
-- queue that nothing needed.
--
-- outbox_job held every event, but only dispatch events are ever looked up by job (lease, transition,
-- gate and canary statements all say event_type = 'dispatch'); a status event's entry was written at
-- admission and again when the relay marked it published (a non-HOT update). Now dispatch events only.
DROP INDEX outbox_job;
CREATE INDEX outbox_job ON outbox (job_id) WHERE event_type = 'dispatch';

-- Foreign keys checked once per row, by a query each, on rows whose parent the same statement had
-- just written or read: an outbox event is inserted only by the statement that inserts or moves its
-- job (admission's write, JobTransitions' writes "WHERE {after}"); a ledger entry with a job only by
-- admission's write (the job it inserts) and JobTransitions' refunds and redrive debits (from the
-- job's own debit or refund row); and jobs are never deleted. A usage_pending row only by the
-- ledger's own trigger, from the rows it inserted, and the ledger is append-only. The checks also
-- locked the new job and the new debit (a WAL record per job each). The ledger keeps its check of
-- the tenant (one lock per tenant and batch) and its one debit per job (a unique index).
ALTER TABLE outbox DROP CONSTRAINT outbox_job_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT ledger_job_id_fkey;
ALTER TABLE usage_pending DROP CONSTRAINT usage_pending_entry_id_fkey;
