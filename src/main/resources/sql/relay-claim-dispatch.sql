-- One fair relay round: at most one due dispatch event per tenant, only for tenants below their
-- running limit, tenants that waited longest first, within the global running window. Rounds of
-- several relays take turns on an advisory lock, so no two relays split one round; SKIP LOCKED
-- keeps a round from waiting on rows another transaction holds.
WITH turn AS (
    SELECT pg_try_advisory_xact_lock(7305001) AS ours),
running AS (
    SELECT tenant_id, count(*) AS jobs FROM jobs
     WHERE dispatched_at IS NOT NULL AND finalized_at IS NULL GROUP BY tenant_id),
room AS (
    SELECT greatest(:#maxRunning - coalesce((SELECT sum(jobs) FROM running), 0), 0) AS free),
picked AS (
    SELECT e.event_id, e.job_id, t.tenant_id
      FROM turn
      CROSS JOIN tenants t
      JOIN tenant_accounts a ON a.tenant_id = t.tenant_id
      LEFT JOIN running r ON r.tenant_id = t.tenant_id
      CROSS JOIN LATERAL (
          SELECT o.event_id, o.job_id FROM outbox o
           WHERE o.tenant_id = t.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
             AND o.available_at <= now() AND (o.claimed_until IS NULL OR o.claimed_until < now())
           ORDER BY o.available_at, o.event_id
           LIMIT 1
           FOR UPDATE SKIP LOCKED) e
     WHERE turn.ours
       AND (coalesce(r.jobs, 0) < t.max_running_jobs
            -- a claim that expired after its job took a slot is published again, not held back
            OR EXISTS (SELECT 1 FROM jobs d WHERE d.job_id = e.job_id AND d.dispatched_at IS NOT NULL))
     ORDER BY a.last_dispatch_at NULLS FIRST, t.tenant_id
     LIMIT (SELECT free FROM room)),
claimed AS (
    UPDATE outbox o SET claimed_until = now() + make_interval(secs => :#claimSeconds), claim_token = :#claimToken::uuid
      FROM picked p WHERE o.event_id = p.event_id
    RETURNING o.event_id, o.job_id, o.tenant_id),
slots AS (
    UPDATE jobs j SET dispatched_at = coalesce(j.dispatched_at, now())
      FROM claimed c WHERE j.job_id = c.job_id),
turns AS (
    UPDATE tenant_accounts a SET last_dispatch_at = now() FROM claimed c WHERE a.tenant_id = c.tenant_id)
SELECT c.event_id, c.job_id, c.tenant_id, j.attempts, j.preset_id, j.preset_version, j.kind, j.provider
  FROM claimed c JOIN jobs j ON j.job_id = c.job_id
 ORDER BY c.event_id
