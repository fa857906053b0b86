-- Only after the broker committed the round's messages; a claim lost meanwhile marks nothing (the
-- event is published again: at least once; consumers deduplicate by job id).
UPDATE outbox SET published_at = CAST(:#now AS timestamptz), claimed_until = NULL
 WHERE event_id = ANY (:#eventIds::bigint[]) AND claim_token = :#claimToken::uuid
