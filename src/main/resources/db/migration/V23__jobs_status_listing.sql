-- A tenant's jobs of one status, newest first (GET /v1/jobs?status=...): without it that listing
-- walked the tenant's whole history (or, in a generic plan, every tenant's) to find a rare status.
-- Built CONCURRENTLY so an upgrade on a large jobs table does not stop admission while it builds;
-- Flyway runs such a script outside a transaction. The DROP clears an invalid index a failed build
-- left behind, should the migration be run again after a `flyway repair`.
DROP INDEX CONCURRENTLY IF EXISTS jobs_tenant_status_listing;
CREATE INDEX CONCURRENTLY jobs_tenant_status_listing ON jobs (tenant_id, status, job_id DESC);
