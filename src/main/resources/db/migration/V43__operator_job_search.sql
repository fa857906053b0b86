-- The operator's job search (docs/console.md): failed and cancelled jobs of every tenant, newest first, without walking
-- the whole history of succeeded ones. Only jobs that end so enter it, and they no longer change (but for a redrive,
-- which takes its job out again): the hot path writes nothing to it.
CREATE INDEX jobs_unsuccessful_listing ON jobs (status, job_id DESC) WHERE status IN ('failed', 'cancelled');
