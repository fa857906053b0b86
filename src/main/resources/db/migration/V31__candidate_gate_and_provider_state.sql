-- Issue 37. A canary candidate's own gate and its first sample (docs/canary.md), and what an adapter
-- keeps of its task beside the task reference (docs/providers.md, JobgateProviderState).

-- A 429 from a candidate closes the candidate only (until its Retry-After): its provider's gate, which
-- every stable attempt passes, stays open. The worker's start reads this in the canary choice and sends
-- the attempt to the stable revision while it is closed.
ALTER TABLE canaries ADD COLUMN closed_until timestamptz;
ALTER TABLE canaries ADD COLUMN closed_reason text;
-- When the gates first judged a full sample (min-sample finished attempts) and let the candidate run.
-- Until then the start transaction counts the candidate's attempts as they start and gives it at most
-- min-sample of them; a restart clears it with judged_from.
ALTER TABLE canaries ADD COLUMN sampled_at timestamptz;

-- The adapter's own record of a job's provider task (text it chose, e.g. fal's status, result and cancel
-- URLs from the submit reply): written with the task reference, given back to the adapter's lookups,
-- cancels and webhooks, cleared with the task when the job goes back for a new attempt.
ALTER TABLE jobs ADD COLUMN provider_state text;
