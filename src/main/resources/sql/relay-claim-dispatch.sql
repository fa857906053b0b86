-- One fair relay round: at most one due dispatch event per tenant, only for tenants below their
-- running limit, tenants that waited longest first, within the global running window. Rounds of
-- several relays take turns on an advisory lock, so no two relays split one round; SKIP LOCKED
-- keeps a round from waiting on rows another transaction holds. Claiming takes the job's slot
-- (dispatched_at and the running counters) in the same statement. A tenant at its limit is not
-- even looked at (no row locks, no writes: an idle round costs one read), except for a claim that
-- expired after its job took a slot, which is published again without a new slot.
-- Lock order, shared with workers, finalize and admission so no two of them deadlock: outbox rows,
-- job rows, tenant rows (by tenant id), the window row last. The parts of one statement run in no
-- promised order, so the tenant locks read `slots` (job rows first) and the window update reads
-- `turns` (tenant rows first). Releases (finalize, a released slot) lock none of these counter rows:
-- they go to release rows (V10 for the window, V24 for the tenants) that only releases lock.
WITH RECURSIVE turn AS (
    SELECT pg_try_advisory_xact_lock(7305001) AS ours),
room AS (
    -- Row 1 holds what relay rounds took, the shard rows 2..17 what releases gave back (V10).
    SELECT greatest(:#maxRunning - sum(running), 0) AS free FROM dispatch_window),
-- Only tenants with unpublished dispatch events, found by one index descent each (a loose index
-- scan of outbox_dispatch_due): an idle round costs the same with ten tenants or thousands.
waiting(tenant_id) AS (
    (SELECT o.tenant_id FROM outbox o WHERE o.published_at IS NULL AND o.event_type = 'dispatch'
      ORDER BY o.tenant_id LIMIT 1)
    UNION ALL
    SELECT (SELECT o.tenant_id FROM outbox o WHERE o.published_at IS NULL AND o.event_type = 'dispatch'
               AND o.tenant_id > w.tenant_id ORDER BY o.tenant_id LIMIT 1)
      FROM waiting w WHERE w.tenant_id IS NOT NULL),
-- A tenant's running count: its row holds what rounds took, its rows of tenant_releases what releases
-- gave back (V24), read from the statement's snapshot, as the tenant row was.
tenant_turns AS (
    SELECT t.tenant_id, a.last_dispatch_at,
           a.running_jobs + (SELECT coalesce(sum(r.running_jobs), 0) FROM tenant_releases r WHERE r.tenant_id = a.tenant_id)
               < t.max_running_jobs AS has_room
      FROM turn CROSS JOIN waiting w JOIN tenants t ON t.tenant_id = w.tenant_id
      JOIN tenant_accounts a ON a.tenant_id = t.tenant_id
     WHERE turn.ours),
fresh AS (
    SELECT e.event_id, e.job_id, g.tenant_id, g.last_dispatch_at, e.holds_slot
      FROM tenant_turns g
      CROSS JOIN LATERAL (
          SELECT o.event_id, o.job_id, j.dispatched_at IS NOT NULL AS holds_slot
            FROM outbox o JOIN jobs j ON j.job_id = o.job_id
           WHERE o.tenant_id = g.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
             AND o.available_at <= CAST(:#now AS timestamptz) AND (o.claimed_until IS NULL OR o.claimed_until < CAST(:#now AS timestamptz))
           ORDER BY o.available_at, o.event_id
           LIMIT 1
           FOR UPDATE OF o SKIP LOCKED) e
     WHERE g.has_room),
reclaims AS (
    SELECT e.event_id, e.job_id, g.tenant_id, g.last_dispatch_at, e.holds_slot
      FROM tenant_turns g
      CROSS JOIN LATERAL (
          SELECT o.event_id, o.job_id, j.dispatched_at IS NOT NULL AS holds_slot
            FROM outbox o JOIN jobs j ON j.job_id = o.job_id
           WHERE o.tenant_id = g.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
             AND o.claimed_until IS NOT NULL AND o.claimed_until < CAST(:#now AS timestamptz) AND j.dispatched_at IS NOT NULL
           ORDER BY o.available_at, o.event_id
           LIMIT 1
           FOR UPDATE OF o SKIP LOCKED) e
     WHERE NOT g.has_room),
picked AS (
    SELECT * FROM (SELECT * FROM fresh UNION ALL SELECT * FROM reclaims) c
     ORDER BY c.last_dispatch_at NULLS FIRST, c.tenant_id
     LIMIT (SELECT free FROM room)),
claimed AS (
    UPDATE outbox o SET claimed_until = CAST(:#now AS timestamptz) + make_interval(secs => :#claimSeconds), claim_token = :#claimToken::uuid, claimed_by = :#claimOwner
      FROM picked p WHERE o.event_id = p.event_id
    RETURNING o.event_id, o.job_id, o.tenant_id),
slots AS (
    UPDATE jobs j SET dispatched_at = CAST(:#now AS timestamptz)
      FROM picked p WHERE j.job_id = p.job_id AND NOT p.holds_slot
    RETURNING j.tenant_id),
tenant_locks AS (
    SELECT a.tenant_id FROM tenant_accounts a
     WHERE a.tenant_id IN (SELECT tenant_id FROM picked) AND (SELECT count(*) FROM slots) >= 0
     ORDER BY a.tenant_id FOR UPDATE),
turns AS (
    UPDATE tenant_accounts a
       SET last_dispatch_at = CAST(:#now AS timestamptz),
           running_jobs = a.running_jobs + (SELECT count(*) FROM slots s WHERE s.tenant_id = a.tenant_id)
      FROM tenant_locks l WHERE a.tenant_id = l.tenant_id
    RETURNING a.tenant_id),
window_taken AS (
    UPDATE dispatch_window SET running = running + (SELECT count(*) FROM slots)
     WHERE id = 1 AND EXISTS (SELECT 1 FROM slots) AND (SELECT count(*) FROM turns) > 0)
SELECT c.event_id, c.job_id, c.tenant_id, j.attempts, j.preset_id, j.preset_version, j.kind, j.provider
  FROM claimed c JOIN jobs j ON j.job_id = c.job_id
 ORDER BY c.event_id
