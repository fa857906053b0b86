-- The provider pool a job named (docs/providers.md, "Pools"): its attempts may move among the pool's members
-- after a definite failure or a gate closed beyond a member's max-wait; the job's provider column is the member
-- its next (or current) attempt runs on. NULL: the job named a provider (pinned) or took the kind's default.
ALTER TABLE jobs ADD COLUMN pool text;
