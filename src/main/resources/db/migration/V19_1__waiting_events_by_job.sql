-- A job's unpublished events, found by the job: taking a lease locks them, a retry or an ending drops
-- the dispatch ones. Without it the plans read them through outbox_dispatch_due, every waiting
-- dispatch event of every tenant, filtered by job: a cost that grew with the backlog.
CREATE INDEX outbox_job_waiting ON outbox (job_id) WHERE published_at IS NULL;
