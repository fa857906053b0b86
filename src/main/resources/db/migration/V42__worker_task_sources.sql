-- Issue 66: where a pull member's task reads its source (the job's upload, sources/sha256/<digest>), so a lease can
-- hand its worker a time-limited URL of it; null for a job without one.
ALTER TABLE worker_tasks ADD COLUMN source_key text, ADD COLUMN source_media_type text;
-- The adapter revision the attempt was sent to (a canary candidate's, or the stable one): a worker that names the
-- revision it runs leases only that revision's tasks.
ALTER TABLE worker_tasks ADD COLUMN revision text;
