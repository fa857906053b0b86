-- Status events for followers of jobs.events: no fairness needed, oldest first, in bulk.
WITH picked AS (
    SELECT event_id FROM outbox
     WHERE event_type = 'status' AND published_at IS NULL AND available_at <= CAST(:#now AS timestamptz)
       AND (claimed_until IS NULL OR claimed_until < CAST(:#now AS timestamptz))
     ORDER BY event_id
     LIMIT :#statusBatch
     FOR UPDATE SKIP LOCKED),
claimed AS (
    UPDATE outbox o SET claimed_until = CAST(:#now AS timestamptz) + make_interval(secs => :#claimSeconds), claim_token = :#claimToken::uuid, claimed_by = :#claimOwner
      FROM picked p WHERE o.event_id = p.event_id
    -- The payload's members as columns: the relay builds each message without parsing JSON.
    RETURNING o.event_id, o.job_id, o.tenant_id, coalesce(o.payload->>'status', '') AS status,
              coalesce((o.payload->>'attempt')::int, 0) AS attempt, o.payload->>'error_category' AS error_category,
              o.created_at)
SELECT * FROM claimed ORDER BY event_id
