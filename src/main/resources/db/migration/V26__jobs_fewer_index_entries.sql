-- Every version of a job row that is not HOT inserts into each of the jobs' indexes whose predicate
-- it meets; a drained job makes four such versions (the relay's slot, the lease, the submit, the
-- finalize). Two indexes no statement needs:
-- * jobs_dispatched (V2): no query reads it (the running counts are counter rows since V2, V10,
--   V24). Without it the relay's slot (dispatched_at, nothing else) changes no indexed column, so
--   PostgreSQL may write that version as a HOT update, with no index entry at all.
-- * jobs_lease_owner (V8): the leases of one owner (a gone instance, a clean stop; rare) are found in
--   jobs_lease_expiry, whose predicate is the same and which holds only the leased jobs (the calls
--   in flight, never history).
-- Dropped CONCURRENTLY, as V23 built its index, so an upgrade does not stop the jobs table.
DROP INDEX CONCURRENTLY IF EXISTS jobs_dispatched;
DROP INDEX CONCURRENTLY IF EXISTS jobs_lease_owner;
