-- Only after the broker accepted the message; a claim lost meanwhile marks nothing (the event is
-- published again: at least once, and the broker's duplicate detection drops the copy).
UPDATE outbox SET published_at = now(), claimed_until = NULL
 WHERE event_id = :#eventId AND claim_token = :#claimToken::uuid
