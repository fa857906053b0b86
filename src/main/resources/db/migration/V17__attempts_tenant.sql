-- An attempt names its job's tenant, so the raw part of a usage report (the partial days at a range's
-- edges) reads one tenant's billed attempts through an index instead of every tenant's of those days.
ALTER TABLE attempts ADD COLUMN tenant_id text;
UPDATE attempts a SET tenant_id = j.tenant_id FROM jobs j WHERE j.job_id = a.job_id AND a.tenant_id IS NULL;
CREATE INDEX attempts_billed_tenant_time ON attempts (tenant_id, started_at) WHERE billed_units IS NOT NULL;
