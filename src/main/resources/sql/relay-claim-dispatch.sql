-- One fair relay round: at most :perTenant due dispatch events per tenant, taken in turns (every
-- tenant's first before anyone's second), only for tenants below their running limit and never past
-- it, tenants that waited longest first within a turn, within the global running window and, per
-- provider, within its max-concurrency (V30: a job dispatched to a full provider only comes back). Rounds of
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
-- Each provider's free calls: its max-concurrency ("name=limit,..." from the provider settings) less
-- its jobs dispatched and not yet past their call (V30: row 0 what rounds took, 1..16 releases).
-- A provider not named here is not limited by the relay (its worker's slot claim still is).
provider_room AS (
    SELECT split_part(l, '=', 1) AS provider,
           CAST(split_part(l, '=', 2) AS bigint)
             - coalesce((SELECT sum(w.running) FROM provider_window w WHERE w.provider = split_part(l, '=', 1)), 0) AS free
      FROM unnest(string_to_array(:#providerLimits, ',')) l),
-- The most events one tenant can have taken this round: the providers' free calls within the window's
-- room (the turns below give them out), at least one: a claim that holds its slot already ignores room
-- and must not wait for it. A hand-over round between waves (a few calls free, every tenant with a
-- backlog) locked each tenant's whole share (per-tenant, 8) to take the few the providers had room for.
take_bound AS (
    SELECT CAST(greatest(least((SELECT coalesce(sum(greatest(r.free, 0)), 0) FROM provider_room r), (SELECT free FROM room)), 1)
                AS bigint) AS most),
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
    SELECT c.tenant_id, c.last_dispatch_at, c.room > 0 AS has_room, least(greatest(c.room, 0), :#perTenant) AS takes,
           c.max_running_jobs - c.room AS running
      FROM (SELECT t.tenant_id, a.last_dispatch_at, t.max_running_jobs,
                   t.max_running_jobs - a.running_jobs
                     - (SELECT coalesce(sum(r.running_jobs), 0) FROM tenant_releases r WHERE r.tenant_id = a.tenant_id) AS room
              FROM turn CROSS JOIN waiting w JOIN tenants t ON t.tenant_id = w.tenant_id
              JOIN tenant_accounts a ON a.tenant_id = t.tenant_id
             WHERE turn.ours) c),
-- A tenant's oldest due events of providers with room (as many as it takes), looked for among its
-- 16 + :perTenant oldest due events only: a round costs the same whatever a tenant's backlog at a
-- full provider (a tenant whose oldest all wait for full providers waits a round or two). Ordered by
-- head's own columns, so the plan keeps the index's order and stops at the events it takes: ordered by
-- o's, every head event was joined to its job and sorted first (a round that took 4 jobs of ten tenants
-- with backlogs read 2,300 blocks; 880 in this order, 550 with each take bounded by take_bound).
fresh AS (
    SELECT e.event_id, e.job_id, g.tenant_id, g.last_dispatch_at, g.running, e.holds_slot, e.provider, e.available_at
      FROM tenant_turns g
      CROSS JOIN LATERAL (
          SELECT o.event_id, o.job_id, j.dispatched_at IS NOT NULL AS holds_slot, j.provider, o.available_at
            FROM (SELECT d.event_id, d.available_at FROM outbox d
                   WHERE d.tenant_id = g.tenant_id AND d.event_type = 'dispatch' AND d.published_at IS NULL
                     AND d.available_at <= CAST(:#now AS timestamptz) AND (d.claimed_until IS NULL OR d.claimed_until < CAST(:#now AS timestamptz))
                   ORDER BY d.available_at, d.event_id
                   LIMIT 16 + :#perTenant) head
            JOIN outbox o ON o.event_id = head.event_id
            JOIN jobs j ON j.job_id = o.job_id
           -- A full provider's events wait, but not one whose job holds its slot already (a claim that ran
           -- out, e.g. a round the broker refused in a failover): it is counted in the provider's running
           -- calls, and when such claims fill the provider, waiting for room would wait for ever.
           -- A final job's event is passed over: the one finalize deletes its job's waiting events, but a job
           -- ended behind its back (an operator's SQL) kept one, and taking its slot below (a write to a final
           -- job, refused by V4's trigger) failed every round of every tenant.
           WHERE j.finalized_at IS NULL
             AND (j.dispatched_at IS NOT NULL
                  OR NOT EXISTS (SELECT 1 FROM provider_room r WHERE r.provider = j.provider AND r.free <= 0))
           ORDER BY head.available_at, head.event_id
           LIMIT least(g.takes, (SELECT most FROM take_bound))
           FOR UPDATE OF o SKIP LOCKED) e
     WHERE g.has_room),
reclaims AS (
    SELECT e.event_id, e.job_id, g.tenant_id, g.last_dispatch_at, g.running, e.holds_slot, e.provider, e.available_at
      FROM tenant_turns g
      CROSS JOIN LATERAL (
          SELECT o.event_id, o.job_id, j.dispatched_at IS NOT NULL AS holds_slot, j.provider, o.available_at
            FROM outbox o JOIN jobs j ON j.job_id = o.job_id
           WHERE o.tenant_id = g.tenant_id AND o.event_type = 'dispatch' AND o.published_at IS NULL
             AND o.claimed_until IS NOT NULL AND o.claimed_until < CAST(:#now AS timestamptz) AND j.dispatched_at IS NOT NULL
             AND j.finalized_at IS NULL
           ORDER BY o.available_at, o.event_id
           LIMIT 1
           FOR UPDATE OF o SKIP LOCKED) e
     WHERE NOT g.has_room),
-- Within the window, and per provider within its free calls (a claim that already holds its slot
-- is counted already), in turns: every tenant's first event (tenants that waited longest first),
-- then every tenant's second, ... `place` is the order the messages go out in. `tenant_ahead`: the
-- tenant's jobs dispatched and not yet ended when its message goes out (its message priority).
candidates AS (
    SELECT u.*, row_number() OVER (PARTITION BY u.tenant_id ORDER BY u.available_at, u.event_id) AS turn_of_tenant
      FROM (SELECT * FROM fresh UNION ALL SELECT * FROM reclaims) u),
picked AS (
    SELECT c.event_id, c.job_id, c.tenant_id, c.last_dispatch_at, c.holds_slot, c.provider,
           c.running + c.turn_of_tenant - 1 AS tenant_ahead,
           row_number() OVER (ORDER BY c.turn_of_tenant, c.last_dispatch_at NULLS FIRST, c.tenant_id) AS place
      FROM (SELECT v.*, row_number() OVER (PARTITION BY v.provider, v.holds_slot
                                ORDER BY v.turn_of_tenant, v.last_dispatch_at NULLS FIRST, v.tenant_id) AS nth
              FROM candidates v) c
      LEFT JOIN provider_room r ON r.provider = c.provider
     WHERE c.holds_slot OR r.free IS NULL OR c.nth <= r.free
     -- The window's free room limits new slots only: claims that hold theirs come first and on top of it
     -- (counted in the window already; a window full of them would otherwise never publish them).
     -- `place` above keeps the order the messages go out in.
     ORDER BY c.holds_slot DESC, c.turn_of_tenant, c.last_dispatch_at NULLS FIRST, c.tenant_id
     LIMIT (SELECT free FROM room) + (SELECT count(*) FROM candidates WHERE holds_slot)),
claimed AS (
    UPDATE outbox o SET claimed_until = CAST(:#now AS timestamptz) + make_interval(secs => :#claimSeconds), claim_token = :#claimToken::uuid, claimed_by = :#claimOwner
      FROM picked p WHERE o.event_id = p.event_id
    RETURNING o.event_id, o.job_id, o.tenant_id),
slots AS (
    UPDATE jobs j SET dispatched_at = CAST(:#now AS timestamptz)
      FROM picked p WHERE j.job_id = p.job_id AND NOT p.holds_slot
    RETURNING j.tenant_id, j.provider),
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
     WHERE id = 1 AND EXISTS (SELECT 1 FROM slots) AND (SELECT count(*) FROM turns) > 0
    RETURNING id),
-- Last: the providers' rows 0, which only relay rounds lock (one round at a time).
providers_taken AS (
    INSERT INTO provider_window AS w (provider, shard, running)
    SELECT s.provider, 0, count(*) FROM slots s WHERE (SELECT count(*) FROM window_taken) > 0 GROUP BY s.provider
    ON CONFLICT (provider, shard) DO UPDATE SET running = w.running + EXCLUDED.running)
-- The job's stored request goes with its message (the worker starts from it without reading the job again; its
-- start's guard, the dispatch event and the attempts, says whether the job is still as it was read here).
SELECT c.event_id, c.job_id, c.tenant_id, j.attempts, j.preset_id, j.preset_version, j.kind, j.provider, p.tenant_ahead,
       j.aspect_class, j.inputs::text AS inputs, j.source_key, j.source_sha256, j.correlation_id,
       coalesce((SELECT u.media_type FROM uploads u WHERE u.upload_id = j.upload_id),
                CASE WHEN j.parent_job_id IS NOT NULL THEN 'application/json' END) AS source_media_type,
       j.max_attempts, j.expires_at, j.unparseable_streak, j.pool, j.source_bytes
  FROM claimed c JOIN jobs j ON j.job_id = c.job_id JOIN picked p ON p.event_id = c.event_id
 ORDER BY p.place
